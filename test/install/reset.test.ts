import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, describe, expect, it } from 'vitest';
import { runBinary } from '../helpers/binary.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

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

describe('--reset-clean and restore', () => {
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
    expect(fs.existsSync(path.join(sb.root, 'opt/service-deploy/node/lib/node_modules/openclaw/package.json'))).toBe(true);
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
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('root/.openclaw/workspace/notes');
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
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('never has');
    expect(fs.existsSync(path.join(sb.root, 'etc/passwd'))).toBe(false);
  });
});
