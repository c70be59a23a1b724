// The README's main job on a development machine: deploy into a sandbox folder
// (SERVICE_DEPLOY_ROOT) with loopback stand-ins for what a dev box does not have
// (apt, systemd, the mesh client, the service's MCP, a running gateway), then re-run
// to show convergence and a model update. Nothing outside the sandbox is touched.
import { execa } from 'execa';
import { BINARY } from '../test/helpers/binary.js';
import { SECRETS, makeSandbox } from '../test/helpers/sandbox.js';
import { cleanupTempDirs } from '../test/helpers/tmp.js';

const sb = await makeSandbox();
const run = async (title: string, args: string[], env: Record<string, string> = {}) => {
  process.stdout.write(`\n=== ${title}\n$ service-deploy ${args.join(' ')}\n`);
  const result = await execa(BINARY, args, { env: sb.env(env), extendEnv: false, stdio: 'inherit', reject: false });
  if (result.exitCode !== 0) throw new Error(`${title}: exit ${result.exitCode}`);
};
try {
  await run('1. fresh install (answers from flags and env)', ['install', '--customer-name', 'Demo Dental', '--non-interactive'], {
    SERVICE_API_KEY: SECRETS.apiKey,
    SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey,
    SERVICE_MCP_TOKEN: SECRETS.mcpToken,
  });
  await run('2. re-run: nothing to do', ['install', '--non-interactive']);
  await run('3. re-run with a new model: plan first', ['install', '--model', 'demo-model-2', '--non-interactive', '--check']);
  await run('4. apply the model change (one gateway restart)', ['install', '--model', 'demo-model-2', '--non-interactive']);
  await run('5. the runtime config as deployed (secrets masked)', ['render', 'runtime-config']);
  process.stdout.write(`\nDemo finished: the sandbox root was ${sb.root}\n`);
} finally {
  await sb.close();
  if (!process.env.DEMO_KEEP) cleanupTempDirs();
  else process.stdout.write(`kept: ${sb.root} (DEMO_KEEP=1)\n`);
}
