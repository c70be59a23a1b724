import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { budget, waitUntil } from '../helpers/budget.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

async function sandbox(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  return sb;
}

/** What a converged deployment looks like, for comparing two sandboxes. */
function finalState(sb: Sandbox) {
  const state = (f: string) => (fs.existsSync(path.join(sb.state, f)) ? fs.readFileSync(path.join(sb.state, f), 'utf8').trim() : undefined);
  return {
    // Each sandbox has its own loopback MCP stand-in; the rest must match exactly.
    config: JSON.parse((sb.read('root/.openclaw/openclaw.json') ?? 'null').replace(sb.mcp.url, 'MCP_URL')),
    answers: sb.read('var/lib/service-deploy/answers.json')?.replace(sb.mcp.url, 'MCP_URL'),
    unit: sb.read('root/.config/systemd/user/openclaw-gateway.service'),
    cron: sb.read('etc/cron.d/service-guard'),
    guard: sb.read('usr/local/bin/service-guard.sh'),
    wrapper: sb.read('usr/local/bin/openclaw'),
    packages: state('dpkg-installed')?.split('\n').sort(),
    mesh: state('ts-up'),
    serve: state('ts-serve'),
    gatewayActive: fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active')),
    modes: ['root/.openclaw/openclaw.json', 'var/lib/service-deploy/answers.json'].map((f) => sb.stat(f)?.mode),
    leftovers: fs.readdirSync(path.join(sb.root, 'root/.openclaw')).filter((f) => f.includes('.tmp-') || f.includes('candidate')),
  };
}

/** Waits for the stand-in to hang at the kill point; fails at once (saying why) if the install ends first. */
async function waitFor(file: string, run: ReturnType<Sandbox['install']>, point: number): Promise<string> {
  let ended: string | undefined;
  void run.then((r) => (ended = `the install exited ${r.exitCode} before reaching call ${point}: ${String(r.stderr).slice(-1500)}${String(r.stdout).slice(-1500)}`));
  const text = await waitUntil(`${file} (the stand-in hanging at call ${point})`, () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ended !== undefined ? 'ended' : undefined), {
    budgetMs: 180_000,
    intervalMs: 20,
  });
  if (text === 'ended') throw new Error(ended);
  return text;
}

describe('interrupted installs', () => {
  it('kill -9 at step boundaries, then a re-run converges to the same final state', async () => {
    const reference = await sandbox();
    const ok = await reference.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
    expect(ok.exitCode, String(ok.stderr)).toBe(0);
    const expected = finalState(reference);
    const totalCalls = reference.calls().length;
    expect(totalCalls).toBeGreaterThan(20);

    // Each stand-in call is a point between or inside steps; hang there and kill -9.
    const points = [...new Set([1, 3, 5, 7, 8, 10, 12, 14, 16, 18, 20, 22, 24, totalCalls - 3, totalCalls - 1])].filter((n) => n <= totalCalls);
    for (const point of points) {
      const sb = await sandbox();
      const run = sb.install(FIRST_INSTALL.args, { ...FIRST_INSTALL.env, STANDIN_HANG_AT: String(point) });
      const [where, hungPid] = (await waitFor(path.join(sb.state, 'hanging'), run, point)).trim().split(' ');
      run.kill('SIGKILL');
      await run.catch(() => undefined);
      await execa('kill', ['-9', hungPid!], { reject: false });
      fs.rmSync(path.join(sb.state, 'hanging'));

      const again = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
      expect(again.exitCode, `killed at call ${point} (${where}): ${again.stderr}`).toBe(0);
      expect(finalState(sb), `killed at call ${point} (${where})`).toEqual(expected);
    }
  }, budget(600_000));

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
