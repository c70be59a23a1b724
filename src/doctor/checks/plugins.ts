import type { Host } from '../../host/index.js';
import { LAYOUT } from '../../layout.js';
import { installedFilesProblem } from '../../pipeline/manifest.js';
import { planFile } from '../../pipeline/files.js';
import { PLUGIN_PREFIX, installedPackageVersion, losslessClawFiles, qmdFiles, type ProgramFiles } from '../../runtime/openclaw.js';
import { pluginFiles } from '../../steps/channel.js';
import { fail, pass, type Check } from '../types.js';
import { filesFix } from './files.js';

/** "QMD 2.8.2 is installed, pinned 2.8.3", "... is not installed", or a missing file; undefined when fine. */
async function programProblem(host: Host, label: string, nodeModules: string, name: string, want: string, files: ProgramFiles): Promise<string | undefined> {
  const have = await installedPackageVersion(host, nodeModules, name);
  if (have === undefined) return `${label} (${name}) is not installed`;
  if (have !== want) return `${label} ${have} is installed, this service-deploy pins ${want}`;
  const missing = await installedFilesProblem(host, files.required, []);
  return missing ? `${label} ${have}: ${missing}` : undefined;
}

/**
 * The agent's add-ons: QMD (memory, an MCP server) and lossless-claw (context engine)
 * at their pinned versions with the files they run from, and the service-channel
 * plugin's files as the install writes them (where the channel is configured).
 */
export const pluginsCheck: Check = {
  id: 'plugins',
  title: 'QMD, lossless-claw and the channel plugin as pinned',
  async run(ctx) {
    const { host, components } = ctx;
    const [qmd, lossless, channel] = await Promise.all([
      programProblem(host, 'QMD', `${LAYOUT.qmdPrefix}/node_modules`, components.qmd.package, components.qmd.version, qmdFiles(components.qmd.package)),
      programProblem(host, 'lossless-claw', `${PLUGIN_PREFIX}/node_modules`, components.losslessClaw.package, components.losslessClaw.version, losslessClawFiles(components.losslessClaw.package)),
      ctx.channelConfigured(),
    ]);
    const programs = [qmd, lossless].filter((p): p is string => p !== undefined);
    const files = channel ? (await Promise.all(pluginFiles().map((f) => planFile(host, f)))).filter((c) => c !== undefined) : [];
    if (programs.length === 0 && files.length === 0) {
      return pass(`QMD ${components.qmd.version}, lossless-claw ${components.losslessClaw.version}${channel ? ', service-channel plugin files as written' : ''}`);
    }
    const problems = [...programs, ...files.map((c) => `service-channel plugin: ${c!.summary}`)];
    if (programs.length > 0) {
      return fail(problems.join('; '), 'run the install again: it installs the pinned versions (and reinstalls a package whose files are missing or changed)', { commands: ['service-deploy install'] });
    }
    const byFiles = await ctx.repairedByFiles(...files.map((c) => c!.target));
    return fail(problems.join('; '), 'write the plugin files again as the install does, then restart the gateway so it loads them', {
      commands: byFiles ? ['service-deploy doctor --fix'] : ['service-deploy install --channel'],
      ...(byFiles ? { action: filesFix } : {}),
    });
  },
};
