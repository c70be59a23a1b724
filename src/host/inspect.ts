import { createHash } from './crypto.js';
import fs from 'node:fs/promises';
import { closeSync, constants as fsc, fstatSync, lstatSync, openSync, readFileSync, readlinkSync } from 'node:fs';
import { isMissing } from './files.js';
import type { PathMap } from './paths.js';

/** Files up to this size are hashed from one synchronous read. */
const SMALL_FILE = 256 * 1024;

export type PathType = 'file' | 'symlink' | 'directory' | 'other';

/** What lstat says about a path, without following a symbolic link. */
export interface PathInfo {
  type: PathType;
  /** Permission bits only (0o7777). */
  mode: number;
  uid: number;
  gid: number;
  size: number;
  ino: number;
  mtimeMs: number;
  /** Changes on every write, chmod and chown, and cannot be set from user space. */
  ctimeMs: number;
  /** The link's target, for a symbolic link. */
  target?: string;
}

/**
 * Integrity reads for the install manifest and doctor: lstat with the fields a
 * fingerprint needs, and SHA-256 in-process (streamed for big files), so checking
 * many files costs no process per file.
 */
export class Inspector {
  constructor(private readonly paths: PathMap) {}

  async info(p: string): Promise<PathInfo | undefined> {
    const real = this.paths.real(p);
    let s;
    try {
      s = lstatSync(real); // synchronous: see Files.read
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    const type: PathType = s.isSymbolicLink() ? 'symlink' : s.isFile() ? 'file' : s.isDirectory() ? 'directory' : 'other';
    return {
      type,
      mode: s.mode & 0o7777,
      uid: s.uid,
      gid: s.gid,
      size: s.size,
      ino: s.ino,
      mtimeMs: s.mtimeMs,
      ctimeMs: s.ctimeMs,
      ...(type === 'symlink' ? { target: readlinkSync(real) } : {}),
    };
  }

  /** SHA-256 (hex) of a regular file's content, or undefined when it is missing. Never follows a link. */
  async sha256(p: string): Promise<string | undefined> {
    const real = this.paths.real(p);
    const hash = createHash('sha256');
    try {
      // A small file (most of ours) in one synchronous read; a big one (a binary) streamed.
      const fd = openSync(real, fsc.O_RDONLY | fsc.O_NOFOLLOW);
      try {
        const size = fstatSync(fd).size;
        if (size <= SMALL_FILE) return hash.update(readFileSync(fd)).digest('hex');
      } finally {
        closeSync(fd);
      }
      const handle = await fs.open(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      try {
        for await (const chunk of handle.createReadStream({ autoClose: false, highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
      } finally {
        await handle.close();
      }
    } catch (error) {
      if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'ELOOP') return undefined;
      throw error;
    }
    return hash.digest('hex');
  }
}

export function sha256Of(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}
