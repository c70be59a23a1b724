import { randomBytes } from 'node:crypto';
import { constants as fsc } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { PathMap } from './paths.js';

export interface Owner {
  uid: number;
  gid: number;
}
export const ROOT_OWNER: Owner = { uid: 0, gid: 0 };

export interface FileInfo {
  mode: number; // permission bits only, e.g. 0o600
  uid: number;
  gid: number;
  size: number;
  mtimeMs: number;
  isDirectory: boolean;
}

export interface WriteOptions {
  /** Permission bits; required so nothing is created with a guessed mode. */
  mode: number;
  owner?: Owner;
}

/**
 * Files on the machine, addressed by absolute program paths (see PathMap).
 * Writes are atomic: a temp file in the same folder, fsync, chmod/chown, rename,
 * fsync of the folder. A reader (or a crash) sees the old file or the new one,
 * never a mix.
 */
export class Files {
  constructor(private readonly paths: PathMap) {}

  real(p: string): string {
    return this.paths.real(p);
  }

  async read(p: string): Promise<string | undefined> {
    try {
      return await fs.readFile(this.real(p), 'utf8');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async readBytes(p: string): Promise<Buffer | undefined> {
    try {
      return await fs.readFile(this.real(p));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async stat(p: string): Promise<FileInfo | undefined> {
    try {
      const s = await fs.lstat(this.real(p));
      return {
        mode: s.mode & 0o7777,
        uid: s.uid,
        gid: s.gid,
        size: s.size,
        mtimeMs: s.mtimeMs,
        isDirectory: s.isDirectory(),
      };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async exists(p: string): Promise<boolean> {
    return (await this.stat(p)) !== undefined;
  }

  async list(dir: string): Promise<string[]> {
    try {
      return (await fs.readdir(this.real(dir))).sort();
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  async ensureDir(dir: string, mode: number, owner?: Owner): Promise<void> {
    const real = this.real(dir);
    await fs.mkdir(real, { recursive: true, mode });
    await fs.chmod(real, mode);
    if (owner) await chownIfPermitted(real, owner);
  }

  async write(p: string, content: string | Uint8Array, options: WriteOptions): Promise<void> {
    const target = this.real(p);
    const dir = path.dirname(target);
    await fs.mkdir(dir, { recursive: true, mode: 0o755 });
    const temp = path.join(dir, `.${path.basename(target)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    // Created 0600 whatever the final mode: a secret never sits in a readable temp file.
    const handle = await fs.open(temp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600);
    try {
      await handle.writeFile(content);
      await handle.sync();
      if (options.owner) await chownIfPermitted(temp, options.owner, handle);
      await handle.chmod(options.mode);
    } catch (error) {
      await handle.close();
      await fs.rm(temp, { force: true });
      throw error;
    }
    await handle.close();
    try {
      await fs.rename(temp, target);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw error;
    }
    await syncDir(dir);
  }

  async chmod(p: string, mode: number): Promise<void> {
    await fs.chmod(this.real(p), mode);
  }

  async chown(p: string, owner: Owner): Promise<void> {
    await chownIfPermitted(this.real(p), owner);
  }

  async remove(p: string): Promise<void> {
    await fs.rm(this.real(p), { recursive: true, force: true });
  }

  async rename(from: string, to: string): Promise<void> {
    await fs.rename(this.real(from), this.real(to));
  }
}

export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** chown needs root; an unprivileged sandbox run keeps the caller as owner. */
async function chownIfPermitted(p: string, owner: Owner, handle?: fs.FileHandle): Promise<void> {
  if (process.getuid?.() !== 0) return;
  if (handle) await handle.chown(owner.uid, owner.gid);
  else await fs.chown(p, owner.uid, owner.gid);
}
