// The README's main job on a development machine: deploy into a sandbox folder
// (SERVICE_DEPLOY_ROOT) with loopback stand-ins for what a dev box does not have
// (apt, systemd, the mesh client, the service's MCP and AI gateway, a running gateway),
// then re-run to show convergence and a model update. Nothing outside the sandbox is
// touched.
//
// `npm run demo -- --keep` (or DEMO_KEEP=1) keeps the sandbox afterwards with its
// stand-ins running in this process, and prints the lines to use it from another
// terminal; Ctrl-C (or SIGTERM) then stops the stand-ins and removes the sandbox.
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { BINARY } from '../test/helpers/binary.js';
import { SECRETS, makeSandbox, type Sandbox } from '../test/helpers/sandbox.js';
import { cleanupTempDirs } from '../test/helpers/tmp.js';

const keep = process.argv.includes('--keep') || Boolean(process.env.DEMO_KEEP);
const unknown = process.argv.slice(2).filter((arg) => arg !== '--keep');
if (unknown.length > 0) {
  process.stderr.write(`demo: unknown argument ${unknown.join(' ')} (the only one is --keep)\n`);
  process.exit(2);
}

/** One word as a POSIX shell reads it: quoted only when it needs to be. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

const sb = await makeSandbox();
const run = async (title: string, args: string[], env: Record<string, string> = {}) => {
  process.stdout.write(`\n=== ${title}\n$ service-deploy ${args.map(shellWord).join(' ')}\n`);
  const result = await execa(BINARY, args, { env: sb.env(env), extendEnv: false, stdio: 'inherit', reject: false });
  if (result.exitCode !== 0) throw new Error(`${title}: exit ${result.exitCode}`);
};

/**
 * `<state>/service-deploy`: the binary with this sandbox's variables (its root, the
 * stand-in commands first on PATH, the stand-ins' URLs), so another terminal can use the
 * kept sandbox without changing its own environment.
 */
function writeWrapper(sandbox: Sandbox): string {
  const base = process.env;
  const own = Object.entries(sandbox.env()).filter(([name, value]) => name !== 'PATH' && base[name] !== value);
  const binDir = sandbox.env().PATH!.split(':')[0]!;
  const wrapper = path.join(sandbox.state, 'service-deploy');
  const lines = [
    '#!/bin/sh',
    '# service-deploy in the demo sandbox (npm run demo -- --keep): its stand-ins run in the demo process.',
    '# Answers and endpoints of this shell (SERVICE_*) would point elsewhere: only the sandbox\'s count.',
    'for name in $(env | sed -n \'s/^\\(SERVICE_[A-Z0-9_]*\\)=.*/\\1/p\'); do unset "$name"; done',
    ...own.map(([name, value]) => `export ${name}=${shellWord(value)}`),
    `export PATH=${shellWord(binDir)}:"$PATH"`,
    `exec ${shellWord(BINARY)} "$@"`,
    '',
  ];
  fs.writeFileSync(wrapper, lines.join('\n'), { mode: 0o700 });
  return wrapper;
}

/** Until Ctrl-C or SIGTERM: the stand-ins' servers do not hold the process open by themselves. */
function untilStopped(): Promise<string> {
  return new Promise((resolve) => {
    const hold = setInterval(() => {}, 1 << 30);
    // `on`, not `once`: Ctrl-C reaches this process twice (from the terminal and from
    // demo.mjs), and the second must not kill it half-way through its cleanup.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        clearInterval(hold);
        resolve(signal);
      });
    }
  });
}

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
  if (!keep) {
    process.stdout.write(`\nDemo finished: the sandbox root was ${sb.root} (removed). To keep it and its stand-ins running: npm run demo -- --keep\n`);
  } else {
    const wrapper = writeWrapper(sb);
    process.stdout.write(
      [
        '',
        `Demo finished; the sandbox is kept and its stand-ins run until you press Ctrl-C here (that removes the sandbox).`,
        `Its files: ${sb.root}`,
        'In another terminal (the commands it runs, systemctl, apt-get, tailscale..., are the stand-ins):',
        `  ${shellWord(wrapper)} status`,
        `  ${shellWord(wrapper)} doctor`,
        `  ${shellWord(wrapper)} install --channel --non-interactive`,
        `  ${shellWord(wrapper)} channel show`,
        `  ${shellWord(wrapper)} install --model demo-model-3 --non-interactive --diff`,
        '',
      ].join('\n'),
    );
    const signal = await untilStopped();
    process.stdout.write(`\n${signal}: stopping the stand-ins and removing the sandbox\n`);
  }
} finally {
  await sb.close();
  cleanupTempDirs();
}
