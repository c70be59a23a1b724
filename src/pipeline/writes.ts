import path from 'node:path';
import type { StoredAnswers } from '../answers/index.js';
import type { Components } from '../components.js';
import type { Owner } from '../host/files.js';
import type { ProgramFiles } from '../runtime/openclaw.js';

/**
 * What the deployment writes, declared once by the module that writes it: a step's
 * files on the step (`Step.writes`), what is written outside the steps by its writer
 * (the state folder and the manifest: pipeline/manifest.ts; the logs; backups; an
 * upgrade's record). The manifest's allowed places, what a backup holds, what
 * --reset-clean and uninstall remove, the folders swept for temp files and the files
 * doctor may write again are all derived from these declarations (the functions
 * below); docs/architecture.md, "Adding a step", says where each comes from.
 */

/** A file as the install writes it (content, mode, owner), compared with the disk by planFile. */
export interface DesiredFile {
  path: string;
  content: string;
  mode: number;
  owner?: Owner;
  /** How doctor checks it later (default: its SHA-256; see pipeline/manifest.ts). */
  check?: 'sha256' | 'structure';
}

/**
 * How long it stays:
 * - `backup`: the customer's state, or what only this server has: in every backup, put
 *   back by restore; --reset-clean removes it once the backup is verified, uninstall too;
 * - `deployment` (the default): made again by the install: --reset-clean and uninstall remove it;
 * - `server`: the server's setup around the deployment (logs, our binary, nginx's
 *   sandbox, the firewall, the browser's apt source): a reset keeps it, uninstall removes it;
 * - `kept`: the customer's backups: nothing removes them;
 * - `shared`: a folder others use too, made when it is missing: never recorded, never removed;
 * - `if-empty`: the same, but uninstall removes it when nothing else is left in it.
 */
export type Life = 'backup' | 'deployment' | 'server' | 'kept' | 'shared' | 'if-empty';

/** What rewriting one of our files needs from doctor (its context provides these). */
export interface RewriteContext {
  answers(): Promise<StoredAnswers | undefined>;
  channelEnv(): Promise<Record<string, string> | undefined>;
  channelConfigured(): Promise<boolean>;
}

/**
 * A file doctor --fix may write again because its content comes from this binary alone
 * (templates, the stored answers, channel.env): the files check names it fixable and the
 * files fix writes it. A file that needs more than that (openclaw.json: merged with the
 * runtime's own keys, validated by OpenClaw first) has a check and a fix of its own.
 */
export interface Rewrite {
  /** The file as the install writes it, or undefined when it cannot be made here (no answers, no channel.env). */
  from(ctx: RewriteContext): Promise<DesiredFile | undefined>;
  /** What must follow the rewrite: the user units reloaded, the gateway restarted, nginx tested and restarted. */
  effect?: 'units' | 'gateway' | 'nginx';
  /** Part of the channel endpoint: on this server only where the channel is configured. */
  channel?: true;
}

interface Declared {
  /**
   * Program path. A `*` in the last part names files made one per run (backups): such
   * a declaration counts for the folders swept for temp files only.
   */
  path: string;
  owner?: Owner;
  /** Default `deployment`. */
  life?: Life;
}

/** A file its owner writes whole (or, for a file a program writes, one whose mode we keep). */
export interface WrittenFile extends Declared {
  type: 'file';
  mode: number;
  /** How doctor checks it through the install manifest (`structure`: the keys we own); undefined: not recorded (logs, stamps, data). */
  check?: 'sha256' | 'structure';
  rewrite?: Rewrite;
  /** Another program writes it (QMD's index, the channel plugin's nonce store): declared for its place, mode and life. */
  writtenBy?: string;
}

/** A folder its owner makes; what is in it is declared on its own, or written by another program (npm, tar, the runtime, QMD). */
export interface WrittenFolder extends Declared {
  type: 'folder';
  /** Its mode; undefined: as its maker leaves it (mkdir, tar). */
  mode?: number;
  /** `metadata`: recorded in the install manifest (type, owner, mode); undefined: not recorded. */
  check?: 'metadata';
  /** Replaced whole: made beside it under a temp name, then renamed into place (a backup's folders are, by restore). */
  staged?: true;
}

/**
 * A program npm (or Node's tarball) installs into a declared folder, `path`: the files
 * that must be there and stay as installed, recorded by hash with the mode npm gave them.
 * Counts for the install manifest only (its folder is declared on its own).
 */
export interface WrittenPrograms {
  type: 'programs';
  path: string;
  files(components: Components): ProgramFiles;
}

export type Written = WrittenFile | WrittenFolder | WrittenPrograms;
type Place = WrittenFile | WrittenFolder;

/** The desired file for a declared one: its path, mode and owner, this content. */
export function desired(file: WrittenFile, content: string): DesiredFile {
  return {
    path: file.path,
    content,
    mode: file.mode,
    ...(file.owner ? { owner: file.owner } : {}),
    ...(file.check === 'structure' ? { check: 'structure' as const } : {}),
  };
}

const places = (writes: readonly Written[]): Place[] => writes.filter((w): w is Place => w.type !== 'programs');
const lifeOf = (w: Place): Life => w.life ?? 'deployment';
const isPattern = (w: Place) => w.path.includes('*');
const inside = (p: string, folder: string) => p.startsWith(`${folder}/`);

/** Where install manifest entries may point: every place of ours (a folder with all in it), none inside another. */
export function manifestPlaces(writes: readonly Written[]): string[] {
  return outermost(writes, ['backup', 'deployment', 'server'], []);
}

/** Whether `p` is one of `places` or lies inside one (an absolute, normalized path). */
export function isInPlaces(p: string, allowed: readonly string[]): boolean {
  return path.posix.isAbsolute(p) && path.posix.normalize(p) === p && allowed.some((place) => p === place || inside(p, place));
}

/** A backup's roots: what it archives and restore puts back whole. */
export function backupRoots(writes: readonly Written[]): Array<{ path: string; kind: 'directory' | 'file'; mode: number }> {
  return places(writes)
    .filter((w) => lifeOf(w) === 'backup')
    .map((w) => {
      if (w.mode === undefined) throw new Error(`${w.path} is in every backup, so it must declare its mode`);
      return { path: w.path, kind: w.type === 'folder' ? ('directory' as const) : ('file' as const), mode: w.mode };
    });
}

/** The modes restore gives, whatever an archive says: every declared mode inside (or of) a backup root. */
export function backupModes(writes: readonly Written[]): Record<string, number> {
  const roots = backupRoots(writes).map((r) => r.path);
  const out: Record<string, number> = {};
  for (const w of places(writes)) {
    if (w.mode === undefined || isPattern(w)) continue;
    if (roots.some((r) => w.path === r || inside(w.path, r))) out[w.path] = w.mode;
  }
  return out;
}

/** Paths of these lives, leaving out what another of them (or `within`) already holds. */
function outermost(writes: readonly Written[], lives: readonly Life[], within: readonly string[]): string[] {
  const candidates = places(writes).filter((w) => !isPattern(w) && lives.includes(lifeOf(w))).map((w) => w.path);
  const holders = [...within, ...candidates];
  return unique(candidates.filter((p) => !holders.some((h) => h !== p && inside(p, h))));
}

/** What --reset-clean removes after the backup: the backup's roots, then the rest of the deployment. */
export function resetRemoves(writes: readonly Written[]): string[] {
  const roots = backupRoots(writes).map((r) => r.path);
  return unique([...roots, ...outermost(writes, ['deployment'], roots)]);
}

/** What uninstall removes: what a reset removes, then the server's setup around the deployment. */
export function uninstallRemoves(writes: readonly Written[]): string[] {
  const reset = resetRemoves(writes);
  return unique([...reset, ...outermost(writes, ['server'], reset)]);
}

/** Folders uninstall removes only when they are empty afterwards, the deepest first. */
export function removedIfEmpty(writes: readonly Written[]): string[] {
  return unique(places(writes).filter((w) => lifeOf(w) === 'if-empty').map((w) => w.path)).sort((a, b) => b.split('/').length - a.split('/').length);
}

/**
 * Every folder where temp files are made (host/temp.ts: always next to their target):
 * beside each file we write, each folder replaced whole, and each root of a backup
 * (restore stages them there).
 */
export function tempDirs(writes: readonly Written[]): string[] {
  const beside = places(writes).filter((w) => lifeOf(w) === 'backup' || (w.type === 'file' ? w.writtenBy === undefined : w.staged === true));
  return unique(beside.map((w) => path.posix.dirname(w.path)));
}

/** What the install records in its manifest, each with the mode it must keep (programs: the one npm gave them). */
export function recordedPaths(writes: readonly Written[], components: Components): RecordedPath[] {
  const out: RecordedPath[] = [];
  for (const w of places(writes)) {
    if (w.check === undefined || isPattern(w) || w.mode === undefined) continue;
    out.push({ path: w.path, options: { mode: w.mode, ...(w.owner ? { owner: w.owner } : {}), ...(w.check === 'structure' ? { check: w.check } : {}) } });
  }
  for (const w of writes) {
    if (w.type !== 'programs') continue;
    const files = w.files(components);
    for (const p of [...files.required, ...files.optional]) out.push({ path: p });
  }
  return out;
}

export interface RecordedPath {
  path: string;
  /** The mode (and owner, check) it must keep; undefined: the ones npm or the download gave it. */
  options?: { mode: number; owner?: Owner; check?: 'structure' };
}

/** The files doctor --fix may write again (see Rewrite). */
export function rewritable(writes: readonly Written[]): Array<WrittenFile & { rewrite: Rewrite }> {
  return writes.filter((w): w is WrittenFile & { rewrite: Rewrite } => w.type === 'file' && w.rewrite !== undefined);
}

/** The declared folder a path lies directly in, if any. */
export function folderOf(writes: readonly Written[], p: string): WrittenFolder | undefined {
  const dir = path.posix.dirname(p);
  return writes.find((w): w is WrittenFolder => w.type === 'folder' && w.path === dir);
}

function unique(paths: readonly string[]): string[] {
  return [...new Set(paths)];
}
