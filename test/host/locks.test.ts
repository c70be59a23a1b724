import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockBusyError } from '../../src/errors.js';
import { Locks } from '../../src/host/locks.js';
import { PathMap } from '../../src/host/paths.js';
import { cleanEnv, runBinary } from '../helpers/binary.js';
import { FIRST_INSTALL } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

const LOCK = '/run/service-deploy/install.lock';

async function startTime(pid: number): Promise<string> {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

describe('run locks', () => {
  it('lets one holder in and tells the second who holds it', async () => {
    const locks = new Locks(new PathMap(tempDir()));
    const held = await locks.acquire(LOCK, 'install');
    const second = await locks.acquire(LOCK, 'install').catch((e: unknown) => e);
    expect(second).toBeInstanceOf(LockBusyError);
    expect((second as Error).message).toContain(`pid ${process.pid}`);
    await held.release();
    const again = await locks.acquire(LOCK, 'install');
    await again.release();
  });

  it('takes over a stale lock whose owner died', async () => {
    const root = tempDir();
    const dead = await execa('sh', ['-c', 'echo $$']);
    fs.mkdirSync(path.join(root, 'run/service-deploy'), { recursive: true });
    fs.writeFileSync(path.join(root, LOCK), `${dead.stdout.trim()} 12345\n`);
    const held = await new Locks(new PathMap(root)).acquire(LOCK, 'install');
    expect(fs.readFileSync(path.join(root, LOCK), 'utf8')).toContain(String(process.pid));
    await held.release();
    expect(fs.existsSync(path.join(root, LOCK))).toBe(false);
  });

  it('the binary refuses a second install while one runs: clear message, exit 2 (refused)', async () => {
    const root = tempDir();
    const sleeper = execa('sleep', ['30']);
    try {
      fs.mkdirSync(path.join(root, 'run/service-deploy'), { recursive: true });
      fs.writeFileSync(path.join(root, LOCK), `${sleeper.pid} ${await startTime(sleeper.pid!)}\n`);
      const result = await runBinary(['install', ...FIRST_INSTALL.args], { env: cleanEnv({ SERVICE_DEPLOY_ROOT: root, ...FIRST_INSTALL.env }) });
      expect(result.stderr).toContain('another install is running');
      expect(result.stderr).toContain(`pid ${sleeper.pid}`);
      expect(result.exitCode).toBe(2);
    } finally {
      sleeper.kill();
      await sleeper.catch(() => undefined);
    }
  });

  it('names the process holding a POSIX lock (as dpkg does) from /proc/locks', async () => {
    const root = tempDir();
    const lockFile = path.join(root, 'var/lib/dpkg/lock-frontend');
    fs.mkdirSync(path.dirname(lockFile), { recursive: true });
    fs.writeFileSync(lockFile, '');
    const holder = execa('python3', ['-c', `import fcntl,sys,time
f=open(${JSON.stringify(lockFile)},'w'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)`]);
    try {
      await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()));
      const holders = await new Locks(new PathMap(root)).holders('/var/lib/dpkg/lock-frontend');
      expect(holders.map((h) => h.pid)).toEqual([holder.pid]);
      expect(holders[0]!.command).toContain('python3');
    } finally {
      holder.kill();
      await holder.catch(() => undefined);
    }
    expect(await new Locks(new PathMap(root)).holders('/var/lib/dpkg/lock-frontend')).toEqual([]);
  });
});
