import { closeSync, constants as fsc, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { LockBusyError } from '../errors.js';
import { isMissing } from './files.js';
import type { PathMap } from './paths.js';
import { tempName } from './temp.js';

export interface LockHolder {
  pid: number;
  command?: string;
}

export interface HeldLock {
  release(): Promise<void>;
}

/**
 * Two kinds of lock:
 * - our own run locks (one install, one guard at a time): a file created with
 *   O_EXCL holding the owner's pid and process start time; a lock whose owner is
 *   gone (crash, kill -9) is stale and taken over;
 * - other programs' POSIX locks (dpkg/apt): read from /proc/locks, which names the
 *   holding pid, so we can wait for them and say who holds them.
 */
export class Locks {
  constructor(private readonly paths: PathMap) {}

  async acquire(lockPath: string, what: string): Promise<HeldLock> {
    const real = this.paths.real(lockPath);
    // Synchronous calls: taking and releasing the lock are the first and last things a
    // run does, and each async call would wait for a thread-pool round trip.
    mkdirSync(path.dirname(real), { recursive: true, mode: 0o755 });
    const identity = `${process.pid} ${await startTimeOf(process.pid)}\n`;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(real, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600);
        try {
          writeFileSync(fd, identity);
        } finally {
          closeSync(fd);
        }
        return {
          release: async () => {
            // Only remove the lock if it is still ours.
            if (readOr(real, '') === identity) rmSync(real, { force: true });
          },
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = await this.liveHolder(real);
      if (holder) {
        throw new LockBusyError(
          `another ${what} is running (pid ${holder.pid}${holder.command ? `, ${holder.command}` : ''})`,
          `wait for it to finish and run again; if no such process exists, remove ${lockPath}`,
        );
      }
      // Stale: its owner died. Move it aside atomically so two runs cannot both take it.
      const aside = path.join(path.dirname(real), tempName(path.basename(real)));
      await fs.rename(real, aside).catch(() => undefined);
      await fs.rm(aside, { force: true });
    }
    throw new LockBusyError(`could not take the ${what} lock at ${lockPath}`, 'run again');
  }

  /**
   * Waits (polling, up to `timeoutMs`) until nobody holds our run lock at `lockPath`;
   * returns the holder still there at the end, or undefined once it is free. Used by
   * the guard: an install, backup or upgrade holds the install lock while it stops
   * the gateway, and the guard must not restart it under them.
   */
  async waitFree(lockPath: string, timeoutMs: number, pollMs = 1000): Promise<LockHolder | undefined> {
    const real = this.paths.real(lockPath);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const holder = await this.liveHolder(real);
      if (!holder || holder.pid === process.pid || Date.now() >= deadline) return holder?.pid === process.pid ? undefined : holder;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  private async liveHolder(real: string): Promise<LockHolder | undefined> {
    let content: string;
    try {
      content = readFileSync(real, 'utf8');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    const [pidText, startText] = content.trim().split(/\s+/);
    const pid = Number(pidText);
    if (!Number.isInteger(pid) || pid <= 0) {
      // Being written right now by its creator (O_EXCL then write): treat as live if fresh.
      const age = Date.now() - (await fs.stat(real)).mtimeMs;
      return age < 5000 ? { pid: 0, command: 'starting' } : undefined;
    }
    const start = await startTimeOf(pid);
    if (start === undefined || (startText && startText !== String(start))) return undefined;
    return { pid, command: await commandOf(pid) };
  }

  /**
   * Processes holding a POSIX or flock lock on `lockPath` right now (from /proc/locks).
   * dpkg and apt take fcntl locks on /var/lib/dpkg/lock-frontend, /var/lib/dpkg/lock,
   * /var/lib/apt/lists/lock and /var/cache/apt/archives/lock.
   */
  async holders(lockPath: string): Promise<LockHolder[]> {
    let st;
    try {
      st = statSync(this.paths.real(lockPath));
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    const table = readOr('/proc/locks', '');
    const pids = new Set<number>();
    for (const line of table.split('\n')) {
      // "1: POSIX  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (blocked waiters are "->" lines)
      const f = line.trim().split(/\s+/);
      if (f.length < 6 || f[1] === '->') continue;
      const [major, minor, inode] = (f[5] ?? '').split(':');
      if (Number(inode) !== st.ino) continue;
      if (!sameDevice(parseInt(major ?? '', 16), parseInt(minor ?? '', 16), st.dev)) continue;
      const pid = Number(f[4]);
      if (pid > 0) pids.add(pid);
    }
    return Promise.all([...pids].map(async (pid) => ({ pid, command: await commandOf(pid) })));
  }
}

function sameDevice(procMajor: number, procMinor: number, statDev: number): boolean {
  // /proc/locks prints MAJOR:MINOR in hex; stat's dev is encoded as by new_encode_dev().
  const major = (statDev >> 8) & 0xfff;
  const minor = (statDev & 0xff) | ((statDev >> 12) & 0xfff00);
  return procMajor === major && procMinor === minor;
}

function readOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

async function startTimeOf(pid: number): Promise<number | undefined> {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime), counted after the ")" that ends the command name.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]);
  } catch {
    return undefined;
  }
}

export async function commandOf(pid: number): Promise<string | undefined> {
  try {
    const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.split('\0').filter(Boolean).join(' ').slice(0, 120) || undefined;
  } catch {
    return undefined;
  }
}
