#!/usr/bin/env node
// Operations benchmarks, as ratios to `service-deploy --version` measured in the same run:
//   doctor on a healthy sandbox   target <= 10x
//   a no-op guard                 target <= 5x
// The sandbox is a SERVICE_DEPLOY_ROOT folder with the test stand-ins on PATH
// (test/helpers/standins); it is made healthy by the tools themselves: a first
// `guard` restores the routing and the channel drop-in, `doctor --fix` writes the
// cron entry and the nginx site, then `doctor` must pass before anything is timed.
// Usage: node scripts/bench-ops.mjs [--json]   (BENCH_ROUNDS, default 15)
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const binary = path.join(repo, 'dist/service-deploy');
const standins = path.join(repo, 'test/helpers/standins');
const rounds = Number(process.env.BENCH_ROUNDS ?? 15);
if (!fs.existsSync(binary)) {
  console.error('dist/service-deploy is missing: run `npm run build` first');
  process.exit(1);
}

const components = JSON.parse(fs.readFileSync(path.join(repo, 'templates/components.json'), 'utf8'));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-bench-ops-'));
const root = path.join(work, 'root');
const state = path.join(work, 'state');
const bin = path.join(work, 'bin');
for (const dir of [root, state, bin]) fs.mkdirSync(dir);

function put(p, content, mode = 0o644) {
  const real = path.join(root, p);
  fs.mkdirSync(path.dirname(real), { recursive: true });
  fs.writeFileSync(real, content);
  fs.chmodSync(real, mode);
}

const health = http.createServer((req, res) => res.writeHead(req.url === '/healthz' ? 200 : 404).end('{"ok":true}'));
await new Promise((resolve) => health.listen(0, '127.0.0.1', resolve));

const env = {
  PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`,
  HOME: process.env.HOME ?? '/tmp',
  SERVICE_DEPLOY_ROOT: root,
  STANDIN_LOG: path.join(state, 'calls.log'),
  STANDIN_STATE: state,
  SERVICE_AI_GATEWAY_URL: 'http://127.0.0.1:9/v1',
  SERVICE_MCP_URL: 'http://127.0.0.1:9/mcp',
  SERVICE_HEALTH_URL: `http://127.0.0.1:${health.address().port}/healthz`,
};
const sd = (args) => run(binary, args, { env, maxBuffer: 1 << 24 });

let gatewayPid;
try {
  // --- the server, as an install leaves it (the routing parts deliberately left wrong) ---
  for (const f of fs.readdirSync(standins)) if (!['node', 'npm', 'openclaw'].includes(f)) fs.copyFileSync(path.join(standins, f), path.join(bin, f));
  fs.writeFileSync(env.STANDIN_LOG, '');
  put('/etc/os-release', 'ID=ubuntu\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\nPRETTY_NAME="Ubuntu 24.04 LTS"\n');
  const answers = { customerName: 'Bench', apiKey: 'pkt_bench_0123456789abcdef', modelId: 'bench-model', meshHostname: 'openclaw-bench', mcpToken: 'mcp_bench_0123456789' };
  put('/var/lib/service-deploy/answers.json', JSON.stringify(answers), 0o600);
  put('/root/.openclaw/openclaw.json', JSON.stringify({ gateway: { mode: 'local', port: 18789, token: answers.apiKey }, models: { providers: { openai: { baseUrl: 'https://api.openai.com/v1' } } } }), 0o600);
  for (const f of ['node', 'openclaw', '_lib.sh']) put(`/opt/service-deploy/node/bin/${f}`, fs.readFileSync(path.join(standins, f)), 0o755);
  put('/opt/service-deploy/node/lib/node_modules/openclaw/package.json', JSON.stringify({ name: 'openclaw', version: components.openclaw.version }));
  put('/opt/service-deploy/node/lib/node_modules/openclaw/openclaw.mjs', '');
  put(`/opt/service-deploy/node/lib/node_modules/${components.qmd.package}/package.json`, JSON.stringify({ name: components.qmd.package, version: components.qmd.version }));
  put('/opt/service-deploy/node/bin/qmd', '#!/bin/sh\n', 0o755);
  put(`/opt/service-deploy/plugins/node_modules/${components.losslessClaw.package}/package.json`, JSON.stringify({ name: components.losslessClaw.package, version: components.losslessClaw.version }));
  put('/root/.config/systemd/user/openclaw-gateway.service', '[Service]\n');
  put('/var/lib/systemd/linger/root', '');
  put('/usr/local/bin/service-deploy', '#!/bin/sh\n', 0o755);
  put('/root/.openclaw/channel.env', 'SERVICE_CHANNEL_TOKEN=chan_bench_tok_0123456789abcdef\nSERVICE_CHANNEL_KNOCK=chan_bench_knock_0123456789abcd\nSERVICE_TS_HOSTNAME=openclaw-bench\n', 0o600);
  const tls = path.join(work, 'tls');
  fs.mkdirSync(tls);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:4096', '-nodes', '-sha256', '-days', '3653', '-subj', '/CN=openclaw-bench', '-keyout', `${tls}/k`, '-out', `${tls}/c`], { stdio: 'ignore' });
  put('/etc/service-deploy/tls/channel.crt', fs.readFileSync(`${tls}/c`));
  put('/etc/service-deploy/tls/channel.key', fs.readFileSync(`${tls}/k`), 0o600);
  fs.writeFileSync(path.join(state, 'dpkg-installed'), ['tailscale', ...components.systemPackages, components.browser.ubuntu.package, ''].join('\n'));
  fs.writeFileSync(path.join(state, 'system-cron.active'), '');
  fs.writeFileSync(path.join(state, 'ts-up'), 'openclaw-bench\n');
  fs.writeFileSync(path.join(state, 'ts-serve'), 'http://127.0.0.1:18789\n');
  fs.writeFileSync(path.join(state, 'gateway-process'), '');
  fs.writeFileSync(path.join(state, 'user-openclaw-gateway.service.enabled'), '');
  fs.writeFileSync(path.join(state, 'ss-output'), 'LISTEN 0 511 127.0.0.1:18789 0.0.0.0:* users:(("openclaw-gatewa",pid=1,fd=3))\nLISTEN 0 511 0.0.0.0:18790 0.0.0.0:* users:(("nginx",pid=2,fd=6))\n');

  // --- the tools make it healthy ---
  await sd(['guard']);
  await sd(['doctor', '--fix']).catch(() => undefined);
  const check = await sd(['doctor', '--json']).catch((error) => error);
  const report = JSON.parse(check.stdout);
  if (!report.ok || report.summary.pass !== report.checks.length) {
    throw new Error(`the bench sandbox is not healthy:\n${report.checks.filter((c) => c.status !== 'pass').map((c) => `  ${c.id}: ${c.status} ${c.message}`).join('\n')}`);
  }
  gatewayPid = Number(fs.readFileSync(path.join(state, 'user-openclaw-gateway.service.realpid'), 'utf8'));
  const restarts = () => fs.readFileSync(env.STANDIN_LOG, 'utf8').split('\n').filter((l) => l.startsWith('systemctl') && l.includes('restart')).length;
  const setupRestarts = restarts();
  const noop = await sd(['guard', '--json']);
  if (JSON.parse(noop.stdout).changed) throw new Error('the second guard run was not a no-op');

  // --- timings, interleaved round by round ---
  const cases = { '--version': ['--version'], doctor: ['doctor'], 'guard (no-op)': ['guard'] };
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, args] of Object.entries(cases)) {
      const start = process.hrtime.bigint();
      await sd(args);
      times[name].push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
  if (restarts() > setupRestarts) throw new Error(`a no-op guard restarted the gateway (${restarts() - setupRestarts} restarts logged)`);

  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const base = median(times['--version']);
  const rows = [
    ['doctor (healthy) / --version', median(times.doctor), 10],
    ['guard (no-op) / --version', median(times['guard (no-op)']), 5],
  ].map(([what, ms, target]) => ({ what, ratio: Number((ms / base).toFixed(2)), target, ok: ms / base <= target, detail: `${ms.toFixed(1)} ms vs ${base.toFixed(1)} ms` }));
  console.log(`service-deploy operations benchmarks (${rounds} rounds, medians, ratios from this run)`);
  for (const r of rows) console.log(`${r.ok ? 'ok  ' : 'SLOW'} ${r.what.padEnd(40)} ${String(r.ratio).padStart(6)}x  (target <= ${r.target}x; ${r.detail})`);
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
  process.exitCode = rows.every((r) => r.ok) ? 0 : 1;
} finally {
  if (gatewayPid) {
    try {
      process.kill(gatewayPid);
    } catch {
      // already gone
    }
  }
  health.close();
  fs.rmSync(work, { recursive: true, force: true });
}
