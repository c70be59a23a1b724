import { constants as fsc, createReadStream, lstatSync, readFileSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { PathMap } from './paths.js';
import { LEGACY_AGE_MS, isTempName, tempMakerGone, tempName, type LegacyTemp } from './temp.js';

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
  isFile: boolean;
  /** The path itself is a symbolic link (stat never follows one). */
  isSymlink: boolean;
}

export interface WriteOptions {
  /** Permission bits; required so nothing is created with a guessed mode. */
  mode: number;
  owner?: Owner;
}

/** A file being written by `createNew`. */
export interface NewFile {
  write(chunk: Uint8Array): Promise<void>;
  /** Syncs, sets mode/owner/time, closes; returns the bytes written. */
  close(): Promise<number>;
  /** Closes and removes it. */
  abort(): Promise<void>;
}

/** Creates a new file, never opening an existing one or following a link there. */
const NEW_FILE = fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW;

/**
 * Files on the machine, addressed by absolute program paths (see PathMap).
 * Writes are atomic: a temp file in the same folder, fsync, chmod/chown, rename,
 * fsync of the folder. A reader (or a crash) sees the old file or the new one,
 * never a mix. Temp files carry the one mark of host/temp.ts, are removed in
 * `finally`, and a crash's leftovers are removed by `sweepTemps`.
 */
export class Files {
  constructor(private readonly paths: PathMap) {}

  real(p: string): string {
    return this.paths.real(p);
  }

  // read, stat and list use the synchronous calls: the files are small and local, and
  // each of the async API's thread-pool round trips (four for a read) waits for the main
  // thread, which while the install's checks run together is busy starting processes:
  // a read of microseconds took milliseconds and held back the checks waiting for it.
  async read(p: string): Promise<string | undefined> {
    try {
      return readFileSync(this.real(p), 'utf8');
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
      const s = lstatSync(this.real(p));
      return {
        mode: s.mode & 0o7777,
        uid: s.uid,
        gid: s.gid,
        size: s.size,
        mtimeMs: s.mtimeMs,
        isDirectory: s.isDirectory(),
        isFile: s.isFile(),
        isSymlink: s.isSymbolicLink(),
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
      return readdirSync(this.real(dir)).sort();
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

  /** The temp path (program path) for `p`: next to it, with the temp mark. */
  tempPathFor(p: string): string {
    return path.posix.join(path.posix.dirname(p), tempName(path.posix.basename(p)));
  }

  async write(p: string, content: string | Uint8Array, options: WriteOptions): Promise<void> {
    const target = this.real(p);
    const dir = path.dirname(target);
    await fs.mkdir(dir, { recursive: true, mode: 0o755 });
    const temp = path.join(dir, tempName(path.basename(target)));
    try {
      await writeNewFile(temp, content, options);
      await fs.rename(temp, target);
    } finally {
      await fs.rm(temp, { force: true });
    }
    await syncDir(dir);
  }

  /**
   * Writes a file that must not exist yet (O_EXCL, never through a link): created
   * 0600, written, synced, then given its mode and owner. For temp files that hand a
   * secret to a command (the mesh auth key, a config candidate).
   */
  async writeNew(p: string, content: string | Uint8Array, options: WriteOptions): Promise<void> {
    await writeNewFile(this.real(p), content, options);
  }

  /**
   * Opens a file that must not exist yet (O_EXCL, never through a link) for writing in
   * pieces (a backup, a restored file). It is 0600 until `close` syncs it and gives it
   * its mode, owner and (optionally) time; `abort` removes it.
   */
  async createNew(p: string, options: WriteOptions & { mtimeMs?: number }): Promise<NewFile> {
    const real = this.real(p);
    const handle = await fs.open(real, NEW_FILE, 0o600);
    let bytes = 0;
    let open = true;
    const shut = async () => {
      if (open) await handle.close();
      open = false;
    };
    return {
      write: async (chunk) => {
        await handle.write(chunk);
        bytes += chunk.length;
      },
      close: async () => {
        try {
          await handle.sync();
          if (options.owner) await chownIfPermitted(real, options.owner, handle);
          await handle.chmod(options.mode);
          if (options.mtimeMs !== undefined) await handle.utimes(options.mtimeMs / 1000, options.mtimeMs / 1000);
        } finally {
          await shut();
        }
        return bytes;
      },
      abort: async () => {
        await shut();
        await fs.rm(real, { force: true });
      },
    };
  }

  /** A private folder (0700 by default) next to `nextTo`, with the temp mark; returns its program path. */
  async makeTempDir(nextTo: string, mode = 0o700): Promise<string> {
    const dir = this.tempPathFor(nextTo);
    await fs.mkdir(path.dirname(this.real(dir)), { recursive: true, mode: 0o755 });
    await fs.mkdir(this.real(dir), { mode });
    await fs.chmod(this.real(dir), mode);
    return dir;
  }

  /** One new folder (its parent must exist); fails if anything is there already. */
  async mkdir(p: string, mode: number, owner?: Owner): Promise<void> {
    const real = this.real(p);
    await fs.mkdir(real, { mode });
    await fs.chmod(real, mode);
    if (owner) await chownIfPermitted(real, owner);
  }

  /** A new symbolic link at `p` holding `target` (as given, never resolved). */
  async symlink(target: string, p: string): Promise<void> {
    await fs.symlink(target, this.real(p));
  }

  async readLink(p: string): Promise<string | undefined> {
    try {
      return await fs.readlink(this.real(p));
    } catch (error) {
      if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'EINVAL') return undefined;
      throw error;
    }
  }

  /**
   * Gives the file at `from` the name `to` only if `to` does not exist (a hard link,
   * then the old name removed): a backup never replaces another. False if `to` exists.
   */
  async publishNew(from: string, to: string): Promise<boolean> {
    try {
      await fs.link(this.real(from), this.real(to));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
    await fs.rm(this.real(from), { force: true });
    await syncDir(path.dirname(this.real(to)));
    return true;
  }

  /**
   * Copies the file at `from` to `to`, which must not exist yet (never replaced, never
   * written through a link): streamed into a temp file beside `to` (0600 until it is
   * complete), then given its mode, owner and name. False if `to` exists.
   */
  async copyNew(from: string, to: string, options: WriteOptions): Promise<boolean> {
    const temp = this.tempPathFor(to);
    try {
      const out = await this.createNew(temp, options);
      try {
        for await (const chunk of createReadStream(this.real(from)) as AsyncIterable<Buffer>) await out.write(chunk);
        await out.close();
      } catch (error) {
        await out.abort();
        throw error;
      }
      return await this.publishNew(temp, to);
    } finally {
      await fs.rm(this.real(temp), { force: true });
    }
  }

  /**
   * Copies the file, link or folder tree at `from` to `to`, which must not exist: modes
   * and times kept, links copied as links (never followed, their targets as written).
   * For program trees moved between prefixes (a Node upgrade carries the global
   * packages into the new prefix).
   */
  async copyTree(from: string, to: string): Promise<void> {
    await fs.cp(this.real(from), this.real(to), { recursive: true, verbatimSymlinks: true, preserveTimestamps: true, errorOnExist: true, force: false });
  }

  /**
   * Removes the temp files and folders in `dirs` whose maker is gone (killed, crashed),
   * and earlier versions' temp files once they are old. Returns what was removed.
   */
  async sweepTemps(dirs: readonly string[], legacy: readonly LegacyTemp[] = []): Promise<string[]> {
    const removed: string[] = [];
    for (const dir of dirs) {
      for (const name of await this.list(dir)) {
        const p = path.posix.join(dir, name);
        let orphan = isTempName(name) && tempMakerGone(name);
        if (!orphan && !isTempName(name) && legacy.some((l) => l.dir === dir && l.name.test(name))) {
          const info = await this.stat(p);
          orphan = info !== undefined && (name.startsWith('mesh-auth-key.') || Date.now() - info.mtimeMs > LEGACY_AGE_MS);
        }
        if (!orphan) continue;
        await fs.rm(this.real(p), { recursive: true, force: true });
        removed.push(p);
      }
    }
    return removed;
  }

  async chmod(p: string, mode: number): Promise<void> {
    await fs.chmod(this.real(p), mode);
  }

  async chown(p: string, owner: Owner): Promise<void> {
    await chownIfPermitted(this.real(p), owner);
  }

  async remove(p: string): Promise<void> {
    // Retried (ENOTEMPTY, EBUSY): a writer may still be adding files while the folder is
    // emptied, e.g. the npm of an install killed with -9, orphaned, finishing into *-next.
    await fs.rm(this.real(p), { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }

  async rename(from: string, to: string): Promise<void> {
    await fs.rename(this.real(from), this.real(to));
  }
}

export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

async function writeNewFile(real: string, content: string | Uint8Array, options: WriteOptions): Promise<void> {
  // Created 0600 whatever the final mode: a secret never sits in a readable file.
  const handle = await fs.open(real, NEW_FILE, 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
    if (options.owner) await chownIfPermitted(real, options.owner, handle);
    await handle.chmod(options.mode);
  } catch (error) {
    await handle.close();
    await fs.rm(real, { force: true });
    throw error;
  }
  await handle.close();
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
