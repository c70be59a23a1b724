import path from 'node:path';
import * as z from '../zod.js';
import type { Owner } from '../host/files.js';
import { ROOT_OWNER } from '../host/files.js';
import type { Host } from '../host/index.js';
import { Inspector, sha256Of, type PathInfo } from '../host/inspect.js';
import { LAYOUT } from '../layout.js';
import type { ProgramFiles } from '../runtime/openclaw.js';
import { isInPlaces, type WrittenFile, type WrittenFolder } from './writes.js';

/**
 * The install manifest (/var/lib/service-deploy/manifest.json, 0600): every file,
 * link and folder service-deploy wrote, with its type, owner, mode and SHA-256 (or,
 * for a file the runtime rewrites itself, a note that its managed keys are checked
 * instead). Every writer (install, guard, doctor --fix) records what it wrote right
 * after writing it, each time replacing the manifest atomically; doctor compares the
 * machine with it. It lives in the state folder, so a reset removes it and a backup
 * keeps it.
 */
export const MANIFEST_SCHEMA_VERSION = 1;

/**
 * - `sha256`: the content must hash to the recorded value;
 * - `structure`: a file the runtime rewrites itself (openclaw.json); doctor checks the
 *   keys we own (the runtime-config check), the manifest only its type, owner and mode;
 * - `metadata`: type, owner and mode only (folders).
 */
export type EntryCheck = 'sha256' | 'structure' | 'metadata';
export type EntryType = 'file' | 'symlink' | 'directory';

export interface ManifestEntry {
  path: string;
  type: EntryType;
  uid: number;
  gid: number;
  /** Permission bits the file must have. */
  mode: number;
  check: EntryCheck;
  /** Root-only file: it must never be readable by group or others. */
  secret: boolean;
  sha256?: string;
  size?: number;
  /** Symbolic link target. */
  target?: string;
  /**
   * lstat fingerprint right after the write. While inode, size, mtime and ctime are
   * unchanged the content is too (ctime moves on every write and cannot be set back),
   * so doctor hashes a big file (our binary, Node) only when the fingerprint moved.
   */
  stamp?: { ino: number; mtimeMs: number; ctimeMs: number };
}

/**
 * The state folder: the manifest's home, and the answers', the added packages', the
 * stamps' (their writers declare them). Every backup holds it.
 */
export const STATE_DIR: WrittenFolder = { path: LAYOUT.stateDir, type: 'folder', mode: 0o700, check: 'metadata', life: 'backup' };
/** The manifest itself: not an entry of its own (doctor checks its mode and owner apart). */
export const MANIFEST_FILE: WrittenFile = { path: LAYOUT.manifestFile, type: 'file', mode: 0o600 };

/** An absolute, normalized path: the shape every entry must have before its place is asked. */
function isCleanAbsolute(p: string): boolean {
  return path.posix.isAbsolute(p) && path.posix.normalize(p) === p;
}

const NOT_A_PLACE = 'not a place service-deploy writes';

const MODE = /^0[0-7]{3,4}$/;
const EntryShape = z.strictObject({
  path: z.string().check(z.refine(isCleanAbsolute, NOT_A_PLACE)),
  type: z.enum(['file', 'symlink', 'directory']),
  uid: z.int().check(z.nonnegative()),
  gid: z.int().check(z.nonnegative()),
  mode: z.string().check(z.regex(MODE, 'an octal mode such as "0600"')),
  check: z.enum(['sha256', 'structure', 'metadata']),
  secret: z.boolean(),
  sha256: z.optional(z.string().check(z.regex(/^[0-9a-f]{64}$/))),
  size: z.optional(z.int().check(z.nonnegative())),
  target: z.optional(z.string().check(z.minLength(1))),
  stamp: z.optional(z.object({ ino: z.number(), mtimeMs: z.number(), ctimeMs: z.number() })),
});
type EntryShape = z.infer<typeof EntryShape>;
const EntryJson = EntryShape.check(
  z.refine((e: EntryShape) => e.check !== 'sha256' || e.type !== 'file' || e.sha256 !== undefined, 'a sha256 entry without its hash'),
  z.refine((e: EntryShape) => e.type !== 'symlink' || e.target !== undefined, 'a link without its target'),
  // A link's own mode is always 0777 and never used (doctor does not chmod links).
  z.refine((e: EntryShape) => e.type === 'symlink' || (parseInt(e.mode, 8) & 0o7002) === 0, { message: 'no setuid, setgid, sticky or world-writable mode', path: ['mode'] }),
);

const ManifestJson = z.strictObject({
  schemaVersion: z.literal(MANIFEST_SCHEMA_VERSION),
  comment: z.optional(z.string()),
  entries: z.array(EntryJson),
});

export interface ManifestRead {
  /** Path -> entry; undefined when there is no usable manifest. */
  entries?: Map<string, ManifestEntry>;
  /** Why the manifest is not usable (missing, not JSON, an invalid entry). */
  problem?: string;
  missing?: boolean;
}

/** The last manifest text parsed and what it gave: several steps and checks read the same file in one run. */
let lastParsed: { text: string; read: ManifestRead; listed: string[] } | undefined;

/**
 * The manifest as on disk. A manifest is input from disk, and `doctor --fix` chmods and
 * chowns what it names and uninstall removes it: those readers pass `places`, the places
 * service-deploy writes (derived from what its modules declare: install/footprint.ts),
 * and an entry outside them (or a setuid, setgid or world-writable mode, anywhere) makes
 * the manifest invalid. A writer recording what it wrote reads it without: it keeps
 * what it does not know, and the install drops what is not ours (install/footprint.ts).
 */
export async function readManifest(host: Host, places?: readonly string[]): Promise<ManifestRead> {
  const text = await host.files.read(LAYOUT.manifestFile);
  if (text === undefined) return { missing: true, problem: `${LAYOUT.manifestFile} is missing` };
  // The same text parses to the same entries (their objects are never changed, only replaced in a copy of the map).
  if (lastParsed?.text !== text) lastParsed = { text, ...parseManifest(text) };
  const { read, listed } = lastParsed;
  if (!read.entries) return read;
  const outside = places ? listed.findIndex((p) => !isInPlaces(p, places)) : -1;
  if (outside >= 0) return { problem: `${LAYOUT.manifestFile} is not a valid manifest: entries.${outside}.path (${listed[outside]}): ${NOT_A_PLACE}` };
  return { ...read, entries: new Map(read.entries) };
}

/** The manifest's entries, and their paths in the file's order (a problem names an entry by its index). */
function parseManifest(text: string): { read: ManifestRead; listed: string[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { read: { problem: `${LAYOUT.manifestFile} is not JSON: ${(error as Error).message}` }, listed: [] };
  }
  const result = ManifestJson.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const where = issue.path.length ? issue.path.join('.') : '(top level)';
    const entryPath = issue.path[0] === 'entries' && typeof issue.path[1] === 'number' ? (parsed as { entries: Array<{ path?: unknown }> }).entries[issue.path[1]]?.path : undefined;
    return { read: { problem: `${LAYOUT.manifestFile} is not a valid manifest: ${where}${typeof entryPath === 'string' ? ` (${entryPath})` : ''}: ${issue.message}` }, listed: [] };
  }
  const entries = new Map<string, ManifestEntry>();
  for (const e of result.data.entries) entries.set(e.path, { ...e, mode: parseInt(e.mode, 8) });
  return { read: { entries }, listed: result.data.entries.map((e) => e.path) };
}

export function manifestContent(entries: Iterable<ManifestEntry>): string {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return `${JSON.stringify(
    {
      schemaVersion: MANIFEST_SCHEMA_VERSION,
      comment: 'Written by service-deploy: every file it wrote, checked by `service-deploy doctor` (docs/operations.md). Do not edit.',
      entries: sorted.map((e) => ({
        path: e.path,
        type: e.type,
        uid: e.uid,
        gid: e.gid,
        mode: `0${e.mode.toString(8).padStart(3, '0')}`,
        check: e.check,
        secret: e.secret,
        ...(e.sha256 !== undefined ? { sha256: e.sha256 } : {}),
        ...(e.size !== undefined ? { size: e.size } : {}),
        ...(e.target !== undefined ? { target: e.target } : {}),
        ...(e.stamp ? { stamp: e.stamp } : {}),
      })),
    },
    null,
    2,
  )}\n`;
}

/**
 * One writer per Host: loads the manifest once, then applies each change in order
 * (a promise chain, so concurrent records cannot lose each other) and replaces the
 * file atomically after every change. A manifest that cannot be read is started
 * afresh (the install's last step records what is missing).
 */
class Recorder {
  private state: Promise<Map<string, ManifestEntry>> | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly host: Host) {}

  private load(): Promise<Map<string, ManifestEntry>> {
    this.state ??= (async () => {
      const read = await readManifest(this.host);
      if (read.problem && !read.missing) this.host.log.warn(`${read.problem}; starting a new manifest`);
      return read.entries ?? new Map();
    })();
    return this.state;
  }

  update(change: (entries: Map<string, ManifestEntry>) => boolean): Promise<void> {
    const next = this.chain.then(async () => {
      const entries = await this.load();
      if (!change(entries)) return;
      if (!(await this.host.files.exists(STATE_DIR.path))) await this.host.files.ensureDir(STATE_DIR.path, STATE_DIR.mode!);
      await this.host.files.write(MANIFEST_FILE.path, manifestContent(entries.values()), { mode: MANIFEST_FILE.mode, owner: ROOT_OWNER });
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** The entries as recorded so far in this run (or on disk). */
  async entries(): Promise<ReadonlyMap<string, ManifestEntry>> {
    await this.chain;
    return this.load();
  }
}

const recorders = new WeakMap<Host, Recorder>();

export function manifestRecorder(host: Host): Recorder {
  let recorder = recorders.get(host);
  if (!recorder) {
    recorder = new Recorder(host);
    recorders.set(host, recorder);
  }
  return recorder;
}

export interface RecordOptions {
  /** The mode the file must have (what was written). */
  mode: number;
  owner?: Owner;
  check?: EntryCheck;
}

function entryFor(p: string, info: PathInfo | undefined, options: RecordOptions & { type: EntryType; sha256?: string; size?: number; target?: string }): ManifestEntry {
  const owner = options.owner ?? ROOT_OWNER;
  const check = options.check ?? (options.type === 'directory' ? 'metadata' : 'sha256');
  return {
    path: p,
    type: options.type,
    uid: owner.uid,
    gid: owner.gid,
    mode: options.mode,
    check,
    secret: options.type === 'file' && (options.mode & 0o077) === 0,
    ...(check === 'sha256' && options.sha256 !== undefined ? { sha256: options.sha256 } : {}),
    ...(check === 'sha256' && options.size !== undefined ? { size: options.size } : {}),
    ...(options.target !== undefined ? { target: options.target } : {}),
    ...(info && options.type !== 'directory' ? { stamp: { ino: info.ino, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs } } : {}),
  };
}

/** Records a file just written with `content` (hashed in memory, no re-read). */
export async function recordWrittenFile(host: Host, p: string, content: string | Uint8Array, options: RecordOptions): Promise<void> {
  const info = await new Inspector(host.paths).info(p);
  const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.byteLength;
  const entry = entryFor(p, info, { ...options, type: 'file', sha256: sha256Of(content), size: bytes });
  await manifestRecorder(host).update((entries) => {
    entries.set(p, entry);
    return true;
  });
}

/** The manifest entry for what is on disk at `p` now, or undefined when nothing is there. */
async function entryFromDisk(inspector: Inspector, p: string, options: Partial<RecordOptions>): Promise<ManifestEntry | undefined> {
  const info = await inspector.info(p);
  if (!info || info.type === 'other') return undefined;
  const mode = options.mode ?? info.mode;
  const base = { ...options, mode, type: info.type };
  if (info.type !== 'file') return entryFor(p, info, { ...base, target: info.target });
  const hashed = options.check === 'sha256' || options.check === undefined;
  return entryFor(p, info, { ...base, sha256: hashed ? await inspector.sha256(p) : undefined, size: info.size });
}

/**
 * Records what is on disk now (files written by another program: npm, a download; a
 * folder; a link), each with the mode it must keep (default: the one it has), in one
 * manifest update. Paths that do not exist are skipped.
 */
export async function recordFromDisk(host: Host, ...items: Array<string | { path: string; options?: Partial<RecordOptions> }>): Promise<void> {
  const inspector = new Inspector(host.paths);
  const found = await Promise.all(
    items.map((item) => (typeof item === 'string' ? entryFromDisk(inspector, item, {}) : entryFromDisk(inspector, item.path, item.options ?? {}))),
  );
  const entries = found.filter((e): e is ManifestEntry => e !== undefined);
  if (entries.length === 0) return;
  await manifestRecorder(host).update((map) => {
    for (const e of entries) map.set(e.path, e);
    return true;
  });
}

/**
 * Records an installed program's files (see runtime/openclaw.ts ProgramFiles), and for
 * a link (npm links programs into bin/) the file it runs too, when that lies in the
 * program's own folder.
 */
export async function recordProgramFiles(host: Host, files: ProgramFiles): Promise<void> {
  const inspector = new Inspector(host.paths);
  const paths = [...files.required, ...files.optional];
  for (const p of [...paths]) {
    const info = await inspector.info(p);
    const target = info?.type === 'symlink' ? path.posix.resolve(path.posix.dirname(p), info.target!) : undefined;
    if (target && target.startsWith(`${files.tree}/`) && !paths.includes(target)) paths.push(target);
  }
  await recordFromDisk(host, ...paths);
}

/** Files bigger than this are hashed only when their lstat fingerprint moved. */
export const HASH_BY_STAMP_ABOVE = 1024 * 1024;

export type Difference =
  | { kind: 'missing' }
  | { kind: 'type'; actual: PathInfo }
  | { kind: 'owner'; actual: PathInfo }
  | { kind: 'mode'; actual: PathInfo }
  | { kind: 'target'; actual: PathInfo }
  | { kind: 'content'; actual: PathInfo; sha256: string };

/**
 * How the machine differs from one manifest entry: missing, another type, owner (only
 * checked when running as root, as only root can chown), mode, link target, content.
 * Content is compared for `sha256` entries; a big file whose fingerprint is unchanged
 * is not re-read.
 */
export async function compareEntry(inspector: Inspector, entry: ManifestEntry, options: { owners?: boolean } = {}): Promise<Difference[]> {
  const info = await inspector.info(entry.path);
  if (!info) return [{ kind: 'missing' }];
  if (info.type !== entry.type) return [{ kind: 'type', actual: info }];
  const out: Difference[] = [];
  if ((options.owners ?? process.getuid?.() === 0) && (info.uid !== entry.uid || info.gid !== entry.gid)) out.push({ kind: 'owner', actual: info });
  if (entry.type !== 'symlink' && info.mode !== entry.mode) out.push({ kind: 'mode', actual: info });
  if (entry.type === 'symlink' && info.target !== entry.target) out.push({ kind: 'target', actual: info });
  if (entry.type === 'file' && entry.check === 'sha256' && entry.sha256) {
    const unchanged =
      info.size > HASH_BY_STAMP_ABOVE &&
      entry.stamp !== undefined &&
      info.size === entry.size &&
      info.ino === entry.stamp.ino &&
      info.mtimeMs === entry.stamp.mtimeMs &&
      info.ctimeMs === entry.stamp.ctimeMs;
    if (!unchanged) {
      const sha256 = await inspector.sha256(entry.path);
      if (sha256 !== entry.sha256) out.push({ kind: 'content', actual: info, sha256: sha256 ?? '' });
    }
  }
  return out;
}

/**
 * For an install step: why a package it installed must be installed again (a file it
 * needs is missing, or one the manifest recorded changed), or undefined.
 */
export async function installedFilesProblem(host: Host, required: readonly string[], recorded: readonly string[] = required): Promise<string | undefined> {
  const inspector = new Inspector(host.paths);
  for (const p of required) {
    const info = await inspector.info(p);
    if (!info) return `${p} is missing`;
    if (info.type === 'symlink' && !(await inspector.info(path.posix.resolve(path.posix.dirname(p), info.target!)))) return `${p} points to ${info.target}, which is missing`;
  }
  const { entries } = await readManifest(host);
  for (const p of recorded) {
    const entry = entries?.get(p);
    if (!entry) continue;
    const diff = (await compareEntry(inspector, entry)).find((d) => d.kind === 'missing' || d.kind === 'type' || d.kind === 'content' || d.kind === 'target');
    if (diff) return `${p} ${diff.kind === 'missing' ? 'is missing' : 'changed since it was installed'}`;
  }
  return undefined;
}

/**
 * After a chmod or chown of files whose content was just verified: only their ctime
 * moved, so their fingerprints are taken again (no re-hash of a big file next time).
 */
export async function restampRecorded(host: Host, paths: readonly string[]): Promise<void> {
  const inspector = new Inspector(host.paths);
  const infos = await Promise.all(paths.map(async (p) => [p, await inspector.info(p)] as const));
  await manifestRecorder(host).update((entries) => {
    let changed = false;
    for (const [p, info] of infos) {
      const entry = entries.get(p);
      if (!entry?.stamp || !info) continue;
      entries.set(p, { ...entry, stamp: { ino: info.ino, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs } });
      changed = true;
    }
    return changed;
  });
}

/** Takes files we removed on purpose (a schedule turned off) out of the manifest, so doctor does not miss them. */
export async function forgetRecorded(host: Host, paths: readonly string[]): Promise<void> {
  await manifestRecorder(host).update((entries) => {
    let changed = false;
    for (const p of paths) changed = entries.delete(p) || changed;
    return changed;
  });
}
