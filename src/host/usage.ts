import { lstatSync, readdirSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { isMissing } from './files.js';
import type { PathMap } from './paths.js';

/** Disk space a file or folder takes, as `du` counts it (allocated blocks, links not followed). */
export interface Usage {
  bytes: number;
  /** Files counted. */
  files: number;
  /** The walk stopped at its entry limit: `bytes` is then a lower bound. */
  truncated: boolean;
}

export interface UsageLimits {
  /** Folder levels read below the given path (0: the path itself only). */
  depth: number;
  /** Entries looked at, at most: a walk never costs more than this many lstat calls. */
  maxEntries: number;
}

const NONE: Usage = { bytes: 0, files: 0, truncated: false };

/**
 * What a store takes on disk, read in-process with a bounded walk (doctor's `stores`
 * check runs hourly-ish and in the bench: no `du`, no walk without a limit). A missing
 * path takes nothing. Sparse files (the journal, SQLite) count what is allocated.
 */
export function diskUsage(paths: PathMap, p: string, limits: UsageLimits = { depth: 0, maxEntries: 1 }): Usage {
  const budget = { left: limits.maxEntries, truncated: false };
  const total = { bytes: 0, files: 0 };
  walk(paths.real(p), limits.depth, budget, total);
  return { ...total, truncated: budget.truncated };
}

function walk(real: string, depth: number, budget: { left: number; truncated: boolean }, total: { bytes: number; files: number }): void {
  if (budget.left <= 0) {
    budget.truncated = true;
    return;
  }
  budget.left -= 1;
  let s;
  try {
    s = lstatSync(real);
  } catch (error) {
    if (isMissing(error)) return;
    throw error;
  }
  if (s.isFile()) {
    total.bytes += s.blocks * 512;
    total.files += 1;
    return;
  }
  if (!s.isDirectory() || depth <= 0) return;
  let names: string[];
  try {
    names = readdirSync(real);
  } catch (error) {
    if (isMissing(error)) return;
    throw error;
  }
  for (const name of names) {
    walk(path.join(real, name), depth - 1, budget, total);
    if (budget.truncated) return;
  }
}

/** The summed usage of several paths (each with the same limits). */
export function diskUsageOf(paths: PathMap, list: readonly string[], limits?: UsageLimits): Usage {
  return list.map((p) => diskUsage(paths, p, limits)).reduce((a, b) => ({ bytes: a.bytes + b.bytes, files: a.files + b.files, truncated: a.truncated || b.truncated }), NONE);
}

/** The size of the filesystem holding a path (bytes), or undefined where it cannot be read. */
export function filesystemSize(paths: PathMap, p: string): number | undefined {
  try {
    const s = statfsSync(paths.real(p));
    return s.blocks * s.bsize;
  } catch {
    return undefined;
  }
}
