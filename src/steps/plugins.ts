import type { Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { ensureDirRecorded } from '../pipeline/files.js';
import { recordProgramFiles } from '../pipeline/manifest.js';
import { installAfresh, packageState, type PackageState } from './package-files.js';
import { GLOBAL_MODULES, PLUGIN_PREFIX, installedPackageVersion, losslessClawFiles, npm, qmdFiles } from '../runtime/openclaw.js';

/**
 * QMD memory. OpenClaw removed its QMD memory backend in 2026.8.1 (builtin memory is
 * the only engine now), so QMD is installed as its own program and wired into the
 * agent as an MCP server (`qmd mcp`, see runtime-config), which the pinned OpenClaw
 * supports. docs/components.md has the details.
 */
export const memoryStep: Step = {
  id: 'memory',
  title: 'Memory daemon (QMD, as an MCP server)',
  async check({ host, components }) {
    const have = await installedPackageVersion(host, GLOBAL_MODULES, components.qmd.package);
    const state = await packageState(host, have, components.qmd.version, qmdFiles(components.qmd.package));
    if (!state.install) return { changes: [] };
    const summary = state.damaged ? `reinstall QMD ${have}: ${state.damaged}` : have ? `QMD ${have} -> ${components.qmd.version}` : `install QMD ${components.qmd.version}`;
    return { changes: [{ target: components.qmd.package, summary }], notify: ['gateway-restart'], data: state };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    ctx.progress(`npm install ${components.sources.qmdSpec}`);
    await installAfresh(host, `${GLOBAL_MODULES}/${components.qmd.package}`, Boolean((plan.data as PackageState).damaged), async () => {
      await npm(host, [
        'install', '--global', '--prefix', host.paths.real(LAYOUT.nodePrefix), '--no-audit', '--no-fund',
        '--allow-scripts=better-sqlite3,node-llama-cpp', components.sources.qmdSpec,
      ]);
    });
    await recordProgramFiles(host, qmdFiles(components.qmd.package));
  },
  async verify({ host, components }) {
    const have = await installedPackageVersion(host, GLOBAL_MODULES, components.qmd.package);
    if (have !== components.qmd.version) throw new Error(`QMD ${have ?? 'missing'} after install, expected ${components.qmd.version}`);
  },
};

/**
 * The lossless-claw context engine plugin, installed with npm into a prefix of ours
 * and loaded through plugins.load.paths (runtime-config). `openclaw plugins install`
 * would rewrite openclaw.json behind our back; this way the config has one writer.
 */
export const contextEngineStep: Step = {
  id: 'context-engine',
  title: 'Context engine (lossless-claw plugin)',
  async check({ host, components }) {
    const have = await installedPackageVersion(host, `${PLUGIN_PREFIX}/node_modules`, components.losslessClaw.package);
    const state = await packageState(host, have, components.losslessClaw.version, losslessClawFiles(components.losslessClaw.package));
    if (!state.install) return { changes: [] };
    const summary = state.damaged ? `reinstall lossless-claw ${have}: ${state.damaged}` : have ? `lossless-claw ${have} -> ${components.losslessClaw.version}` : `install lossless-claw ${components.losslessClaw.version}`;
    return { changes: [{ target: components.losslessClaw.package, summary }], notify: ['gateway-restart'], data: state };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    await ensureDirRecorded(host, PLUGIN_PREFIX, 0o755);
    // npm wants a package.json in the prefix (and then adds the dependency to it itself).
    if (!(await host.files.exists(`${PLUGIN_PREFIX}/package.json`))) {
      await host.files.write(`${PLUGIN_PREFIX}/package.json`, '{ "name": "service-deploy-plugins", "private": true }\n', { mode: 0o644 });
    }
    ctx.progress(`npm install ${components.sources.losslessClawSpec}`);
    await installAfresh(host, `${PLUGIN_PREFIX}/node_modules/${components.losslessClaw.package}`, Boolean((plan.data as PackageState).damaged), async () => {
      await npm(host, ['install', '--prefix', host.paths.real(PLUGIN_PREFIX), '--no-audit', '--no-fund', '--omit=peer', components.sources.losslessClawSpec]);
    });
    await recordProgramFiles(host, losslessClawFiles(components.losslessClaw.package));
  },
  async verify({ host, components }) {
    const have = await installedPackageVersion(host, `${PLUGIN_PREFIX}/node_modules`, components.losslessClaw.package);
    if (have !== components.losslessClaw.version) throw new Error(`lossless-claw ${have ?? 'missing'} after install`);
  },
};

export function losslessClawDir(packageName: string): string {
  return `${PLUGIN_PREFIX}/node_modules/${packageName}`;
}
