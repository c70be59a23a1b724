import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.js';
import { writeBackup } from '../../src/install/backup.js';
import { runBinary } from '../helpers/binary.js';
import { baseEntries, craftedArchives, entriesOf, gzip, tarBytes } from '../helpers/crafted-archives.js';
import { tempDir } from '../helpers/tmp.js';
import { snapshotTree } from '../hostile/harness.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

async function installedWithWorkspace(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  // What the agent accumulates: memory and workspace files.
  fs.mkdirSync(path.join(sb.root, 'root/.openclaw/workspace/memory'), { recursive: true });
  fs.writeFileSync(path.join(sb.root, 'root/.openclaw/workspace/MEMORY.md'), '# Memory\nThe customer prefers mornings.\n');
  fs.writeFileSync(path.join(sb.root, 'root/.openclaw/workspace/memory/2026-11-21.md'), 'notes\n');
  return sb;
}

function backups(sb: Sandbox): string[] {
  const tmp = path.join(sb.root, 'tmp');
  return fs.existsSync(tmp) ? fs.readdirSync(tmp).filter((f) => /^openclaw-backup-\d{8}-\d{6}\.tar\.gz$/.test(f)) : [];
}

// Each test installs, resets and restores (several binary runs): minutes on a busy two-core machine.
describe('--reset-clean and restore', { timeout: 240_000 }, () => {
  it('keeps a copy of the backup in /var/backups/service-deploy (0700 folder, 0600 file) and names both paths; the copy restores after /tmp is emptied', async () => {
    const sb = await installedWithWorkspace();
    const reset = await sb.install(['--reset-clean', '--yes', '--json']);
    expect(reset.exitCode, String(reset.stderr)).toBe(0);
    const out = JSON.parse(String(reset.stdout));
    expect(out.backup).toMatch(/^\/tmp\/openclaw-backup-\d{8}-\d{6}\.tar\.gz$/);
    expect(out.backupCopy).toBe(`/var/backups/service-deploy/${path.basename(out.backup)}`);
    const copy = path.join(sb.root, out.backupCopy);
    expect(fs.statSync(path.dirname(copy)).mode & 0o777).toBe(0o700);
    expect(fs.statSync(copy).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(copy).equals(fs.readFileSync(path.join(sb.root, out.backup)))).toBe(true);
    expect(fs.readdirSync(path.dirname(copy)).filter((f) => f.includes('sd-tmp'))).toEqual([]);

    // A reboot empties /tmp: the copy is the one that brings the deployment back.
    fs.rmSync(path.join(sb.root, out.backup));
    const restored = await runBinary(['restore', out.backupCopy], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(restored.exitCode, String(restored.stderr)).toBe(0);
    expect(sb.read('root/.openclaw/workspace/MEMORY.md')).toContain('prefers mornings');

    // In words: both paths, and the copy is what restore is pointed at; the first copy is kept.
    const again = await sb.install(['--reset-clean', '--yes']);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    const tmp = /^backup: (\/tmp\/openclaw-backup-\S+\.tar\.gz)$/m.exec(String(again.stdout))?.[1];
    const kept = /^backup copy: (\/var\/backups\/service-deploy\/openclaw-backup-\S+\.tar\.gz) \(kept across reboots/m.exec(String(again.stdout))?.[1];
    expect(tmp, String(again.stdout)).toBeDefined();
    expect(kept, String(again.stdout)).toBeDefined();
    expect(String(again.stdout)).toContain(`service-deploy restore ${kept}`);
    expect(fs.existsSync(copy)).toBe(true);
    expect(fs.readdirSync(path.dirname(copy)).length).toBe(2);

    // --check says where both would go, and writes nothing there.
    const plan = await sb.install(['--reset-clean', '--check', '--json']);
    expect(JSON.parse(String(plan.stdout)).backup.copy).toMatch(/^\/var\/backups\/service-deploy\/openclaw-backup-/);
  });

  it('refuses without confirmation when there is no terminal, and changes nothing', async () => {
    const sb = await installedWithWorkspace();
    const result = await sb.install(['--reset-clean']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--yes');
    expect(backups(sb)).toEqual([]);
    expect(sb.read('root/.openclaw/openclaw.json')).toBeDefined();
  });

  it('backs up (0600, verified), removes everything, and restore brings it back', async () => {
    const sb = await installedWithWorkspace();
    const configBefore = sb.read('root/.openclaw/openclaw.json');
    const result = await sb.install(['--reset-clean', '--yes']);
    expect(result.exitCode, String(result.stderr)).toBe(0);

    const [archive] = backups(sb);
    expect(archive).toBeDefined();
    const archivePath = path.join(sb.root, 'tmp', archive!);
    expect(fs.statSync(archivePath).mode & 0o777).toBe(0o600);
    expect(result.stdout).toContain(`/tmp/${archive}`);
    const entries: string[] = [];
    await tar.t({ file: archivePath, onReadEntry: (e) => entries.push(e.path) });
    for (const expected of [
      'root/.openclaw/openclaw.json',
      'root/.openclaw/workspace/MEMORY.md',
      'root/.openclaw/workspace/memory/2026-11-21.md',
      'var/lib/service-deploy/answers.json',
      'root/.config/systemd/user/openclaw-gateway.service',
      'etc/cron.d/service-guard',
    ]) {
      expect(entries).toContain(expected);
    }

    // Gone: runtime, mesh client, config, workspace, cron, units; the binary stays.
    for (const gone of ['root/.openclaw', 'opt/service-deploy', 'usr/local/bin/openclaw', 'etc/cron.d/service-guard', 'var/lib/service-deploy', 'root/.config/systemd/user/openclaw-gateway.service']) {
      expect(fs.existsSync(path.join(sb.root, gone)), gone).toBe(false);
    }
    expect(fs.existsSync(path.join(sb.state, 'ts-up'))).toBe(false);
    expect(sb.calls('apt-get').some((c) => c.args.includes('purge') && c.args.includes('tailscale'))).toBe(true);
    expect(fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active'))).toBe(false);

    // Restore: files back byte for byte, then the install brings the services back.
    const restored = await runBinary(['restore', `/tmp/${archive}`], {
      env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }),
      cwd: sb.root,
    });
    expect(restored.exitCode, String(restored.stderr)).toBe(0);
    expect(sb.read('root/.openclaw/openclaw.json')).toBe(configBefore);
    expect(sb.read('root/.openclaw/workspace/MEMORY.md')).toContain('prefers mornings');
    expect(fs.existsSync(path.join(sb.state, 'ts-up'))).toBe(true);
    expect(fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active'))).toBe(true);
    expect(fs.existsSync(path.join(sb.root, 'opt/service-deploy/openclaw-current/package.json'))).toBe(true);
  });

  it('restore refuses hard links that point out of the backup paths', async () => {
    const sb = await installedWithWorkspace();
    const stage = path.join(sb.state, 'links');
    fs.mkdirSync(path.join(stage, 'root/.openclaw/workspace'), { recursive: true });
    fs.mkdirSync(path.join(stage, 'etc'), { recursive: true });
    fs.writeFileSync(path.join(stage, 'etc/shadow'), 'x');
    fs.linkSync(path.join(stage, 'etc/shadow'), path.join(stage, 'root/.openclaw/workspace/notes'));
    fs.mkdirSync(path.join(sb.root, 'tmp'), { recursive: true });
    await tar.c({ gzip: true, file: path.join(sb.root, 'tmp/links.tar.gz'), cwd: stage }, ['etc/shadow', 'root']);
    const result = await runBinary(['restore', '/tmp/links.tar.gz'], { env: sb.env() });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/etc\/shadow.*outside the paths a backup holds|root\/\.openclaw\/workspace\/notes.*hard link/s);
  });

  it('restore of a channel deployment reloads nginx with the restored site', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    expect((await sb.install(['--catalog', '--customer-name', 'Nginx Co'], FIRST_INSTALL.env)).exitCode).toBe(0);
    const reset = await sb.install(['--reset-clean', '--yes']);
    expect(reset.exitCode, String(reset.stderr)).toBe(0);
    sb.clearCalls();
    const [archive] = backups(sb);
    const restored = await runBinary(['restore', `/tmp/${archive}`], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(restored.exitCode, String(restored.stderr)).toBe(0);
    const nginxCalls = sb.calls('systemctl').filter((c) => c.args.includes('nginx') && (c.args.includes('reload') || c.args.includes('enable')));
    expect(nginxCalls.length).toBeGreaterThan(0);
    expect(sb.read('etc/nginx/conf.d/service-channel.conf')).toContain('limit_conn service_cn 3;');
  });

  it('restore refuses an archive that is not a service-deploy backup', async () => {
    const sb = await installedWithWorkspace();
    const evil = path.join(sb.root, 'tmp/evil.tar.gz');
    fs.mkdirSync(path.dirname(evil), { recursive: true });
    fs.mkdirSync(path.join(sb.state, 'evil/etc'), { recursive: true });
    fs.writeFileSync(path.join(sb.state, 'evil/etc/passwd'), 'root::0:0::/:/bin/sh\n');
    await tar.c({ gzip: true, file: evil, cwd: path.join(sb.state, 'evil') }, ['etc']);
    const result = await runBinary(['restore', '/tmp/evil.tar.gz'], { env: sb.env() });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/"etc\/passwd" is outside the paths a backup holds/);
    expect(result.stderr).toContain('nothing was changed');
    expect(fs.existsSync(path.join(sb.root, 'etc/passwd'))).toBe(false);
  });

  it('a backup leaves out temp files and the mesh key, skips what restore would refuse, and keeps OpenClaw\'s plugin-skills links', async () => {
    const sb = await installedWithWorkspace();
    const r = (p: string) => path.join(sb.root, p);
    fs.mkdirSync(r('root/.openclaw/plugin-skills'), { recursive: true });
    const skillTarget = '/opt/service-deploy/node/lib/node_modules/openclaw/skills/weather';
    fs.symlinkSync(skillTarget, r('root/.openclaw/plugin-skills/weather'));
    fs.symlinkSync('../MEMORY.md', r('root/.openclaw/workspace/memory/latest.md'));
    fs.symlinkSync('/etc/passwd', r('root/.openclaw/workspace/passwd-link'));
    execFileSync('mkfifo', [r('root/.openclaw/workspace/pipe')]);
    // A crash's leftovers: a temp file of a gone process, and an old version's mesh key file.
    fs.writeFileSync(r('root/.openclaw/.openclaw.json.sd-tmp-999999-1-0123abcd'), '{}');
    fs.writeFileSync(r('var/lib/service-deploy/mesh-auth-key.0123abcd'), `${SECRETS.meshAuthKey}\n`, { mode: 0o600 });

    const plan = jsonOutput('reset-plan', (await sb.install(['--reset-clean', '--check', '--json'])).stdout);
    expect(plan).toMatchObject({ ok: true, mode: 'check', remove: expect.arrayContaining(['/opt/service-deploy']) });
    expect(plan.backup.skipped.map((s: { path: string }) => s.path).sort()).toEqual(['/root/.openclaw/workspace/passwd-link', '/root/.openclaw/workspace/pipe']);
    const reset = await sb.install(['--reset-clean', '--yes', '--json']);
    expect(reset.exitCode, String(reset.stderr)).toBe(0);
    const out = jsonOutput('reset', reset.stdout);
    expect(out.skipped.map((s: { path: string }) => s.path).sort()).toEqual(['/root/.openclaw/workspace/passwd-link', '/root/.openclaw/workspace/pipe']);
    const archive = path.join(sb.root, out.backup);
    const names: string[] = [];
    const bytes: Buffer[] = [];
    await tar.t({ file: archive, onReadEntry: (e) => { names.push(e.path); e.on('data', (c: Buffer) => bytes.push(c)); } });
    expect(names.filter((n) => n.includes('sd-tmp') || n.includes('mesh-auth-key') || n.includes('pipe') || n.includes('passwd-link'))).toEqual([]);
    expect(Buffer.concat(bytes).includes(SECRETS.meshAuthKey)).toBe(false);
    expect(names).toContain('root/.openclaw/plugin-skills/weather');

    const restored = await runBinary(['restore', out.backup], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(restored.exitCode, String(restored.stderr)).toBe(0);
    expect(fs.readlinkSync(r('root/.openclaw/plugin-skills/weather'))).toBe(skillTarget);
    expect(fs.readlinkSync(r('root/.openclaw/workspace/memory/latest.md'))).toBe('../MEMORY.md');
    expect(fs.existsSync(r('root/.openclaw/workspace/pipe'))).toBe(false);
  });

  it('two backups in the same second get distinct names; neither is overwritten', async () => {
    const sb = await installedWithWorkspace();
    const fixed = new Date(2026, 10, 23, 10, 15, 0);
    const host = { ...createHost({ env: sb.env(), quiet: true }), now: () => fixed };
    const first = await writeBackup(host);
    const second = await writeBackup(host);
    const third = await writeBackup(host);
    expect([first.archive, second.archive, third.archive]).toEqual([
      '/tmp/openclaw-backup-20261123-101500.tar.gz',
      '/tmp/openclaw-backup-20261123-101500-2.tar.gz',
      '/tmp/openclaw-backup-20261123-101500-3.tar.gz',
    ]);
    for (const b of [first, second, third]) expect(fs.statSync(path.join(sb.root, b.archive)).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.join(sb.root, 'tmp')).filter((f) => f.includes('sd-tmp'))).toEqual([]);
  });

  it('restore gives the install\'s modes, never the archive\'s (setuid, setgid, sticky, world-writable, secrets)', async () => {
    const sb = await installedWithWorkspace();
    const stored = JSON.parse(sb.read('var/lib/service-deploy/answers.json')!);
    const base = baseEntries(`${JSON.stringify(stored)}\n`);
    const dir = tempDir('sd-sanitize-');
    for (const a of craftedArchives({ base }).filter((x) => x.expect === 'sanitized')) {
      fs.writeFileSync(path.join(dir, `${a.id}.tar.gz`), a.bytes);
      const result = await runBinary(['restore', `${a.id}.tar.gz`], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }), cwd: dir });
      expect(result.exitCode, `${a.id}: ${result.stderr}`).toBe(0);
      for (const [p, mode] of Object.entries(a.modes!)) expect((fs.statSync(path.join(sb.root, p)).mode & 0o7777).toString(8), `${a.id} ${p}`).toBe(mode.toString(8));
    }
    // As the e2e does on a real /: a genuine backup re-emitted with crafted entries appended.
    const reset = await sb.install(['--reset-clean', '--yes', '--json']);
    const genuine = await entriesOf(fs.readFileSync(path.join(sb.root, JSON.parse(String(reset.stdout)).backup)));
    fs.writeFileSync(path.join(dir, 'genuine-plus.tar.gz'), gzip(tarBytes([...genuine, { name: 'root/.openclaw/workspace/crafted-setuid', mode: 0o4755, data: '#!/bin/sh\n' }])));
    const plus = await runBinary(['restore', 'genuine-plus.tar.gz'], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }), cwd: dir });
    expect(plus.exitCode, String(plus.stderr)).toBe(0);
    expect(fs.statSync(path.join(sb.root, 'root/.openclaw/workspace/crafted-setuid')).mode & 0o7777).toBe(0o755);
    expect(sb.read('root/.openclaw/workspace/NOTES.md')).toBe('crafted notes\n'); // what the genuine backup held
    const walk = (d: string): string[] => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? [path.join(d, e.name), ...walk(path.join(d, e.name))] : [path.join(d, e.name)]));
    const loose = walk(path.join(sb.root, 'root/.openclaw')).filter((f) => (fs.lstatSync(f).mode & 0o7022) !== 0 && !fs.lstatSync(f).isSymbolicLink());
    expect(loose).toEqual([]);
  });

  it('restore --check shows what would be put back (path, size, mode, new/same/differs) and writes nothing', async () => {
    const sb = await installedWithWorkspace();
    const reset = await sb.install(['--reset-clean', '--yes', '--json']);
    const archive = jsonOutput('reset', reset.stdout).backup as string;
    fs.mkdirSync(path.join(sb.root, 'etc/cron.d'), { recursive: true });
    fs.writeFileSync(path.join(sb.root, 'etc/cron.d/service-guard'), '# edited\n');
    fs.chmodSync(path.join(sb.root, 'etc/cron.d/service-guard'), 0o666);
    fs.rmSync(path.join(sb.root, 'root/.config'), { recursive: true });
    const before = snapshotTree(sb.root);
    const plan = await runBinary(['restore', archive, '--check'], { env: sb.env() });
    expect(plan.exitCode, String(plan.stderr)).toBe(0);
    expect(plan.stdout).toMatch(/would restore \/root\/\.openclaw\/openclaw\.json {2}0600 \d+ B {2}\(new\)/);
    expect(plan.stdout).toMatch(/would restore \/etc\/cron\.d\/service-guard {2}0644 \d+ B {2}\(differs: content, mode 0666 -> 0644\)/);
    expect(plan.stdout).toContain('would create  /root/.config/ (0755)\nwould create  /root/.config/systemd/ (0755)\nwould create  /root/.config/systemd/user/ (0755)');
    const json = await runBinary(['restore', archive, '--check', '--json'], { env: sb.env() });
    const parsed = jsonOutput('restore-plan', json.stdout);
    expect(parsed.items.find((i: { path: string }) => i.path === '/var/lib/service-deploy/answers.json')).toMatchObject({ kind: 'file', mode: '0600', state: 'new' });
    expect(snapshotTree(sb.root)).toEqual(before);
  });

  it('restore over a deployment replaces each root whole, stops the gateway first, and never writes through a link on disk', async () => {
    const sb = await installedWithWorkspace();
    const r = (p: string) => path.join(sb.root, p);
    const reset = await sb.install(['--reset-clean', '--yes', '--json']);
    const archive = jsonOutput('reset', reset.stdout).backup as string;
    expect((await runBinary(['restore', archive], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) })).exitCode).toBe(0);
    // Since the backup: a new workspace file, and the cron file replaced by a link to a file outside.
    fs.writeFileSync(r('root/.openclaw/workspace/after-backup.md'), 'new\n');
    fs.writeFileSync(r('etc/outside'), 'outside stays as it is\n');
    fs.rmSync(r('etc/cron.d/service-guard'));
    fs.symlinkSync('/etc/outside', r('etc/cron.d/service-guard'));
    fs.symlinkSync(path.join(sb.root, 'etc/outside'), r('etc/cron.d/absolute-link-elsewhere'));
    sb.clearCalls();
    const again = await runBinary(['restore', archive], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(fs.existsSync(r('root/.openclaw/workspace/after-backup.md'))).toBe(false);
    expect(sb.read('root/.openclaw/workspace/MEMORY.md')).toContain('prefers mornings');
    expect(fs.lstatSync(r('etc/cron.d/service-guard')).isFile()).toBe(true);
    expect(sb.read('etc/outside')).toBe('outside stays as it is\n');
    const stops = sb.calls('systemctl').filter((c) => c.args.includes('stop') && c.args.includes('openclaw-gateway.service'));
    expect(stops.length).toBe(1);
    expect(fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active'))).toBe(true);
    const leftovers = (d: string): string[] => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.name.includes('sd-tmp') ? [path.join(d, e.name)] : e.isDirectory() && !e.isSymbolicLink() ? leftovers(path.join(d, e.name)) : []));
    expect(leftovers(sb.root)).toEqual([]);
  });
});
