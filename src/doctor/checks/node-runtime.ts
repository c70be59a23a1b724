import { LAYOUT } from '../../layout.js';
import { fail, pass, type Check } from '../types.js';

export const nodeRuntimeCheck: Check = {
  id: 'node-runtime',
  title: 'Node.js for the runtime',
  async run({ host, components }) {
    const want = components.node.version;
    const node = `${LAYOUT.nodePrefix}/bin/node`;
    const fix = `run \`service-deploy install\`: it puts Node ${want} into ${LAYOUT.nodePrefix} (the system's node is never used)`;
    if (!(await host.files.exists(node))) return fail(`${node} is missing`, fix, { commands: ['service-deploy install'] });
    const result = await host.exec.run(host.paths.real(node), ['--version'], { allowFailure: true, timeoutMs: 20_000 });
    const have = result.exitCode === 0 ? result.stdout.trim().replace(/^v/, '') : undefined;
    if (have !== want) return fail(`${node} is ${have ? `Node ${have}` : `not runnable (${result.stderr.trim().split('\n').pop() ?? `exit ${result.exitCode}`})`}, expected ${want}`, fix, { commands: ['service-deploy install'] });
    return pass(`Node ${have}`);
  },
};
