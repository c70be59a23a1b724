import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers/binary.js';
import { waitUntil } from './helpers/budget.js';
import { tempDir } from './helpers/tmp.js';

/**
 * scripts/test-deps.sh waits for a package manager lock held by another process (fresh
 * cloud machines hold it at boot), says so naming the holder, and passes apt its own
 * lock wait. Run with stand-in apt-get/dpkg-query and a lock file of the test's own,
 * so the machine's real dpkg lock is never taken.
 */
describe('scripts/test-deps.sh', () => {
  it('waits for the lock, naming its holder, then installs with DPkg::Lock::Timeout', async () => {
    const dir = tempDir('sd-testdeps-');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    const calls = path.join(dir, 'calls');
    fs.writeFileSync(path.join(bin, 'dpkg-query'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    fs.writeFileSync(path.join(bin, 'apt-get'), `#!/bin/sh\necho "apt-get $*" >>"${calls}"\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(bin, 'systemctl'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const lock = path.join(dir, 'lock-frontend');
    fs.writeFileSync(lock, '');
    const holder = execa('python3', ['-c', `import fcntl,sys\nf=open(${JSON.stringify(lock)},'w'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.readline()`]);
    let held = '';
    holder.stdout!.on('data', (chunk: Buffer) => (held += chunk.toString()));
    try {
      await waitUntil('the lock holder to say locked', () => held.includes('locked'), { intervalMs: 20 });
      const run = execa('bash', [path.join(REPO, 'scripts/test-deps.sh')], {
        env: { PATH: `${bin}:${process.env.PATH}`, TEST_DEPS_PACKAGES: 'fake-package', TEST_DEPS_LOCKS: lock },
        reject: false,
      });
      let stderr = '';
      run.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      await waitUntil('test-deps.sh to say it waits for the lock, naming the holder', () => new RegExp(String.raw`waiting for the package manager lock \(300 s left\): pid ${holder.pid} \([^)]*python3`).test(stderr), {
        lastSeen: () => stderr.slice(-300),
      });
      expect(fs.existsSync(calls)).toBe(false); // apt-get not run while locked
      holder.stdin!.end('release\n');
      const result = await run;
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/package manager lock released after \d+ s/);
      expect(fs.readFileSync(calls, 'utf8').trim().split('\n')).toEqual([
        'apt-get -o DPkg::Lock::Timeout=300 update -qq',
        'apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends fake-package',
      ]);
    } finally {
      holder.kill();
      await holder.catch(() => undefined);
    }
  });

  it('gives up after the wait with the holder named', async () => {
    const dir = tempDir('sd-testdeps-');
    fs.writeFileSync(path.join(dir, 'dpkg-query'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'apt-get'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const lock = path.join(dir, 'lock');
    fs.writeFileSync(lock, '');
    const holder = execa('python3', ['-c', `import fcntl,sys\nf=open(${JSON.stringify(lock)},'w'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.readline()`]);
    let held = '';
    holder.stdout!.on('data', (chunk: Buffer) => (held += chunk.toString()));
    try {
      await waitUntil('the lock holder to say locked', () => held.includes('locked'), { intervalMs: 20 });
      const result = await execa('bash', [path.join(REPO, 'scripts/test-deps.sh')], {
        env: { PATH: `${dir}:${process.env.PATH}`, TEST_DEPS_PACKAGES: 'fake-package', TEST_DEPS_LOCKS: lock, TEST_DEPS_LOCK_WAIT_S: '1' },
        reject: false,
      });
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toMatch(new RegExp(String.raw`still locked after 1 s: pid ${holder.pid} \([^)]*python3`));
    } finally {
      holder.kill();
      await holder.catch(() => undefined);
    }
  });
});
