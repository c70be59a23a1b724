import { createHash } from '../host/crypto.js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { parseStoredAnswers, type StoredAnswers } from '../answers/index.js';
import { UsageError } from '../errors.js';
import { ROOT_OWNER, type Host } from '../host/index.js';
import { fileErrorText, shown } from '../input.js';
import {
  BACKUP_ANSWERS,
  BACKUP_ROOTS,
  installMode,
  isAboveARoot,
  relativePathProblem,
  rootOf,
  symlinkProblem,
  type BackupRoot,
  type ItemKind,
} from './backup-set.js';
import { TarFormatError, readTar, typeName, type TarEntry } from './tar-reader.js';

/**
 * Backup archives from disk, which are untrusted: `inspectArchive` reads one whole
 * (gzip and tar integrity) and checks every entry against the backup set before
 * anything is written; `stageArchive` unpacks it into private folders beside the
 * places it goes; `swapIntoPlace` moves those in. Restore uses all three; the backup
 * writer uses `inspectArchive` to read its own archive back.
 */

export interface ArchiveLimits {
  maxEntryBytes: number;
  maxTotalBytes: number;
  maxEntries: number;
}

const MIB = 1024 * 1024;
export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = { maxEntryBytes: 512 * MIB, maxTotalBytes: 4096 * MIB, maxEntries: 200_000 };

/** The pax records an archive entry may carry (what tar writers put there for long names and times). */
const ACCEPTED_PAX_KEYS = new Set(['path', 'linkpath', 'size', 'mtime', 'atime', 'ctime', 'uid', 'gid', 'uname', 'gname']);
const KINDS: Record<string, ItemKind> = { '0': 'file', '5': 'directory', '2': 'symlink' };
const MAX_ANSWERS_BYTES = 65_536;

export interface ArchiveItem {
  /** Program path (absolute). */
  path: string;
  kind: ItemKind;
  size: number;
  /** The mode it gets: the install's (see installMode), never the archive's. */
  mode: number;
  archiveMode: number;
  mtimeMs: number;
  target?: string;
  sha256?: string;
}

export interface Manifest {
  /** The archive as the user named it (for messages). */
  file: string;
  sha256: string;
  items: ArchiveItem[];
  /** The roots the archive holds, in BACKUP_ROOTS order. */
  roots: BackupRoot[];
  /** Validated under the install's rules; only absent when inspected with requireAnswers false. */
  answers?: StoredAnswers;
  totalBytes: number;
}

/** The archive refused: exit 2, naming the entry and why. */
function refused(file: string, what: string, hint = 'it is not a backup service-deploy wrote, or it was changed since; nothing was changed'): UsageError {
  return new UsageError(`${file}: ${what}`, hint);
}

/** Opens an archive the user named: a regular file (after links), read-only. */
export async function openArchive(realPath: string, shownAs: string): Promise<fs.FileHandle> {
  let st;
  try {
    st = await fs.stat(realPath);
  } catch {
    throw new UsageError(`backup archive ${shownAs} does not exist`, 'give the path of a backup: the one --reset-clean or uninstall printed (/tmp/openclaw-backup-*.tar.gz), or one in /var/backups/service-deploy');
  }
  if (!st.isFile()) throw new UsageError(`backup archive ${shownAs} is not a regular file`, 'give the path of a backup: the one --reset-clean or uninstall printed (/tmp/openclaw-backup-*.tar.gz), or one in /var/backups/service-deploy');
  try {
    return await fs.open(realPath, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (error) {
    throw new UsageError(`cannot read backup archive ${shownAs}: ${fileErrorText(error)}`);
  }
}

/**
 * Streams the archive once through gunzip and the strict tar reader; returns the
 * SHA-256 of its bytes. Integrity problems become refusals naming the archive.
 */
async function scan(
  handle: fs.FileHandle,
  file: string,
  limits: ArchiveLimits,
  onEntry: Parameters<typeof readTar>[1],
): Promise<string> {
  const hash = createHash('sha256');
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  // Headers and padding on top of the data caps; a decompression bomb stops here.
  const maxBytes = limits.maxTotalBytes + limits.maxEntries * 2048 + 16 * MIB;
  try {
    await pipeline(handle.createReadStream({ start: 0, autoClose: false }), tap, zlib.createGunzip(), async (source: AsyncIterable<Buffer>) => {
      await readTar(source, onEntry, { maxBytes });
    });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    if (error instanceof TarFormatError) throw refused(file, `not a usable backup archive: ${error.message}`);
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (code.startsWith('Z_') || code === 'ERR_STREAM_PREMATURE_CLOSE') {
      const why = code === 'Z_BUF_ERROR' ? 'the gzip stream is truncated' : `not a gzip archive, or a damaged one (${(error as Error).message})`;
      throw refused(file, why);
    }
    throw error;
  }
  return hash.digest('hex');
}

/** Checks entries one by one as they are read (pass one of a restore). */
class EntryCheck {
  readonly items: ArchiveItem[] = [];
  private readonly seen = new Map<string, ItemKind>();
  /** Folders above the roots the archive listed (ignored). */
  private readonly above = new Set<string>();
  /** Folders implied by the entries so far (ancestors inside their root). */
  private readonly implied = new Set<string>();
  total = 0;

  constructor(
    private readonly file: string,
    private readonly limits: ArchiveLimits,
  ) {}

  private refuse(entry: TarEntry, why: string, hint?: string): never {
    throw refused(this.file, `entry ${entry.index} ${shown(entry.name, 120)} ${why}`, hint);
  }

  /** The item, or undefined for a folder above the roots (a repacked archive lists them; restore leaves them be). */
  check(entry: TarEntry): ArchiveItem | undefined {
    if (entry.index > this.limits.maxEntries) this.refuse(entry, `is past the limit of ${this.limits.maxEntries} entries`);
    const kind = KINDS[entry.typeflag];
    if (!entry.nameIsUtf8) this.refuse(entry, 'has a name that is not valid UTF-8');
    if (entry.typeflag === '1') this.refuse(entry, `is a hard link (to ${shown(entry.linkname, 120)}); a service-deploy backup has none`);
    if (!kind) this.refuse(entry, `is a ${typeName(entry.typeflag)}; a backup holds only files, folders and symbolic links`);
    const extra = entry.paxKeys.find((k) => !ACCEPTED_PAX_KEYS.has(k));
    if (extra) this.refuse(entry, `carries the extended header record ${shown(extra)} (sparse data, attributes or file types a backup never has)`);
    const name = kind === 'directory' && entry.name.endsWith('/') ? entry.name.slice(0, -1) : entry.name;
    const nameProblem = relativePathProblem(name);
    if (nameProblem) this.refuse(entry, nameProblem);
    const p = `/${name}`;
    if (kind === 'directory' && isAboveARoot(p) && entry.size === 0 && entry.paxKeys.every((k) => ACCEPTED_PAX_KEYS.has(k))) {
      if (this.above.has(p)) this.refuse(entry, 'appears twice in the archive');
      this.above.add(p);
      return undefined;
    }
    const root = rootOf(p);
    if (!root) this.refuse(entry, `is outside the paths a backup holds (${BACKUP_ROOTS.map((r) => r.path).join(', ')})`);
    if (p === root.path && root.kind !== kind) this.refuse(entry, `must be a ${root.kind === 'file' ? 'regular file' : 'folder'} (it is a ${typeName(entry.typeflag)})`);
    if (p !== root.path && root.kind === 'file') this.refuse(entry, `lies inside ${root.path}, which is a file`);
    if (this.seen.has(p)) this.refuse(entry, 'appears twice in the archive');
    for (let a = path.posix.dirname(p); a.length >= root.path.length; a = path.posix.dirname(a)) {
      const ancestor = this.seen.get(a);
      if (ancestor && ancestor !== 'directory') this.refuse(entry, `lies under ${a}, which the archive makes a ${ancestor === 'symlink' ? 'symbolic link' : 'file'}`);
      this.implied.add(a);
      if (a === root.path) break;
    }
    if (kind !== 'directory' && this.implied.has(p)) this.refuse(entry, `is a ${typeName(entry.typeflag)}, but earlier entries lie inside it`);
    if (kind !== 'file' && entry.size !== 0) this.refuse(entry, `is a ${typeName(entry.typeflag)} that declares ${entry.size} bytes of data`);
    const raise = 'restore --max-entry-mib / --max-total-mib raise the limits if this backup is genuine';
    if (entry.size > this.limits.maxEntryBytes) this.refuse(entry, `is ${entry.size} bytes, over the limit of ${this.limits.maxEntryBytes / MIB} MiB per entry`, raise);
    this.total += entry.size;
    if (this.total > this.limits.maxTotalBytes) this.refuse(entry, `brings the archive over the limit of ${this.limits.maxTotalBytes / MIB} MiB in total`, raise);
    if (kind === 'symlink') {
      if (!entry.linknameIsUtf8) this.refuse(entry, 'is a symbolic link whose target is not valid UTF-8');
      const problem = symlinkProblem(p, entry.linkname);
      if (problem) this.refuse(entry, problem);
    }
    if (p === BACKUP_ANSWERS && entry.size > MAX_ANSWERS_BYTES) this.refuse(entry, `is larger than ${MAX_ANSWERS_BYTES} bytes`);
    this.seen.set(p, kind);
    const item: ArchiveItem = {
      path: p,
      kind,
      size: entry.size,
      mode: installMode(p, kind, entry.mode),
      archiveMode: entry.mode,
      mtimeMs: entry.mtimeMs,
      ...(kind === 'symlink' ? { target: entry.linkname } : {}),
    };
    this.items.push(item);
    return item;
  }
}

/**
 * Reads the whole archive and checks every entry (types, names, the backup set,
 * symbolic links, sizes, answers.json under the install's rules) without writing
 * anything. Any problem: a UsageError (exit 2) naming the first bad entry and why.
 */
export async function inspectArchive(
  handle: fs.FileHandle,
  file: string,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
  options: { requireAnswers?: boolean } = {},
): Promise<Manifest> {
  const check = new EntryCheck(file, limits);
  let answersText: Buffer[] | undefined;
  const sha256 = await scan(handle, file, limits, (entry) => {
    const item = check.check(entry);
    if (item?.kind !== 'file') return undefined;
    const hash = createHash('sha256');
    let left = item.size;
    const isAnswers = item.path === BACKUP_ANSWERS;
    if (isAnswers) answersText = [];
    return (chunk: Buffer) => {
      hash.update(chunk);
      if (isAnswers) answersText!.push(Buffer.from(chunk));
      left -= chunk.length;
      if (left === 0) item.sha256 = hash.digest('hex');
    };
  });
  for (const item of check.items) if (item.kind === 'file' && item.size === 0) item.sha256 = createHash('sha256').digest('hex');
  let answers: StoredAnswers | undefined;
  if (answersText === undefined) {
    if (options.requireAnswers !== false) throw refused(file, `holds no ${BACKUP_ANSWERS.slice(1)} (every service-deploy backup has the answers)`);
  } else {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(answersText));
    } catch {
      throw refused(file, `${BACKUP_ANSWERS.slice(1)} is not valid UTF-8`);
    }
    answers = parseStoredAnswers(text, `${file}: ${BACKUP_ANSWERS.slice(1)}`);
  }
  const present = new Set(check.items.map((i) => rootOf(i.path)!.path));
  return {
    file,
    sha256,
    items: check.items,
    roots: BACKUP_ROOTS.filter((r) => present.has(r.path)),
    answers,
    totalBytes: check.total,
  };
}

/** The folders above `p` (inside the sandbox root), top first. */
function ancestors(p: string): string[] {
  const out: string[] = [];
  for (let a = path.posix.dirname(p); a !== '/'; a = path.posix.dirname(a)) out.unshift(a);
  return out;
}

/**
 * Why the folders above a root cannot take it (a symbolic link, or not a folder), or
 * the folders that would have to be made. Read-only.
 */
export async function parentsOf(host: Host, p: string): Promise<{ problem?: string; missing: string[] }> {
  const missing: string[] = [];
  for (const a of ancestors(p)) {
    if (missing.length > 0) {
      missing.push(a);
      continue;
    }
    const info = await host.files.stat(a);
    if (!info) missing.push(a);
    else if (info.isSymlink) return { problem: `${a} is a symbolic link (restore never writes through one)`, missing };
    else if (!info.isDirectory) return { problem: `${a} is not a folder`, missing };
  }
  return { missing };
}

/** Refuses (exit 2, unsafe state) when a root's parent folders cannot take it. */
export async function checkParents(host: Host, manifest: Manifest): Promise<void> {
  for (const root of manifest.roots) {
    const { problem } = await parentsOf(host, root.path);
    if (problem) throw new UsageError(`cannot restore ${root.path}: ${problem}`, `move ${problem.split(' ')[0]} aside (or make it a real folder), then run restore again; nothing was changed`);
  }
}

export interface Staged {
  root: BackupRoot;
  /** Program path of the private folder (or temp file) holding the root's new content. */
  staging: string;
}

/**
 * Unpacks the archive (read a second time, and proven unchanged since inspection) into
 * a private temp folder (0700) or temp file beside each root, on the same filesystem.
 * Parents are made as real folders. Nothing is written through a link: the staging
 * places are new, entries are created exclusively, and no entry lies under a link.
 * Modes and owners are the install's (root, installMode), never the archive's.
 */
export async function stageArchive(host: Host, handle: fs.FileHandle, manifest: Manifest, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS): Promise<Staged[]> {
  await checkParents(host, manifest);
  const staged: Staged[] = [];
  const made = new Set<string>();
  let open: { abort(): Promise<void> } | undefined;
  try {
    for (const root of manifest.roots) {
      for (const a of (await parentsOf(host, root.path)).missing) await host.files.mkdir(a, 0o755, ROOT_OWNER);
      const staging = root.kind === 'directory' ? await host.files.makeTempDir(root.path) : host.files.tempPathFor(root.path);
      staged.push({ root, staging });
      // Inside a staging folder we make folders; beside a staged file, its parent exists.
      made.add(root.kind === 'directory' ? staging : path.posix.dirname(staging));
    }
    const stagedPath = (p: string) => {
      const s = staged.find((x) => p === x.root.path || p.startsWith(`${x.root.path}/`))!;
      return s.staging + p.slice(s.root.path.length);
    };
    const ensureDir = async (dir: string): Promise<void> => {
      if (made.has(dir)) return;
      if (dir === '/') throw new Error(`internal: staging folder ${dir} outside the staging places`);
      await ensureDir(path.posix.dirname(dir));
      await host.files.mkdir(dir, 0o700, ROOT_OWNER);
      made.add(dir);
    };
    let index = 0;
    const sha256 = await scan(handle, manifest.file, limits, async (entry) => {
      const name = entry.typeflag === '5' ? entry.name.replace(/\/$/, '') : entry.name;
      if (entry.typeflag === '5' && isAboveARoot(`/${name}`)) return undefined; // listed by a repacked archive; left as it is
      const item = manifest.items[index++];
      if (!item || item.path !== `/${name}` || item.size !== entry.size) throw refused(manifest.file, 'changed while it was being restored');
      const target = stagedPath(item.path);
      if (item.kind === 'directory') {
        await ensureDir(target);
        return undefined;
      }
      await ensureDir(path.posix.dirname(target));
      if (item.kind === 'symlink') {
        await host.files.symlink(item.target!, target);
        return undefined;
      }
      const out = await host.files.createNew(target, { mode: item.mode, owner: ROOT_OWNER, mtimeMs: item.mtimeMs });
      open = out;
      const hash = createHash('sha256');
      let left = item.size;
      const finish = async () => {
        open = undefined;
        await out.close();
        if (hash.digest('hex') !== item.sha256) throw refused(manifest.file, 'changed while it was being restored');
      };
      if (left === 0) {
        await finish();
        return undefined;
      }
      return async (chunk: Buffer) => {
        hash.update(chunk);
        await out.write(chunk);
        left -= chunk.length;
        if (left === 0) await finish();
      };
    });
    if (sha256 !== manifest.sha256) throw refused(manifest.file, 'changed while it was being restored');
    // Folder modes last (deepest first), so a folder is never closed to its own children.
    const dirs = manifest.items.filter((i) => i.kind === 'directory').sort((a, b) => b.path.length - a.path.length);
    for (const dir of dirs) await host.files.chmod(stagedPath(dir.path), dir.mode);
    for (const s of staged) {
      if (s.root.kind === 'directory') {
        await host.files.chmod(s.staging, s.root.mode);
        await host.files.chown(s.staging, ROOT_OWNER);
      }
    }
    return staged;
  } catch (error) {
    await open?.abort();
    for (const s of staged) await host.files.remove(s.staging);
    throw error;
  }
}

/**
 * Moves each staged root into place: what is there goes aside (a rename, so a link
 * there is moved, never followed), the new one is renamed in, and the old ones are
 * removed once all are in. On a failure, what was moved is put back.
 */
export async function swapIntoPlace(host: Host, staged: Staged[]): Promise<void> {
  const done: Array<{ s: Staged; aside?: string }> = [];
  try {
    for (const s of staged) {
      const aside = (await host.files.stat(s.root.path)) ? host.files.tempPathFor(s.root.path) : undefined;
      if (aside) await host.files.rename(s.root.path, aside);
      done.push({ s, aside });
      await host.files.rename(s.staging, s.root.path);
    }
  } catch (error) {
    for (const { s, aside } of done.reverse()) {
      if (!(await host.files.stat(s.staging))) {
        const trash = host.files.tempPathFor(s.root.path);
        await host.files.rename(s.root.path, trash).catch(() => undefined);
        await host.files.remove(trash);
      }
      if (aside) await host.files.rename(aside, s.root.path).catch(() => undefined);
    }
    for (const s of staged) await host.files.remove(s.staging);
    throw error;
  }
  for (const { aside } of done) if (aside) await host.files.remove(aside);
}

/** A database found in an archive, extracted into a private folder. */
export interface ExtractedDatabase {
  /** Program path in the archive. */
  path: string;
  /** Program path of the private copy. */
  copy: string;
}

/** Sidecars SQLite reads beside a database: the WAL, and a hot rollback journal. */
const SQLITE_SIDECARS = ['-wal', '-journal'] as const;

/**
 * Copies every SQLite database in the archive (a file starting with SQLite's header)
 * and its WAL or journal into `dir` (a private 0700 folder), reading the archive once
 * more with the same strict reader and proving it unchanged since inspection. The
 * copies are 0600 and named by position, never by the archive's names.
 */
export async function extractDatabases(
  host: Host,
  handle: fs.FileHandle,
  manifest: Manifest,
  dir: string,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
): Promise<ExtractedDatabase[]> {
  const { isSqliteHeader, SQLITE_MAGIC } = await import('../host/sqlite.js');
  const files = new Map(manifest.items.map((item, i) => [item.path, { item, i }]));
  const sidecarOf = (p: string): { base: number; suffix: string } | undefined => {
    for (const suffix of SQLITE_SIDECARS) {
      const base = p.endsWith(suffix) ? files.get(p.slice(0, -suffix.length)) : undefined;
      if (base?.item.kind === 'file') return { base: base.i, suffix };
    }
    return undefined;
  };
  const found: ExtractedDatabase[] = [];
  let open: { abort(): Promise<void> } | undefined;
  let index = 0;
  try {
    const sha256 = await scan(handle, manifest.file, limits, (entry) => {
      const name = entry.typeflag === '5' ? entry.name.replace(/\/$/, '') : entry.name;
      if (entry.typeflag === '5' && isAboveARoot(`/${name}`)) return undefined;
      const at = index++;
      const item = manifest.items[at];
      if (!item || item.path !== `/${name}` || item.size !== entry.size) throw refused(manifest.file, 'changed while it was being checked');
      if (item.kind !== 'file' || item.size === 0) return undefined;
      const sidecar = sidecarOf(item.path);
      const copyName = sidecar ? `${sidecar.base}.sqlite${sidecar.suffix}` : `${at}.sqlite`;
      // A database is told by its first 16 bytes; a sidecar by its name beside one.
      let head: Buffer[] | undefined = sidecar ? undefined : [];
      let headBytes = 0;
      let out: Awaited<ReturnType<Host['files']['createNew']>> | undefined;
      let left = item.size;
      const start = async (): Promise<void> => {
        out = await host.files.createNew(`${dir}/${copyName}`, { mode: 0o600 });
        open = out;
        if (!sidecar) found.push({ path: item.path, copy: `${dir}/${copyName}` });
      };
      return async (chunk: Buffer) => {
        left -= chunk.length;
        if (head) {
          head.push(Buffer.from(chunk));
          headBytes += chunk.length;
          if (headBytes < SQLITE_MAGIC.length && left > 0) return;
          const first = Buffer.concat(head);
          head = undefined;
          if (!isSqliteHeader(first)) return;
          await start();
          await out!.write(first);
        } else if (!out) {
          if (!sidecar) return; // not a database
          await start();
          await out!.write(chunk);
        } else {
          await out.write(chunk);
        }
        if (left === 0 && out) {
          open = undefined;
          await out.close();
        }
      };
    });
    if (sha256 !== manifest.sha256) throw refused(manifest.file, 'changed while it was being checked');
  } catch (error) {
    await open?.abort();
    throw error;
  }
  return found;
}
