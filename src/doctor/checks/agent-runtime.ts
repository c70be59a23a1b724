import { Inspector } from '../../host/inspect.js';
import { LAYOUT } from '../../layout.js';
import path from 'node:path';
import { octal, planFile } from '../../pipeline/files.js';
import { installedFilesProblem } from '../../pipeline/manifest.js';
import { openclawFiles } from '../../runtime/openclaw.js';
import { currentLinkTarget, layoutOf, livePackageDir, packageVersionAt } from '../../runtime/openclaw-place.js';
import { openclawWrapper } from '../../steps/agent-runtime.js';
import { fail, pass, type Check } from '../types.js';
import { filesFix } from './files.js';

/**
 * OpenClaw at the pinned version, run from its locked project (not the global install
 * of an earlier release), and its CLI usable: the package's entry through the link the
 * unit runs it by (executable), and /usr/local/bin/openclaw. A
 * running gateway keeps answering when the CLI is gone, so health cannot tell.
 */
export const agentRuntimeCheck: Check = {
  id: 'agent-runtime',
  title: 'Agent runtime installed at the pinned version, CLI present',
  async run(ctx) {
    const { host, components } = ctx;
    const { package: name, version: want } = components.openclaw;
    const live = await livePackageDir(host, name);
    const have = live ? await packageVersionAt(host, live) : undefined;
    if (have !== want) {
      return fail(
        have ? `OpenClaw ${have} is installed, this service-deploy pins ${want}` : 'OpenClaw is not installed',
        `run \`service-deploy install\`: it installs OpenClaw ${want} and restarts the gateway`,
        { commands: ['service-deploy install'] },
      );
    }
    if (live && layoutOf(live) === 'global') {
      return fail(`OpenClaw ${have} runs from the global install of an earlier release (${live}), not from this release's lock`, 'run `service-deploy install`: it installs the locked tree into its own folder and moves the gateway to it; the agent\'s state stays', { commands: ['service-deploy install'] });
    }
    const linked = await host.files.readLink(LAYOUT.openclawCurrent);
    if (live && linked !== currentLinkTarget(live)) {
      return fail(
        `${LAYOUT.openclawCurrent} ${linked === undefined ? 'is missing' : `points at ${linked}`}: the gateway's unit and the openclaw command run OpenClaw through it (${live})`,
        'run `service-deploy install`: it points the link at the installed project again (a running gateway keeps answering until its next restart)',
        { commands: ['service-deploy install'] },
      );
    }
    const cli = await installedFilesProblem(host, openclawFiles(name).required, []);
    if (cli) return fail(`the OpenClaw CLI is broken: ${cli}`, 'run the install again: it reinstalls OpenClaw when a file it runs from is missing or changed', { commands: ['service-deploy install'] });
    // What `openclaw` runs: the npm link's target (or a plain file), which must be executable.
    const inspector = new Inspector(host.paths);
    const bin = await inspector.info(LAYOUT.openclawBin);
    const runs = bin?.type === 'symlink' ? path.posix.resolve(path.posix.dirname(LAYOUT.openclawBin), bin.target!) : LAYOUT.openclawBin;
    const target = await inspector.info(runs);
    if (target && (target.mode & 0o111) === 0) {
      const byFiles = await ctx.repairedByFiles(runs);
      return fail(`the OpenClaw CLI ${runs} is not executable (mode ${octal(target.mode)})`, 'give it back its mode (doctor --fix), or run the install again', {
        commands: byFiles ? ['service-deploy doctor --fix'] : [`chmod 755 ${runs}`],
        ...(byFiles ? { action: filesFix } : {}),
      });
    }
    const wrapper = await planFile(host, openclawWrapper());
    if (wrapper) {
      const byFiles = await ctx.repairedByFiles(LAYOUT.openclawWrapper);
      return fail(`${wrapper.summary}: \`openclaw ...\` on the command line does not run the pinned runtime`, 'write the wrapper again (doctor --fix or the install)', {
        commands: byFiles ? ['service-deploy doctor --fix'] : ['service-deploy install'],
        ...(byFiles ? { action: filesFix } : {}),
      });
    }
    return pass(`OpenClaw ${have}; CLI ${LAYOUT.openclawWrapper} -> ${LAYOUT.openclawBin}`);
  },
};
