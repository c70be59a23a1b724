import { LAYOUT } from '../../layout.js';
import { stampedNodeVersion } from '../../steps/node-runtime.js';
import { fail, pass, type Check } from '../types.js';

export const nodeRuntimeCheck: Check = {
  id: 'node-runtime',
  title: 'Node.js for the runtime',
  async run(ctx) {
    const { host, components } = ctx;
    const want = components.node.version;
    const node = `${LAYOUT.nodePrefix}/bin/node`;
    const fix = `run \`service-deploy install\`: it puts Node ${want} into ${LAYOUT.nodePrefix} (the system's node is never used)`;
    if (!(await host.files.exists(node))) return fail(`${node} is missing`, fix, { commands: ['service-deploy install'] });
    // The version the install verified, while the binary is that very file; else run it.
    const stamped = await stampedNodeVersion(host);
    const result = stamped === undefined ? await host.exec.run(host.paths.real(node), ['--version'], { allowFailure: true, timeoutMs: 20_000 }) : undefined;
    const have = stamped ?? (result?.exitCode === 0 ? result.stdout.trim().replace(/^v/, '') : undefined);
    if (have !== want) {
      // Only its mode changed (recorded in the install manifest): doctor --fix gives it back.
      const byFiles = !have && (await ctx.repairedByFiles(node)) && (await ctx.issuesFor(node)).every((i) => i.repair?.kind === 'chmod' || i.repair?.kind === 'chown');
      return fail(`${node} is ${have ? `Node ${have}` : `not runnable (${result?.stderr.trim().split('\n').pop() || `exit ${result?.exitCode}`})`}, expected ${want}`, byFiles ? 'give it back its recorded mode (doctor --fix)' : fix, {
        commands: byFiles ? ['service-deploy doctor --fix'] : ['service-deploy install'],
        ...(byFiles ? { action: 'files' as const } : {}),
      });
    }
    return pass(`Node ${have}`);
  },
};
