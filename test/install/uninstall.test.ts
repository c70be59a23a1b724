import fs from 'node:fs';
import path from 'node:path';
import { LAYOUT } from '../../src/layout.js';
import { afterAll, describe, expect, it } from 'vitest';
import { runBinary } from '../helpers/binary.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { snapshotTree } from '../hostile/harness.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

/** Every path under `root` with its kind ("d", "f", "l"), relative. */
function tree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      out.set(path.relative(root, full), e.isDirectory() ? 'd' : e.isSymbolicLink() ? 'l' : 'f');
      if (e.isDirectory()) walk(full);
    }
  };
  walk(root);
  return out;
}

/**
 * Folders every Ubuntu server has before any install (base-files, systemd, apt, cron),
 * which the sandbox lacks; and /etc/nginx/conf.d, which the stand-in apt-get never
 * removes on purge (the real one does: the e2e compares /etc on a real server).
 */
const SYSTEM_FOLDERS = new Set([
  'etc/apt', 'etc/apt/sources.list.d', 'etc/cron.d', 'etc/nginx', 'etc/nginx/conf.d', 'etc/systemd', 'etc/systemd/system',
  'root', 'root/.config', 'root/.cache', 'run', 'tmp', 'opt', 'usr', 'usr/local', 'usr/local/bin', 'usr/share', 'usr/share/keyrings',
  'var', 'var/backups', 'var/lib', 'var/lib/systemd', 'var/lib/systemd/linger', 'var/log',
]);

describe('uninstall', { timeout: 300_000 }, () => {
  it('after a backup, removes everything the install added: nothing of ours remains but the backups, listed as left', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const before = tree(sb.root);
    const installed = await sb.install(['--channel', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(installed.exitCode, String(installed.stderr)).toBe(0);
    const added = JSON.parse(sb.read('var/lib/service-deploy/packages.json')!).packages as string[];
    expect(added).toEqual(expect.arrayContaining(['nginx', 'tailscale', 'google-chrome-stable']));

    // --check and a refusal without --yes change nothing.
    const deployed = snapshotTree(sb.root);
    const check = await runBinary(['uninstall', '--check', '--json'], { env: sb.env() });
    expect(check.exitCode, String(check.stderr)).toBe(0);
    const plan = jsonOutput('uninstall-plan', check.stdout);
    expect(plan.mode).toBe('check');
    expect(plan.backup.entries).toBeGreaterThan(0);
    expect(plan.remove).toEqual(expect.arrayContaining(['/root/.openclaw', '/etc/nginx/conf.d/service-channel.conf', '/etc/systemd/system/nginx.service.d/service-deploy-hardening.conf', '/etc/apt/sources.list.d/google-chrome.list', '/usr/local/bin/service-deploy', '/var/log/service-deploy']));
    expect(plan.purge).toEqual([...added].sort());
    const refused = await runBinary(['uninstall'], { env: sb.env() });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('--yes');
    expect(snapshotTree(sb.root)).toEqual(deployed);

    sb.clearCalls();
    const r = await runBinary(['uninstall', '--yes', '--json'], { env: sb.env() });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    // The gateway (a writer of the databases) was stopped before the backup, not only disabled after it.
    const unitCalls = sb.calls('systemctl').map((c) => c.args.join(' ')).filter((c) => c.includes(LAYOUT.gatewayUnit));
    const stopAt = unitCalls.findIndex((c) => / stop /.test(` ${c} `));
    expect(stopAt, unitCalls.join('\n')).toBeGreaterThanOrEqual(0);
    expect(unitCalls.slice(0, stopAt).some((c) => c.includes('disable'))).toBe(false);
    const out = jsonOutput('uninstall', r.stdout);
    expect(out.backup).toMatch(/^\/tmp\/openclaw-backup-\d{8}-\d{6}\.tar\.gz$/);
    expect(out.backupCopy).toBe(`/var/backups/service-deploy/${path.basename(out.backup)}`);
    expect(out.purged).toEqual([...added].sort());
    expect(out.removed).toEqual(expect.arrayContaining(['/root/.openclaw', '/var/lib/service-deploy', '/usr/local/bin/service-deploy', '/var/lib/systemd/linger/root', '/etc/systemd/system/service-channel-firewall.service', '/etc/systemd/system/nginx.service.d/service-deploy-hardening.conf', '/etc/systemd/system/nginx.service.d']));
    expect(out.left.map((l: { what: string }) => l.what)).toEqual([out.backup, '/var/backups/service-deploy/']);

    // The tree: what is new since before the install is the two backups and bare system folders.
    const after = tree(sb.root);
    const newFiles = [...after].filter(([p, kind]) => !before.has(p) && kind !== 'd').map(([p]) => `/${p}`);
    expect(newFiles.sort()).toEqual([out.backup, out.backupCopy].sort());
    const newFolders = [...after].filter(([p, kind]) => !before.has(p) && kind === 'd' && !SYSTEM_FOLDERS.has(p)).map(([p]) => p);
    expect(newFolders).toEqual(['var/backups/service-deploy']);
    // And the machine's state: services off, mesh logged out, the packages the install added gone.
    const dpkg = fs.readFileSync(path.join(sb.state, 'dpkg-installed'), 'utf8').split('\n').filter(Boolean);
    expect(dpkg.filter((p) => added.includes(p))).toEqual([]);
    expect(fs.existsSync(path.join(sb.state, 'ts-up'))).toBe(false);
    expect(fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active'))).toBe(false);
    expect(sb.calls('tailscale').some((c) => c.args[0] === 'logout')).toBe(true);

    // Again on the emptied server: nothing to back up or remove, still exit 0.
    const again = await runBinary(['uninstall', '--yes'], { env: sb.env() });
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(again.stdout).toContain('backup: none');
    expect(again.stdout).not.toContain('removed ');

    // The backup it wrote brings everything back.
    const restored = await runBinary(['restore', out.backupCopy], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(restored.exitCode, String(restored.stderr).slice(-2000)).toBe(0);
    expect(sb.read('root/.openclaw/channel.env')).toContain('SERVICE_CHANNEL_TOKEN=');
  });

  it('leaves a package of ours that apt would remove together with one the install did not add, and says why', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    expect((await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env)).exitCode).toBe(0);
    fs.writeFileSync(path.join(sb.state, 'apt-also-removes'), 'customer-app\n');
    const r = await runBinary(['uninstall', '--yes', '--json'], { env: sb.env() });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const out = jsonOutput('uninstall', r.stdout);
    expect(out.purged).toEqual([]);
    const why = out.left.find((l: { what: string }) => l.what.startsWith('packages '));
    expect(why.why).toContain('would also remove customer-app');
    expect(sb.calls('apt-get').filter((c) => c.args.includes('purge') && !c.args.includes('-s'))).toEqual([]);
  });
});
