import path from 'node:path';
import { ROOT_OWNER } from '../host/files.js';
import { forbiddenCharacter } from '../input.js';
import { BACKUP_PREFIX, LAYOUT } from '../layout.js';
import { backupModes, backupRoots, type WrittenFile, type WrittenFolder } from '../pipeline/writes.js';
import { installWrites } from '../steps/index.js';

/**
 * What a backup holds, in one place for the three that need it: the backup writer
 * (what it archives), --reset-clean (what it removes) and restore (what it accepts).
 * A root is a folder or a file of the deployment; a backup holds roots and nothing
 * else, and restore puts each root back whole.
 */
export interface BackupRoot {
  /** Program path (absolute). */
  path: string;
  kind: 'directory' | 'file';
  /** The install's mode for the root itself. */
  mode: number;
}

/**
 * What the steps declare `life: 'backup'` (pipeline/writes.ts): the runtime's and our
 * state folders, the gateway unit and its drop-ins, the channel's site and certificate,
 * the guard, and the memory index (QMD: private data like the workspace it indexes; only
 * the index and the collection config, not QMD's model cache; a missed WAL tail is
 * re-read from the memory files by the refresh after restore).
 */
export const BACKUP_ROOTS: readonly BackupRoot[] = backupRoots(installWrites());

/** The roots' paths (what --reset-clean removes first). */
export const BACKUP_PATHS: readonly string[] = BACKUP_ROOTS.map((r) => r.path);

/** The entry every backup has: restore reads the answers from it. */
export const BACKUP_ANSWERS = LAYOUT.answersFile;

/**
 * Files whose mode is the install's whatever an archive says: the roots and every file
 * and folder in them whose writer declares its mode (the secrets 0600 among them).
 */
const FIXED_MODES: Readonly<Record<string, number>> = backupModes(installWrites());

/** Where backups go: /tmp (a reset's, emptied at boot) and the backup folder (copies, scheduled ones): the customer's, nothing removes them. */
export const BACKUP_DIR: WrittenFolder = { path: LAYOUT.backupDir, type: 'folder', mode: 0o700, owner: ROOT_OWNER, life: 'kept' };
export const BACKUP_ARCHIVE: WrittenFile = { path: `${BACKUP_PREFIX}*.tar.gz`, type: 'file', mode: 0o600, owner: ROOT_OWNER, life: 'kept' };
const BACKUP_COPY: WrittenFile = { ...BACKUP_ARCHIVE, path: `${LAYOUT.backupDir}/openclaw-*.tar.gz` };
/** `backup --every`'s timer and service (system units): a reset removes the schedule with the deployment. */
export const SCHEDULE_SERVICE: WrittenFile = { path: LAYOUT.backupServiceFile, type: 'file', mode: 0o644, check: 'sha256' };
export const SCHEDULE_TIMER: WrittenFile = { path: LAYOUT.backupTimerFile, type: 'file', mode: 0o644, check: 'sha256' };
/** The system's /tmp, made when missing (a bare sandbox), sticky and open to all as everywhere. */
export const TMP_DIR: WrittenFolder = { path: '/tmp', type: 'folder', mode: 0o1777, life: 'shared' };
export const BACKUP_WRITES = [TMP_DIR, BACKUP_DIR, BACKUP_ARCHIVE, BACKUP_COPY, SCHEDULE_SERVICE, SCHEDULE_TIMER] as const;

export type ItemKind = 'file' | 'directory' | 'symlink';

/**
 * The mode an item gets on restore (and the mode the backup is judged by): the
 * install's for the files it knows; for the rest the archived permission bits without
 * setuid, setgid, sticky, group write and world write, readable and writable by root.
 */
export function installMode(p: string, kind: ItemKind, archived: number): number {
  const fixed = FIXED_MODES[p];
  if (fixed !== undefined) return fixed;
  if (kind === 'symlink') return 0o777;
  return (archived & 0o755) | (kind === 'directory' ? 0o700 : 0o600);
}

/** A folder above a root (`/root`, `/var/lib`...): a repacked archive may list it; restore leaves it as it is. */
export function isAboveARoot(p: string): boolean {
  return BACKUP_ROOTS.some((r) => r.path.startsWith(`${p}/`));
}

/** The root a program path belongs to (the root itself or anything below a folder root). */
export function rootOf(p: string): BackupRoot | undefined {
  return BACKUP_ROOTS.find((r) => p === r.path || p.startsWith(`${r.path}/`));
}

/**
 * Where OpenClaw itself makes absolute symbolic links in its state: each skill a plugin
 * ships is published as `~/.openclaw/plugin-skills/<skill>` -> the skill's folder in
 * that plugin (OpenClaw's plugin-skills.ts, "every entry is a generated symlink"), so
 * they point into the installed packages (/opt/service-deploy) or into plugins kept in
 * the state folder. These, and only these, may be absolute.
 */
export const OPENCLAW_SKILL_LINKS = {
  folder: `${LAYOUT.runtimeDir}/plugin-skills`,
  targets: ['/opt/service-deploy/', `${LAYOUT.runtimeDir}/`],
} as const;

export const MAX_PATH_BYTES = 4096;
export const MAX_NAME_BYTES = 255;

/** A relative POSIX path without empty, "." or ".." parts, or the reason it is not one. */
export function relativePathProblem(name: string): string | undefined {
  if (name === '') return 'has an empty name';
  if (name.startsWith('/')) return 'has an absolute name';
  const bad = forbiddenCharacter(name);
  if (bad) return `has a name with ${bad}`;
  if (Buffer.byteLength(name) > MAX_PATH_BYTES) return `has a name longer than ${MAX_PATH_BYTES} bytes`;
  for (const part of name.split('/')) {
    if (part === '..') return 'has a name that climbs out with ".."';
    if (part === '' || part === '.') return 'has a name with an empty or "." part';
    if (Buffer.byteLength(part) > MAX_NAME_BYTES) return `has a name part longer than ${MAX_NAME_BYTES} bytes`;
  }
  return undefined;
}

/**
 * Whether a symbolic link at program path `p` holding `target` may be in a backup:
 * OpenClaw's plugin-skills links (absolute, into the packages), or a relative link that
 * stays inside the folder root it is in. Anything else could make a later writer (the
 * agent, the install) write outside the deployment through it.
 */
export function symlinkProblem(p: string, target: string): string | undefined {
  if (target === '') return 'is a symbolic link with an empty target';
  const bad = forbiddenCharacter(target);
  if (bad) return `is a symbolic link whose target has ${bad}`;
  if (Buffer.byteLength(target) > MAX_PATH_BYTES) return `is a symbolic link with a target longer than ${MAX_PATH_BYTES} bytes`;
  const root = rootOf(p);
  if (!root || root.kind !== 'directory' || p === root.path) return 'is a symbolic link where the backup has a real file or folder';
  if (path.posix.isAbsolute(target)) {
    const normal = path.posix.normalize(target) === target && !target.endsWith('/');
    const allowed =
      path.posix.dirname(p) === OPENCLAW_SKILL_LINKS.folder && normal && OPENCLAW_SKILL_LINKS.targets.some((t) => target.startsWith(t));
    return allowed
      ? undefined
      : `is a symbolic link to the absolute path ${target} (only OpenClaw's ${OPENCLAW_SKILL_LINKS.folder}/* links may point to ${OPENCLAW_SKILL_LINKS.targets.join(' or ')})`;
  }
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(p), target));
  if (resolved !== root.path && !resolved.startsWith(`${root.path}/`)) return `is a symbolic link to ${target}, which leaves ${root.path}`;
  return undefined;
}
