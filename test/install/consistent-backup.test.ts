import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import * as tar from 'tar';
import { afterAll, describe, expect, it } from 'vitest';
import { PINNED_NODE, REPO, runBinary } from '../helpers/binary.js';
import { budget, waitUntil } from '../helpers/budget.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Call, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Issue 19 items 1, 2, 4: every backup is taken with the database writers stopped
 * (stop -> archive -> verify -> change), and each SQLite database in it passes
 * PRAGMA integrity_check before anything is removed or started. The stand-in gateway
 * here is a real process writing a SQLite database in WAL mode (test/fixtures/wal-writer.mjs).
 */

const sandboxes: Sandbox[] = [];
afterAll(async () => {
  // The writer processes the stand-in gateway started.
  for (const sb of sandboxes) {
    const pidFile = path.join(sb.state, 'user-openclaw-gateway.service.realpid');
    if (fs.existsSync(pidFile)) {
      try {
        process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
  }
  await Promise.all(sandboxes.map((s) => s.close()));
});

const STATE_DB = 'root/.openclaw/state/openclaw.sqlite';
const AGENT_DB = 'root/.openclaw/agents/main/agent/openclaw-agent.sqlite';
const GATEWAY = 'openclaw-gateway.service';

function systemctl(sb: Sandbox, args: string[]) {
  return execa(path.join(sb.env().PATH!.split(':')[0]!, 'systemctl'), args, {
    env: { ...sb.env(), XDG_RUNTIME_DIR: '/run/user/0' },
    extendEnv: false,
  });
}

/** Rows of the `turns` table in a database file (a copy: opening it applies its WAL). */
function turns(file: string): string[] {
  const db = new DatabaseSync(file);
  try {
    return (db.prepare('SELECT text FROM turns ORDER BY id').all() as Array<{ text: string }>).map((r) => r.text);
  } finally {
    db.close();
  }
}

/** A deployed sandbox whose gateway is a live process writing state/openclaw.sqlite in WAL mode. */
async function deployedWithWriter(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  fs.writeFileSync(path.join(sb.state, 'gateway-process'), '');
  fs.writeFileSync(path.join(sb.state, 'gateway-command'), `${PINNED_NODE} ${path.join(REPO, 'test/fixtures/wal-writer.mjs')} ${path.join(sb.root, STATE_DB)}`);
  await systemctl(sb, ['--user', 'restart', GATEWAY]);
  const db = path.join(sb.root, STATE_DB);
  await waitUntil('the stand-in gateway writing its WAL database', () => fs.existsSync(`${db}-wal`) && fs.statSync(`${db}-wal`).size > 0, { budgetMs: 30_000 });
  return sb;
}

function indexOf(calls: Call[], predicate: (c: Call) => boolean): number {
  return calls.findIndex(predicate);
}
const isCall = (verb: string, unit: string) => (c: Call) => c.command === 'systemctl' && c.args.includes(verb) && c.args.includes(unit);

/** Extracts an archive into a private folder; returns that folder. */
async function extract(archive: string): Promise<string> {
  const dir = tempDir('sd-extract-');
  await tar.x({ file: archive, cwd: dir });
  return dir;
}

/** A SQLite database whose b-tree pages are damaged (SQLite: "database disk image is malformed"). */
function corruptDatabase(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file);
  db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX tv ON t(v)');
  const insert = db.prepare('INSERT INTO t(v) VALUES (?)');
  for (let n = 0; n < 300; n++) insert.run(`v${n}${'x'.repeat(900)}`);
  db.close();
  const fd = fs.openSync(file, 'r+');
  for (let page = 2; page < 12; page++) fs.writeSync(fd, Buffer.alloc(8, 0x55), 0, 8, 4096 * page);
  fs.closeSync(fd);
}

describe('consistent backups', { timeout: budget(300_000) }, () => {
  it('backup: stops the writers, archives, checks every database, starts them again; removes nothing; 0600 in a 0700 folder', async () => {
    const sb = await deployedWithWriter();
    // --check: the plan, nothing stopped or written.
    sb.clearCalls();
    const check = await runBinary(['backup', '--check', '--keep', '3', '--json'], { env: sb.env() });
    expect(check.exitCode, String(check.stderr)).toBe(0);
    const plan = jsonOutput('backup-plan', check.stdout);
    expect(plan).toMatchObject({ ok: true, mode: 'check', stop: expect.arrayContaining([GATEWAY]), prune: [] });
    expect(plan.archive).toMatch(/^\/var\/backups\/service-deploy\/openclaw-backup-\d{8}-\d{6}\.tar\.gz$/);
    expect(plan.entries).toBeGreaterThan(0);
    expect(sb.calls('systemctl').filter((c) => c.args.includes('stop'))).toEqual([]);
    expect(fs.existsSync(path.join(sb.root, 'var/backups/service-deploy'))).toBe(false);

    sb.clearCalls();
    const result = await runBinary(['backup', '--json'], { env: sb.env() });
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const out = jsonOutput('backup', result.stdout);
    expect(out.archive).toMatch(/^\/var\/backups\/service-deploy\/openclaw-backup-\d{8}-\d{6}\.tar\.gz$/);
    const archive = path.join(sb.root, out.archive);
    expect(fs.statSync(archive).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(archive)).mode & 0o777).toBe(0o700);
    expect(out.databases).toContainEqual({ path: `/${STATE_DB}`, integrity: 'ok' });
    expect(out.stopped).toContain(GATEWAY);

    // Order: stop, (archive + verify in-process), start; the archive holds the writer's last row.
    const calls = sb.calls('systemctl');
    const stop = indexOf(calls, isCall('stop', GATEWAY));
    const start = indexOf(calls, isCall('start', GATEWAY));
    expect(stop).toBeGreaterThanOrEqual(0);
    expect(start).toBeGreaterThan(stop);
    expect(calls.some((c) => c.args.includes('disable'))).toBe(false);
    const copy = await extract(archive);
    const rows = turns(path.join(copy, STATE_DB));
    expect(rows.at(-1)).toBe('stopped');
    expect(rows.length).toBeGreaterThan(1);

    // Nothing removed, the gateway runs again (a new writer process).
    expect(sb.read('root/.openclaw/openclaw.json')).toBeDefined();
    expect(fs.existsSync(path.join(sb.state, `user-${GATEWAY}.active`))).toBe(true);
    const pid = Number(fs.readFileSync(path.join(sb.state, `user-${GATEWAY}.realpid`), 'utf8'));
    expect(() => process.kill(pid, 0)).not.toThrow();

    // --keep: only the newest N stay, and only files with our name are touched.
    const dir = path.dirname(archive);
    const old = ['openclaw-backup-20200101-010101.tar.gz', 'openclaw-backup-20200102-010101.tar.gz'];
    old.forEach((name, i) => {
      fs.writeFileSync(path.join(dir, name), 'old');
      fs.utimesSync(path.join(dir, name), 1_600_000_000 + i, 1_600_000_000 + i);
    });
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'mine');
    const kept = await runBinary(['backup', '--keep', '2', '--json'], { env: sb.env() });
    expect(kept.exitCode, String(kept.stderr)).toBe(0);
    const second = jsonOutput('backup', kept.stdout);
    const pruned = second.pruned as string[];
    expect(pruned.sort()).toEqual(old.map((n) => `/var/backups/service-deploy/${n}`).sort());
    expect(fs.readdirSync(dir).sort()).toEqual([path.basename(out.archive), path.basename(second.archive), 'notes.txt'].sort());
  });

  it('--reset-clean: stop -> archive -> verify -> remove; the archive holds the last committed row', async () => {
    const sb = await deployedWithWriter();
    sb.clearCalls();
    const result = await sb.install(['--reset-clean', '--yes', '--json']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const out = JSON.parse(String(result.stdout));
    expect(out.databases).toContainEqual({ path: `/${STATE_DB}`, integrity: 'ok' });
    const calls = sb.calls('systemctl');
    const timerStop = indexOf(calls, isCall('stop', 'qmd-refresh.timer'));
    const stop = indexOf(calls, isCall('stop', GATEWAY));
    const disable = indexOf(calls, isCall('disable', GATEWAY));
    expect(timerStop).toBeGreaterThanOrEqual(0);
    expect(stop).toBeGreaterThan(timerStop);
    expect(disable).toBeGreaterThan(stop);
    expect(indexOf(calls, isCall('start', GATEWAY))).toBe(-1);
    const rows = turns(path.join(await extract(path.join(sb.root, out.backup)), STATE_DB));
    expect(rows.at(-1)).toBe('stopped');
    expect(rows.length).toBeGreaterThan(1);
    expect(fs.existsSync(path.join(sb.root, 'root/.openclaw'))).toBe(false);

    // Restore: the state back while the gateway is down, every database checked first.
    const restored = await runBinary(['restore', out.backup], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(restored.exitCode, String(restored.stderr)).toBe(0);
    // Every row committed before the reset is back (the restarted writer appends after them).
    expect(turns(path.join(sb.root, STATE_DB)).slice(0, rows.length)).toEqual(rows);
  });

  it('a database that fails integrity_check: the reset removes nothing and starts the gateway again', async () => {
    const sb = await deployedWithWriter();
    corruptDatabase(path.join(sb.root, AGENT_DB));
    sb.clearCalls();
    const result = await sb.install(['--reset-clean', '--yes']);
    expect(result.exitCode, String(result.stderr)).toBe(1);
    expect(String(result.stderr)).toContain(`/${AGENT_DB}`);
    expect(String(result.stderr)).toContain('integrity_check');
    expect(String(result.stderr)).toContain('nothing was removed');
    expect(sb.read('root/.openclaw/openclaw.json')).toBeDefined();
    expect(fs.readdirSync(path.join(sb.root, 'tmp')).filter((f) => f.startsWith('openclaw-backup-') || f.includes('sd-tmp'))).toEqual([]);
    const calls = sb.calls('systemctl');
    expect(indexOf(calls, isCall('start', GATEWAY))).toBeGreaterThan(indexOf(calls, isCall('stop', GATEWAY)));
    expect(indexOf(calls, isCall('disable', GATEWAY))).toBe(-1);
    expect(fs.existsSync(path.join(sb.state, `user-${GATEWAY}.active`))).toBe(true);
  });

  it('restore refuses an archive holding a damaged database (exit 2), with the gateway left running and nothing changed', async () => {
    const sb = await deployedWithWriter();
    corruptDatabase(path.join(sb.root, AGENT_DB));
    // An archive as a person might pack one by hand (restore accepts node-tar/GNU tar archives).
    const archive = path.join(sb.root, 'tmp/hand-made.tar.gz');
    fs.mkdirSync(path.dirname(archive), { recursive: true });
    await systemctl(sb, ['--user', 'stop', GATEWAY]);
    await tar.c({ gzip: true, file: archive, cwd: sb.root, portable: true }, ['root/.openclaw', 'var/lib/service-deploy']);
    await systemctl(sb, ['--user', 'start', GATEWAY]);
    sb.clearCalls();
    const config = sb.read('root/.openclaw/openclaw.json');
    const result = await runBinary(['restore', '/tmp/hand-made.tar.gz'], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(result.exitCode, String(result.stderr)).toBe(2);
    expect(String(result.stderr)).toContain(`/${AGENT_DB}`);
    expect(String(result.stderr)).toContain('nothing was changed');
    expect(sb.calls('systemctl').filter((c) => c.args.includes('stop'))).toEqual([]);
    expect(sb.read('root/.openclaw/openclaw.json')).toBe(config);
  });

  it('the guard waits while an install or backup holds the install lock', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    expect((await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env)).exitCode).toBe(0);
    // The lock as Locks.acquire writes it, held by a live process (a sleeping child).
    const holder = execa('sleep', ['600']);
    const start = fs.readFileSync(`/proc/${holder.pid}/stat`, 'utf8');
    const startTime = start.slice(start.lastIndexOf(')') + 2).split(' ')[19];
    const lock = path.join(sb.root, 'run/service-deploy/install.lock');
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    fs.writeFileSync(lock, `${holder.pid} ${startTime}\n`);
    const guard = execa(path.join(REPO, 'dist/service-deploy'), ['guard'], { env: sb.env(), extendEnv: false, reject: false });
    let stderr = '';
    guard.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await waitUntil('the guard saying it waits for the install', () => stderr.includes(`waiting for the running install/backup (pid ${holder.pid}`), { lastSeen: () => stderr });
    expect(guard.exitCode).toBeNull();
    holder.kill('SIGKILL');
    await holder.catch(() => undefined);
    const done = await guard;
    expect(done.exitCode, String(done.stderr)).toBe(0);
  });

  it('backup --every 24h --keep 7: a system timer written through the manifest; doctor reports the last backup\'s age; --every off removes it', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    expect((await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env)).exitCode).toBe(0);
    for (const [flags, field] of [[['--every', '5m'], '--every'], [['--every', 'daily'], '--every'], [['--keep', '0'], '--keep'], [['--every', '24h', '--keep', 'x'], '--keep']] as const) {
      const bad = await runBinary(['backup', ...flags], { env: sb.env() });
      expect(bad.exitCode, flags.join(' ')).toBe(2);
      expect(String(bad.stderr)).toContain(field);
    }
    expect(fs.existsSync(path.join(sb.root, 'var/backups/service-deploy'))).toBe(false);

    const plan = await runBinary(['backup', '--every', '24h', '--keep', '7', '--check'], { env: sb.env() });
    expect(plan.exitCode, String(plan.stderr)).toBe(0);
    expect(String(plan.stdout)).toContain('would write /etc/systemd/system/service-deploy-backup.timer');
    const planJson = await runBinary(['backup', '--every', '24h', '--keep', '7', '--check', '--json'], { env: sb.env() });
    const schedule = { every: '24h', keep: 7, dir: '/var/backups/service-deploy', timer: 'service-deploy-backup.timer' };
    const planned = jsonOutput('backup-schedule', planJson.stdout);
    expect(planned).toMatchObject({ ok: true, mode: 'check', schedule, changed: true });
    expect(planned.changes).toEqual([
      expect.stringMatching(/^\/etc\/systemd\/system\/service-deploy-backup\.service: /),
      expect.stringMatching(/^\/etc\/systemd\/system\/service-deploy-backup\.timer: /),
      'enable service-deploy-backup.timer',
    ]);
    expect(fs.existsSync(path.join(sb.root, 'etc/systemd/system/service-deploy-backup.timer'))).toBe(false);

    sb.clearCalls();
    const set = await runBinary(['backup', '--every', '24h', '--keep', '7', '--json'], { env: sb.env() });
    expect(set.exitCode, String(set.stderr)).toBe(0);
    expect(jsonOutput('backup-schedule', set.stdout)).toEqual({ ...planned, mode: 'apply' });
    const timer = sb.read('etc/systemd/system/service-deploy-backup.timer')!;
    expect(timer).toContain('OnUnitActiveSec=24h');
    expect(sb.read('etc/systemd/system/service-deploy-backup.service')).toContain('ExecStart=/usr/local/bin/service-deploy backup --keep 7');
    expect(sb.stat('etc/systemd/system/service-deploy-backup.timer')!.mode & 0o777).toBe(0o644);
    const manifest = JSON.parse(sb.read('var/lib/service-deploy/manifest.json')!);
    const recorded = JSON.stringify(manifest);
    expect(recorded).toContain('/etc/systemd/system/service-deploy-backup.timer');
    expect(recorded).toContain('/etc/systemd/system/service-deploy-backup.service');
    expect(sb.calls('systemctl').some((c) => c.args[0] === 'enable' && c.args.includes('--now') && c.args.includes('service-deploy-backup.timer'))).toBe(true);
    expect((await runBinary(['doctor', 'files', '--json'], { env: sb.env() })).exitCode).toBe(0);
    // A second run with the same schedule changes nothing.
    sb.clearCalls();
    const again = await runBinary(['backup', '--every', '24h', '--keep', '7', '--json'], { env: sb.env() });
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(jsonOutput('backup-schedule', again.stdout)).toMatchObject({ mode: 'apply', schedule, changed: false, changes: [] });
    expect(sb.calls('systemctl').filter((c) => !['is-active', 'is-enabled', 'show'].includes(c.args[0]!))).toEqual([]);

    const doctor = async () => {
      const run = await runBinary(['doctor', 'backups', '--json'], { env: sb.env() });
      return JSON.parse(String(run.stdout)).checks[0] as { status: string; message?: string; detail?: string };
    };
    expect((await doctor()).status).toBe('pass');
    expect((await runBinary(['backup'], { env: sb.env() })).exitCode).toBe(0);
    const fresh = await doctor();
    expect(fresh.status).toBe('pass');
    expect(JSON.stringify(fresh)).toContain('last backup');
    const dir = path.join(sb.root, 'var/backups/service-deploy');
    const [only] = fs.readdirSync(dir);
    const threeDaysAgo = Date.now() / 1000 - 3 * 86_400;
    fs.utimesSync(path.join(dir, only!), threeDaysAgo, threeDaysAgo);
    const stale = await doctor();
    expect(stale.status).toBe('warn');
    expect(JSON.stringify(stale)).toMatch(/last backup is 3 days old/);

    const offCheck = await runBinary(['backup', '--every', 'off', '--check', '--json'], { env: sb.env() });
    expect(jsonOutput('backup-schedule', offCheck.stdout)).toMatchObject({ mode: 'check', schedule: null, changed: true });
    expect(fs.existsSync(path.join(sb.root, 'etc/systemd/system/service-deploy-backup.timer'))).toBe(true);
    const off = await runBinary(['backup', '--every', 'off', '--json'], { env: sb.env() });
    expect(off.exitCode, String(off.stderr)).toBe(0);
    expect(jsonOutput('backup-schedule', off.stdout)).toEqual({
      schemaVersion: 1,
      ok: true,
      mode: 'apply',
      schedule: null,
      changed: true,
      changes: ['disable service-deploy-backup.timer', '/etc/systemd/system/service-deploy-backup.timer: removed', '/etc/systemd/system/service-deploy-backup.service: removed'],
    });
    expect(fs.existsSync(path.join(sb.root, 'etc/systemd/system/service-deploy-backup.timer'))).toBe(false);
    const none = await runBinary(['backup', '--every', 'off'], { env: sb.env() });
    expect(String(none.stdout)).toContain('no backup schedule is set');
    const entries = (JSON.parse(sb.read('var/lib/service-deploy/manifest.json')!).entries as Array<{ path: string }>).map((e) => e.path);
    expect(entries.filter((p) => p.includes('service-deploy-backup'))).toEqual([]);
    expect(fs.readdirSync(dir)).toEqual([only]);
    expect((await doctor()).status).toBe('skip');
  });
});
