import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { DeployError } from '../errors.js';
import { ROOT_OWNER, type Host } from '../host/index.js';
import { integrityProblems } from '../host/sqlite.js';
import { BACKUP_PREFIX, LAYOUT } from '../layout.js';
import { extractDatabases, inspectArchive, openArchive, type Manifest } from './archive.js';
import { BACKUP_ARCHIVE, BACKUP_DIR, BACKUP_ROOTS, TMP_DIR, installMode, relativePathProblem, symlinkProblem, type ItemKind } from './backup-set.js';
import { isLeftover } from './leftovers.js';

export { BACKUP_PATHS, BACKUP_ROOTS } from './backup-set.js';

export interface BackupItem {
  /** Program path. */
  path: string;
  kind: ItemKind;
  size: number;
  /** The mode restore will give it. */
  mode: number;
}

export interface BackupPlan {
  items: BackupItem[];
  /** What is under the backup roots but left out, and why (restore would refuse it). */
  skipped: Array<{ path: string; why: string }>;
  bytes: number;
}

/**
 * What a backup of this server holds (read-only): every file, folder and symbolic
 * link under the backup roots that restore accepts. The rest (sockets, FIFOs, links
 * pointing out, a root of the wrong kind) is listed in `skipped`; our temp files are
 * left out silently. So every backup written is one restore takes back.
 */
export async function planBackup(host: Host): Promise<BackupPlan> {
  const plan: BackupPlan = { items: [], skipped: [], bytes: 0 };
  const visit = async (p: string, rootKind?: 'directory' | 'file'): Promise<void> => {
    const info = await host.files.stat(p);
    if (!info) return;
    const nameProblem = relativePathProblem(p.slice(1));
    if (nameProblem) return void plan.skipped.push({ path: p, why: nameProblem.replace(/^has /, '') });
    const kind: ItemKind | undefined = info.isSymlink ? 'symlink' : info.isDirectory ? 'directory' : info.isFile ? 'file' : undefined;
    if (!kind) return void plan.skipped.push({ path: p, why: 'not a file, folder or symbolic link (socket, FIFO or device)' });
    if (rootKind && kind !== rootKind) return void plan.skipped.push({ path: p, why: `a ${kind} where the deployment has a ${rootKind}` });
    if (kind === 'symlink') {
      const problem = symlinkProblem(p, (await host.files.readLink(p)) ?? '');
      if (problem) return void plan.skipped.push({ path: p, why: problem.replace(/^is /, '') });
    }
    plan.items.push({ path: p, kind, size: kind === 'file' ? info.size : 0, mode: installMode(p, kind, info.mode) });
    if (kind === 'file') plan.bytes += info.size;
    if (kind === 'directory') {
      // Temp files (a crash's leftovers, the old mesh key file) never go into a backup.
      for (const name of await host.files.list(p)) if (!isLeftover(p, name)) await visit(path.posix.join(p, name));
    }
  };
  for (const root of BACKUP_ROOTS) await visit(root.path, root.kind);
  return plan;
}

/** The file name every backup has: `openclaw-backup-YYYYMMDD-HHMMSS[-n].tar.gz`. */
export const BACKUP_FILE_NAME = /^openclaw-backup-\d{8}-\d{6}(-\d+)?\.tar\.gz$/;

/**
 * `/tmp/openclaw-backup-YYYYMMDD-HHMMSS.tar.gz` (or the same name in `dir`); the n-th
 * backup of the same second gets `-n`.
 */
export function backupName(now: Date, n = 1, dir?: string, label = 'backup'): string {
  const p = (v: number) => String(v).padStart(2, '0');
  const stamp = `${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}-${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}`;
  const prefix = `${dir ?? path.posix.dirname(BACKUP_PREFIX)}/openclaw-${label}-`;
  return `${prefix}${stamp}${n > 1 ? `-${n}` : ''}.tar.gz`;
}

export interface CheckedDatabase {
  /** Program path of the database in the archive. */
  path: string;
  /** What `PRAGMA integrity_check` said ("ok", or its first problems). */
  integrity: string;
}

/**
 * Every SQLite database in an archive passes `PRAGMA integrity_check`: each is copied
 * with its WAL (if any) into a private temp folder and opened there with node:sqlite
 * (host/sqlite.ts). Returns what was checked; the problems are in `integrity`.
 */
export async function checkArchiveDatabases(host: Host, handle: FileHandle, manifest: Manifest): Promise<CheckedDatabase[]> {
  const dir = await host.files.makeTempDir('/tmp/openclaw-db-check');
  try {
    const found = await extractDatabases(host, handle, manifest, dir);
    const checked: CheckedDatabase[] = [];
    for (const db of found) {
      const problems = await integrityProblems(host.paths.real(db.copy));
      checked.push({ path: db.path, integrity: problems.length === 0 ? 'ok' : problems.join('; ') });
    }
    return checked;
  } finally {
    await host.files.remove(dir);
  }
}

/** The databases that did not pass, in words, or undefined. */
export function databaseProblems(checked: readonly CheckedDatabase[]): string | undefined {
  const bad = checked.filter((c) => c.integrity !== 'ok');
  return bad.length ? bad.map((c) => `${c.path}: ${c.integrity.slice(0, 200)}`).join('; ') : undefined;
}

/** node-tar writes a second name of a file as a hard link; restore refuses those, so every file goes in whole. */
class NoHardLinks extends Map<`${number}:${number}`, string> {
  override has(): boolean {
    return false;
  }
  override set(): this {
    return this;
  }
}

export interface WrittenBackup {
  archive: string;
  entries: number;
  bytes: number;
  skipped: BackupPlan['skipped'];
  /** Every SQLite database in it, checked (all "ok": a backup with a bad one is not published). */
  databases: CheckedDatabase[];
}

export interface BackupOptions {
  /** The folder the archive goes to (default /tmp, 1777); made 0700 when it is not /tmp. */
  dir?: string;
  /** `openclaw-<label>-<stamp>.tar.gz` (default `backup`; an upgrade's is `pre-upgrade`, which --keep never prunes). */
  label?: string;
}

/**
 * Writes a gzip tar of the backup plan (names relative to /; no owners: restore
 * gives everything the install's), 0600 from the first byte, as a temp
 * file in /tmp (or `dir`); reads it back whole with restore's own checks and compares
 * it with the plan; checks every SQLite database in it (`PRAGMA integrity_check`);
 * then gives it its name, never replacing an existing backup (two in the same second
 * get -2, -3...). The caller stops the database writers first (writers.ts).
 */
export async function writeBackup(host: Host, options: BackupOptions = {}): Promise<WrittenBackup> {
  const plan = await planBackup(host);
  if (plan.items.length === 0) throw new DeployError('there is no deployment here to back up', 'nothing to back up');
  const now = host.now();
  const dir = options.dir;
  if (dir) await host.files.ensureDir(dir, BACKUP_DIR.mode!, ROOT_OWNER);
  else await host.files.ensureDir(TMP_DIR.path, TMP_DIR.mode!);
  const temp = host.files.tempPathFor(backupName(now, 1, dir, options.label));
  // tar only when a backup is written: doctor reads this module for the backup names.
  const tar = await import('tar');
  try {
    const out = await host.files.createNew(temp, { mode: BACKUP_ARCHIVE.mode, owner: ROOT_OWNER });
    try {
      const pack = tar.c(
        { gzip: true, cwd: host.paths.real('/'), portable: true, noDirRecurse: true, follow: false, strict: true, linkCache: new NoHardLinks() },
        plan.items.map((i) => i.path.slice(1)),
      );
      // An entry's error (a file that shrank while read) can come while the loop awaits
      // the write, when the iterator listens for none: without this it is an unhandled
      // 'error' event that ends the process.
      let packError: Error | undefined;
      (pack as unknown as NodeJS.EventEmitter).on('error', (error: Error) => (packError ??= error));
      for await (const chunk of pack as AsyncIterable<Buffer>) {
        if (packError) break;
        await out.write(chunk);
      }
      if (packError) throw packError;
      await out.close();
    } catch (error) {
      await out.abort();
      throw new DeployError(`could not write the backup: ${(error as Error).message}`, 'nothing was removed; check free space in /tmp and run again');
    }
    const handle = await openArchive(host.paths.real(temp), temp);
    let listed: Map<string, ItemKind>;
    let databases: CheckedDatabase[];
    try {
      // An incomplete deployment may have no answers yet: restore would say so.
      const manifest = await inspectArchive(handle, temp, undefined, { requireAnswers: false });
      listed = new Map(manifest.items.map((i) => [i.path, i.kind]));
      databases = await checkArchiveDatabases(host, handle, manifest);
    } finally {
      await handle.close();
    }
    const missing = plan.items.filter((i) => listed.get(i.path) !== i.kind).map((i) => i.path);
    if (missing.length > 0) {
      throw new DeployError(`the backup archive is incomplete (missing ${missing.slice(0, 5).join(', ')})`, 'nothing was removed; run again (files may have changed while it was written)');
    }
    const bad = databaseProblems(databases);
    if (bad) {
      throw new DeployError(
        `a database in the backup fails PRAGMA integrity_check: ${bad}`,
        'nothing was removed; the database is damaged on disk too (run `openclaw doctor` and see OpenClaw\'s backup docs), then run again',
      );
    }
    for (let n = 1; n <= 1000; n++) {
      const archive = backupName(now, n, dir, options.label);
      if (await host.files.publishNew(temp, archive)) return { archive, entries: listed.size, bytes: plan.bytes, skipped: plan.skipped, databases };
    }
    throw new DeployError(`could not find a free backup name in ${dir ?? '/tmp'}`, `remove old ${dir ?? '/tmp'}/openclaw-backup-* files and run again`);
  } finally {
    await host.files.remove(temp);
  }
}

/**
 * A copy of a written backup in LAYOUT.backupDir (0700, the copy 0600), which survives a
 * reboot (/tmp does not: Ubuntu empties it at boot). Same name, or `-n` when taken.
 */
export async function keepBackupCopy(host: Host, archive: string): Promise<string> {
  const dir = LAYOUT.backupDir;
  const info = await host.files.stat(dir);
  if (info && (!info.isDirectory || info.isSymlink)) throw new DeployError(`${dir} is not a folder`, 'move it aside and run again; nothing was removed');
  await host.files.ensureDir(dir, BACKUP_DIR.mode!, ROOT_OWNER);
  const base = path.posix.basename(archive, '.tar.gz');
  for (let n = 1; n <= 1000; n++) {
    const copy = `${dir}/${base}${n > 1 ? `-${n}` : ''}.tar.gz`;
    try {
      if (await host.files.copyNew(archive, copy, { mode: BACKUP_ARCHIVE.mode, owner: ROOT_OWNER })) return copy;
    } catch (error) {
      throw new DeployError(`could not copy the backup to ${dir}: ${(error as Error).message}`, `nothing was removed; the backup ${archive} is complete: check free space in ${dir} and run again`);
    }
  }
  throw new DeployError(`could not find a free backup name in ${dir}`, `remove old backups there and run again`);
}
