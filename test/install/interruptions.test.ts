import { execa } from 'execa';
import fs from 'node:fs';
import https from 'node:https';
import zlib from 'node:zlib';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { budget, waitUntil } from '../helpers/budget.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

async function sandbox(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  return sb;
}

/** What a converged deployment looks like, for comparing two sandboxes (channel secrets are random per run). */
function finalState(sb: Sandbox) {
  const state = (f: string) => (fs.existsSync(path.join(sb.state, f)) ? fs.readFileSync(path.join(sb.state, f), 'utf8').trim() : undefined);
  const mode = (f: string) => (sb.stat(f)?.mode ?? 0) & 0o7777;
  return {
    // Each sandbox has its own loopback MCP and AI gateway stand-ins; the rest must match exactly.
    config: JSON.parse((sb.read('root/.openclaw/openclaw.json') ?? 'null').replace(sb.mcp.url, 'MCP_URL').replaceAll(sb.aiGateway.url, 'AI_GATEWAY_URL')),
    answers: sb.read('var/lib/service-deploy/answers.json')?.replace(sb.mcp.url, 'MCP_URL').replaceAll(sb.aiGateway.url, 'AI_GATEWAY_URL'),
    unit: sb.read('root/.config/systemd/user/openclaw-gateway.service'),
    dropIn: sb.read('root/.config/systemd/user/openclaw-gateway.service.d/service-env.conf'),
    plugin: ['index.js', 'protocol.js', 'nonce-store.js', 'sessions.js'].map((f) => sb.read(`root/.openclaw/extensions-local/service-channel/${f}`)),
    channelEnv: /^SERVICE_CHANNEL_TOKEN=\S{24,}$/m.test(sb.read('root/.openclaw/channel.env') ?? ''),
    tls: [Boolean(sb.read('etc/service-deploy/tls/channel.crt')), mode('etc/service-deploy/tls/channel.key')],
    nginxSite: (sb.read('etc/nginx/conf.d/service-channel.conf') ?? '').replace(/"[A-Za-z0-9._~+/=-]{24,}"/g, 'KNOCK'),
    cron: sb.read('etc/cron.d/service-guard'),
    guard: sb.read('usr/local/bin/service-guard.sh'),
    wrapper: sb.read('usr/local/bin/openclaw'),
    packages: state('dpkg-installed')?.split('\n').sort(),
    mesh: state('ts-up'),
    serve: state('ts-serve'),
    gatewayActive: fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active')),
    modes: ['root/.openclaw', 'root/.openclaw/openclaw.json', 'root/.openclaw/channel.env', 'var/lib/service-deploy', 'var/lib/service-deploy/answers.json', 'etc/nginx/conf.d/service-channel.conf'].map(mode),
  };
}

/** Temp files of any kind (ours and the names earlier versions used) anywhere under the sandbox root. */
function tempFiles(root: string): string[] {
  const pattern = /sd-tmp-|\.tmp-\d+-|\.partial$|candidate|mesh-auth-key|^\.new-\d+$|\.node-download-|\.old-\d+$|\.stale-/;
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (pattern.test(e.name)) out.push(path.relative(root, full));
      // The Node tarball and OpenClaw's package are not ours to judge.
      else if (e.isDirectory() && !full.endsWith('opt/service-deploy/node/lib')) walk(full);
    }
  };
  walk(root);
  return out;
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = budget(180_000)): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms`);
}

function find(root: string, re: RegExp): string | undefined {
  const walk = (dir: string): string | undefined => {
    for (const e of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const full = path.join(dir, e.name);
      if (re.test(path.relative(root, full)) && (!e.isFile() || fs.statSync(full).size > 0)) return full;
      if (e.isDirectory()) {
        const hit = walk(full);
        if (hit) return hit;
      }
    }
    return undefined;
  };
  return walk(root);
}

/**
 * A loopback HTTPS server (same test CA as the sandbox's Node source) that serves the
 * Node release like the real one, but sends only half of the tarball and then stalls:
 * the install is killed in the middle of the download.
 */
async function stallingNodeSource(sb: Sandbox): Promise<{ url: string; close(): Promise<void> }> {
  const env = sb.env();
  const caDir = path.dirname(env.SERVICE_DOWNLOAD_CA_FILE!);
  const upstream = env.SERVICE_NODE_DIST_URL!;
  const ca = fs.readFileSync(env.SERVICE_DOWNLOAD_CA_FILE!);
  const fetchUpstream = (url: string) =>
    new Promise<Buffer>((resolve, reject) => {
      https.get(`${upstream}${url}`, { ca }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
      }).on('error', reject);
    });
  const sockets = new Set<{ destroy(): void }>();
  const server = https.createServer({ key: fs.readFileSync(path.join(caDir, 'server.key')), cert: fs.readFileSync(path.join(caDir, 'server.pem')) }, (req, res) => {
    void fetchUpstream(req.url ?? '/').then((body) => {
      if (!req.url?.endsWith('.tar.gz')) return void res.writeHead(200).end(body);
      res.writeHead(200, { 'content-length': String(body.length) });
      res.write(body.subarray(0, Math.floor(body.length / 2))); // ... and never the rest
    });
  });
  server.on('connection', (s) => sockets.add(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

interface KillPoint {
  name: string;
  /** Starts the install and resolves once it is at the point (then it is killed). */
  reach(sb: Sandbox): Promise<{ run: ReturnType<Sandbox['install']>; hung?: number; cleanup?: () => Promise<void> }>;
  /** What must be true at the moment of the kill (proves the point is mid-write). */
  atKill?: (sb: Sandbox) => void;
}

const INSTALL = { args: [...FIRST_INSTALL.args, '--channel'], env: FIRST_INSTALL.env };

/** Kill at a stand-in call: it hangs there (STANDIN_HANG_AT / STANDIN_HANG_ON) and reports itself. */
function hangAt(name: string, env: Record<string, string>, atKill?: KillPoint['atKill']): KillPoint {
  return {
    name,
    atKill,
    async reach(sb) {
      const run = sb.install(INSTALL.args, { ...INSTALL.env, ...env });
      const hanging = path.join(sb.state, 'hanging');
      const line = await waitFor(`the install reaching ${name}`, () => (fs.existsSync(hanging) ? fs.readFileSync(hanging, 'utf8').trim() || undefined : undefined));
      fs.rmSync(hanging);
      return { run, hung: Number(line.split(' ')[1]) };
    },
  };
}

describe('interrupted installs', () => {
  it('kill -9 at every step boundary, mid-download and mid-write: every re-run converges, leaves no temp file, and no backup holds the mesh key', async () => {
    const reference = await sandbox();
    const ok = await reference.install(INSTALL.args, INSTALL.env);
    expect(ok.exitCode, String(ok.stderr)).toBe(0);
    const expected = finalState(reference);
    const calls = reference.calls();
    expect(calls.length).toBeGreaterThan(30);

    // The first call of each distinct command is where a step begins its work (a step
    // boundary); the calls that hold a temp file open are the mid-write points; and
    // evenly spaced call counts fill in between (the checks run concurrently, so a count
    // is a moment of the run rather than a fixed command).
    const points: KillPoint[] = [];
    const seen = new Set<string>();
    for (const c of calls) {
      const on = `${c.command} ${c.args[0] ?? ''}`;
      if (seen.has(on)) continue;
      seen.add(on);
      if (on === 'tailscale up') {
        points.push(hangAt('mid-write: tailscale up, with the mesh auth key in its temp file', { STANDIN_HANG_ON: on }, (sb) => {
          expect(fs.readdirSync(path.join(sb.root, 'run/service-deploy')).filter((f) => f.startsWith('.mesh-auth-key.sd-tmp-'))).toHaveLength(1);
        }));
      } else if (on === 'openclaw config') {
        points.push(hangAt('mid-write: openclaw config validate, with the config candidate written', { STANDIN_HANG_ON: on }, (sb) => {
          expect(fs.readdirSync(path.join(sb.root, 'root/.openclaw')).filter((f) => f.startsWith('.openclaw.json.sd-tmp-'))).toHaveLength(1);
        }));
      } else points.push(hangAt(`step boundary: the first \`${on.trim()}\``, { STANDIN_HANG_ON: on }));
    }
    for (const n of [2, 9, 17, 25, Math.floor(calls.length / 2), calls.length - 2, calls.length]) points.push(hangAt(`call ${n} of ${calls.length}`, { STANDIN_HANG_AT: String(n) }));
    points.push({
      name: 'mid-download: half of the Node tarball received',
      async reach(sb) {
        const stall = await stallingNodeSource(sb);
        const run = sb.install(INSTALL.args, { ...INSTALL.env, SERVICE_NODE_DIST_URL: stall.url });
        await waitFor('a partial Node tarball', () => find(sb.root, /^opt\/service-deploy\/\.node\.sd-tmp-[^/]+\/node-v.*\.tar\.gz$/));
        return { run, cleanup: () => stall.close() };
      },
    });
    points.push({
      name: 'mid-write: openssl making the channel key in its temp folder',
      async reach(sb) {
        const run = sb.install(INSTALL.args, INSTALL.env);
        await waitFor('the TLS temp folder', () => find(sb.root, /^etc\/service-deploy\/tls\/\.channel\.key\.sd-tmp-/));
        return { run };
      },
    });
    expect(points.length).toBeGreaterThanOrEqual(20);

    const results: string[] = [];
    const runPoint = async (point: KillPoint) => {
      const sb = await sandbox();
      const { run, hung, cleanup } = await point.reach(sb);
      point.atKill?.(sb);
      run.kill('SIGKILL');
      await run.catch(() => undefined);
      if (hung) await execa('kill', ['-9', String(hung)], { reject: false });
      await cleanup?.();

      const again = await sb.install(INSTALL.args, INSTALL.env);
      expect(again.exitCode, `killed at ${point.name}: ${again.stderr}`).toBe(0);
      expect(finalState(sb), `killed at ${point.name}`).toEqual(expected);
      expect(tempFiles(sb.root), `temp files left after killing at ${point.name}`).toEqual([]);

      const reset = await sb.install(['--reset-clean', '--yes', '--json']);
      expect(reset.exitCode, String(reset.stderr)).toBe(0);
      const archive = fs.readFileSync(path.join(sb.root, JSON.parse(String(reset.stdout)).backup));
      expect(zlib.gunzipSync(archive).includes(SECRETS.meshAuthKey), `the backup after ${point.name} holds the mesh key`).toBe(false);
      results.push(point.name);
    };
    // Two at a time: the machine has two cores.
    const queue = [...points];
    await Promise.all([0, 1].map(async () => {
      for (let p = queue.shift(); p; p = queue.shift()) await runPoint(p);
    }));
    expect(results.length).toBe(points.length);
    process.stdout.write(`kill -9 points: ${results.length}/${points.length} converged, no temp file left, no backup with the mesh key\n  ${results.join('\n  ')}\n`);
  }, budget(900_000));

  it('waits for an apt/dpkg lock held by another process, naming it, and proceeds when released', async () => {
    const sb = await sandbox();
    const lockFile = path.join(sb.root, 'var/lib/dpkg/lock-frontend');
    fs.mkdirSync(path.dirname(lockFile), { recursive: true });
    fs.writeFileSync(lockFile, '');
    // The holder keeps the lock until the test says so (a line on its stdin), not for a
    // fixed time: the install must be seen waiting, however slowly it starts.
    const holder = execa('python3', ['-c', `import fcntl,sys
f=open(${JSON.stringify(lockFile)},'w'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.readline()`]);
    let said = '';
    holder.stdout!.on('data', (chunk: Buffer) => (said += chunk.toString()));
    try {
      await waitUntil('the lock holder to say locked', () => said.includes('locked'), { intervalMs: 20 });
      const run = sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
      let stderr = '';
      run.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      // Default --lock-timeout: the wait shows the 5 minutes (300 s) of SPEC 1.2 rule 4.
      await waitUntil('the install to name the lock holder and its time left', () => new RegExp(String.raw`pid ${holder.pid} \([^)]*python3[^)]*\) on /var/lib/dpkg/lock-frontend; waiting \((\d+) s left\)`).exec(stderr) ?? undefined, {
        budgetMs: 60_000,
        lastSeen: () => stderr.slice(-400),
      }).then((match) => {
        const left = Number(match[1]);
        expect(left).toBeGreaterThan(240);
        expect(left).toBeLessThanOrEqual(300);
      });
      holder.stdin!.end('release\n');
      const result = await run;
      expect(result.exitCode, String(result.stderr)).toBe(0);
      expect(result.stderr).toContain('package manager lock released');
      expect(sb.calls('apt-get').length).toBeGreaterThan(0);
    } finally {
      holder.kill();
      await holder.catch(() => undefined);
    }
  });

  it('gives up after the lock timeout with a clear error and nothing installed', async () => {
    const sb = await sandbox();
    const lockFile = path.join(sb.root, 'var/lib/dpkg/lock');
    fs.mkdirSync(path.dirname(lockFile), { recursive: true });
    fs.writeFileSync(lockFile, '');
    const holder = execa('python3', ['-c', `import fcntl,time
f=open(${JSON.stringify(lockFile)},'w'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)`]);
    try {
      await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()));
      const result = await sb.install([...FIRST_INSTALL.args, '--lock-timeout', '2', '--json'], FIRST_INSTALL.env);
      expect(result.exitCode).toBe(1);
      const out = JSON.parse(String(result.stdout));
      const failed = out.steps.find((s: { status: string }) => s.status === 'failed');
      expect(failed.id).toBe('package-lock');
      expect(failed.error).toContain('still locked after 2 s');
      expect(failed.error).toContain(`pid ${holder.pid}`);
      expect(failed.hint).toContain('retry');
      expect(sb.calls('apt-get')).toEqual([]);
      expect(fs.existsSync(path.join(sb.root, 'opt'))).toBe(false);
      expect(fs.existsSync(path.join(sb.root, 'root/.openclaw'))).toBe(false);
    } finally {
      holder.kill();
      await holder.catch(() => undefined);
    }
  });
});
