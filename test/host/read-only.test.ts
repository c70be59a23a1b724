import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Files } from '../../src/host/files.js';
import { CheckModeViolation, createHost, readOnlyHost } from '../../src/host/index.js';
import { Locks } from '../../src/host/locks.js';
import { Net } from '../../src/host/net.js';
import { isReadOnlyCommand } from '../../src/host/read-only.js';
import { Services } from '../../src/host/services.js';
import { snapshotTree } from '../hostile/harness.js';
import { standIn } from '../helpers/install-ctx.js';
import { tempDir } from '../helpers/tmp.js';

/** Every method a class declares (its prototype's functions). */
function methodsOf(proto: object): string[] {
  return Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor' && typeof (proto as Record<string, unknown>)[n] === 'function');
}

function sandboxHost() {
  const root = tempDir('sd-ro-');
  fs.mkdirSync(path.join(root, 'etc/app'), { recursive: true });
  fs.writeFileSync(path.join(root, 'etc/app/config'), 'v1\n', { mode: 0o644 });
  fs.symlinkSync('config', path.join(root, 'etc/app/link'));
  const bin = tempDir('sd-ro-bin-');
  const marker = path.join(bin, 'ran');
  for (const name of ['systemctl', 'tailscale', 'apt-get', 'nginx', 'logger']) standIn(bin, name, `#!/bin/sh\necho "${name} $*" >>${marker}\n`);
  // systemctl show: every unit active and enabled.
  standIn(bin, 'systemctl', `#!/bin/sh\necho "systemctl $*" >>${marker}\n[ "$1" = show ] && printf 'ActiveState=active\\nUnitFileState=enabled\\nMainPID=7\\n'\nexit 0\n`);
  const host = createHost({ env: { PATH: `${bin}:/usr/bin:/bin`, SERVICE_DEPLOY_ROOT: root }, quiet: true });
  return { root, host, marker, ro: readOnlyHost(host) };
}

/** Arguments that would make each mutating method do its thing. */
const ARGS: Record<string, unknown[]> = {
  write: ['/etc/app/config', 'v2\n', { mode: 0o644 }],
  writeNew: ['/etc/app/new', 'x', { mode: 0o600 }],
  copyNew: ['/etc/app/config', '/etc/app/copy', { mode: 0o600 }],
  copyTree: ['/etc/app', '/etc/app-copy'],
  createNew: ['/etc/app/new', { mode: 0o600 }],
  makeTempDir: ['/etc/app/config'],
  mkdir: ['/etc/app/dir', 0o755],
  ensureDir: ['/etc/app/dir', 0o755],
  symlink: ['/etc/shadow', '/etc/app/evil'],
  publishNew: ['/etc/app/config', '/etc/app/copy'],
  sweepTemps: [['/etc/app']],
  chmod: ['/etc/app/config', 0o777],
  chown: ['/etc/app/config', { uid: 0, gid: 0 }],
  remove: ['/etc/app'],
  rename: ['/etc/app/config', '/etc/app/moved'],
};

describe('the read-only host (check mode by construction)', () => {
  it('refuses every Files method that is not a read, and the sandbox stays byte-identical', async () => {
    const { root, ro } = sandboxHost();
    const before = snapshotTree(root);
    const reads = ['real', 'read', 'readBytes', 'stat', 'exists', 'list', 'readLink', 'tempPathFor'];
    const mutators = methodsOf(Files.prototype).filter((m) => !reads.includes(m));
    // A method added to Files later is refused here until someone calls it a read.
    expect(mutators.sort()).toEqual(Object.keys(ARGS).sort());
    for (const name of mutators) {
      const call = () => (ro.files as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!(...ARGS[name]!);
      expect(call, name).toThrow(CheckModeViolation);
    }
    expect(await ro.files.read('/etc/app/config')).toBe('v1\n');
    expect((await ro.files.stat('/etc/app/link'))?.isSymlink).toBe(true);
    expect(await ro.files.readLink('/etc/app/link')).toBe('config');
    expect(await ro.files.list('/etc/app')).toEqual(['config', 'link']);
    expect(snapshotTree(root)).toEqual(before);
  });

  it('refuses service changes, locks and downloads; reads pass', async () => {
    const { root, ro, marker } = sandboxHost();
    for (const name of methodsOf(Services.prototype).filter((m) => !['isActive', 'isEnabled', 'mainPid', 'mainProcess', 'journalTail', 'resources'].includes(m))) {
      expect(() => (ro.services as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!('user', 'x.service'), name).toThrow(CheckModeViolation);
    }
    expect(await ro.services.isActive('system', 'nginx')).toBe(true); // the stand-in says active
    expect(() => ro.locks.acquire('/run/x.lock', 'x')).toThrow(CheckModeViolation);
    expect(methodsOf(Locks.prototype).filter((m) => !['holders', 'waitFree', 'liveHolder'].includes(m))).toEqual(['acquire']);
    expect(await ro.locks.waitFree('/run/x.lock', 0)).toBeUndefined(); // only reads the lock file
    expect(() => ro.net.download('https://example.invalid/x', path.join(root, 'x'))).toThrow(CheckModeViolation);
    expect(methodsOf(Net.prototype).filter((m) => !['request', 'open'].includes(m))).toEqual(['download']);
    expect(() => ro.log.attachFile(path.join(root, 'log'))).toThrow(CheckModeViolation);
    expect(fs.readFileSync(marker, 'utf8')).toBe('systemctl show --property=ActiveState,UnitFileState,MainPID,MemoryMax,MemoryHigh,MemoryCurrent,ControlGroup nginx\n');
    expect(fs.existsSync(path.join(root, 'run'))).toBe(false);
  });

  it('runs only commands on the read-only list', async () => {
    const { ro, marker } = sandboxHost();
    await expect(ro.exec.run('apt-get', ['install', '-y', 'x'])).rejects.toThrow(CheckModeViolation);
    await expect(ro.exec.run('tailscale', ['up', '--auth-key=file:/x'])).rejects.toThrow(/not on the read-only list/);
    await expect(ro.exec.run('systemctl', ['--user', 'restart', 'openclaw-gateway.service'])).rejects.toThrow(CheckModeViolation);
    await expect(ro.exec.run('nginx', ['-s', 'reload'])).rejects.toThrow(CheckModeViolation);
    await expect(ro.exec.run('logger', ['-t', 'x'])).rejects.toThrow(CheckModeViolation);
    expect((await ro.exec.run('tailscale', ['status', '--json'])).exitCode).toBe(0);
    expect((await ro.exec.run('systemctl', ['--user', 'is-enabled', 'x'])).exitCode).toBe(0);
    expect(fs.readFileSync(marker, 'utf8')).toBe('tailscale status --json\nsystemctl --user is-enabled x\n');
    expect(isReadOnlyCommand('/opt/service-deploy/node/bin/node', ['--version'])).toBe(true);
    expect(isReadOnlyCommand('/opt/service-deploy/node/bin/node', ['-e', 'x'])).toBe(false);
    expect(isReadOnlyCommand('tailscale', ['serve', 'status'])).toBe(true);
    expect(isReadOnlyCommand('getconf', ['GNU_LIBC_VERSION'])).toBe(true);
    expect(isReadOnlyCommand('getconf', ['-a'])).toBe(false);
    expect(isReadOnlyCommand('tailscale', ['serve', '--bg', 'x'])).toBe(false);
    // The channel firewall's checks read; loading, deleting or opening a port does not.
    expect(isReadOnlyCommand('nft', ['list', 'tables'])).toBe(true);
    expect(isReadOnlyCommand('nft', ['-f', '/etc/service-deploy/channel-firewall.nft'])).toBe(false);
    expect(isReadOnlyCommand('nft', ['delete', 'table', 'inet', 'service_deploy_channel'])).toBe(false);
    expect(isReadOnlyCommand('ufw', ['status'])).toBe(true);
    expect(isReadOnlyCommand('ufw', ['allow', '18790/tcp'])).toBe(false);
    expect(isReadOnlyCommand('firewall-cmd', ['--permanent', '--query-port=18790/tcp'])).toBe(true);
    expect(isReadOnlyCommand('firewall-cmd', ['--permanent', '--add-port=18790/tcp'])).toBe(false);
    expect(isReadOnlyCommand('cloud-init', ['clean'])).toBe(false);
  });

  it('is idempotent and says it is read-only', () => {
    const { host, ro } = sandboxHost();
    expect(host.readOnly).toBe(false);
    expect(ro.readOnly).toBe(true);
    expect(readOnlyHost(ro)).toBe(ro);
  });
});
