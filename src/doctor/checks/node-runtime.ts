import { versionBelow } from '../../host/os.js';
import { LAYOUT } from '../../layout.js';
import { fail, pass, type Check } from '../types.js';
import { filesFix } from './files.js';

export const nodeRuntimeCheck: Check = {
  id: 'node-runtime',
  title: 'Node.js for the runtime',
  async run(ctx) {
    const { host, components } = ctx;
    const want = components.node.version;
    const node = `${LAYOUT.nodePrefix}/bin/node`;
    const fix = `run \`service-deploy install\`: it puts Node ${want} into ${LAYOUT.nodePrefix} (the system's node is never used)`;
    if (!(await host.files.exists(node))) return fail(`${node} is missing`, fix, { commands: ['service-deploy install'] });
    // The version the install verified, while the binary is that very file; else run it (once: the report's versions share it).
    const { version: have, run: result } = await ctx.nodeVersion();
    if (have !== want) {
      // Only its mode changed (recorded in the install manifest): doctor --fix gives it back.
      const byFiles = !have && (await ctx.repairedByFiles(node)) && (await ctx.issuesFor(node)).every((i) => i.repair?.kind === 'chmod' || i.repair?.kind === 'chown');
      // Below the pin: a server an older service-deploy left (Node 24.21.0 before 26.12.1),
      // without the security fixes the pin was raised for; the install upgrades it.
      const below = have !== undefined && versionBelow(have, want);
      const upgrade = `run \`service-deploy install\`: it upgrades Node to ${want} (a verified backup first, the old Node kept for \`service-deploy rollback\`, rolled back by itself on a failure)`;
      const what = have ? (below ? `Node ${have}, below the pinned ${want} (it lacks the fixes of the pinned release)` : `Node ${have}, not the pinned ${want}`) : `not runnable (${result?.stderr.trim().split('\n').pop() || `exit ${result?.exitCode}`}), expected Node ${want}`;
      return fail(`${node} is ${what}`, byFiles ? 'give it back its recorded mode (doctor --fix)' : below ? upgrade : fix, {
        commands: byFiles ? ['service-deploy doctor --fix'] : ['service-deploy install'],
        ...(byFiles ? { action: filesFix } : {}),
      });
    }
    return pass(`Node ${have}`);
  },
};
