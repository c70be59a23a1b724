import { randomBytes } from './crypto.js';
import fs from 'node:fs';

/**
 * Every temp file or folder service-deploy makes lives next to its target and is
 * named `.<target name>.sd-tmp-<pid>-<start>-<random>`: the pid and start time of the
 * process that made it (as /proc/<pid>/stat counts it), so a later run can tell a
 * temp file whose maker is gone (kill -9, power loss) from one still in use, and
 * remove it (`sweepTemps`). Nothing else we write has this mark.
 */
export const TEMP_MARK = '.sd-tmp-';
const TEMP_NAME = /\.sd-tmp-(\d+)-(\d+)-[0-9a-f]{8}$/;

let selfStart: string | undefined;

/** Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat). */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** A temp name for `baseName` (a file name, not a path) made by this process. */
export function tempName(baseName: string): string {
  selfStart ??= processStartTime(process.pid) ?? '0';
  return `.${baseName}${TEMP_MARK}${process.pid}-${selfStart}-${randomBytes(4).toString('hex')}`;
}

export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/** The maker of a temp name is gone: no such process, or another one under its pid. */
export function tempMakerGone(name: string): boolean {
  const match = TEMP_NAME.exec(name);
  if (!match) return false;
  const pid = Number(match[1]);
  if (pid === process.pid && match[2] === (selfStart ?? processStartTime(pid))) return false;
  const start = processStartTime(pid);
  return start === undefined || start !== match[2];
}

/**
 * A temp file name an earlier version used, in the folder it used it in (they carry no
 * maker, or a bare pid). Removed by the sweep once older than LEGACY_AGE_MS; the mesh
 * auth key at once (it must not end up in a backup).
 */
export interface LegacyTemp {
  dir: string;
  name: RegExp;
}
export const LEGACY_AGE_MS = 10 * 60_000;
