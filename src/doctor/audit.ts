import fs from 'node:fs/promises';
import { isSingleExecutable } from '../assets.js';
import { Inspector, sha256Of } from '../host/inspect.js';
import { LAYOUT } from '../layout.js';
import { octal } from '../pipeline/files.js';
import { compareEntry, readManifest, type Difference, type ManifestEntry, type ManifestRead } from '../pipeline/manifest.js';
import type { Host } from '../host/index.js';
import type { ServiceProfile } from '../profile.js';
import { MANAGED_PLACES } from '../install/footprint.js';
import { ownFile, type RenderContext } from './own-files.js';

/** What the audit needs from doctor's context (narrow: context.ts uses this module). */
export interface AuditContext extends RenderContext {
  readonly host: Host;
  readonly profile: ServiceProfile;
}

/** A safe repair doctor --fix applies to one file. */
export type Repair =
  | { kind: 'chmod'; mode: number }
  | { kind: 'chown'; uid: number; gid: number }
  /** Write it again as the install does (our own files: a declared `rewrite`, see own-files.ts). */
  | { kind: 'render' }
  /** Our binary: this very binary has the recorded SHA-256, so it copies itself there. */
  | { kind: 'self-copy' };

/** One way the machine differs from the install manifest. */
export interface FileIssue {
  path: string;
  /** The difference, naming the file: "/etc/cron.d/service-guard is mode 0666, recorded 0644". */
  problem: string;
  repair?: Repair;
  /** What a person runs (for a repair: its exact command). */
  command: string;
}

export interface ManifestAudit {
  read: ManifestRead;
  issues: FileIssue[];
  /** Entries checked. */
  checked: number;
  secrets: number;
}

/** The command that restores a file doctor cannot write itself. */
export function restoreCommand(ctx: AuditContext, p: string): string {
  if (p === LAYOUT.binary) return `curl -fsSL ${ctx.profile.setupUrl}/install.sh | sudo bash`;
  if (p === LAYOUT.channelEnv || p === LAYOUT.tlsKey || p === LAYOUT.tlsCert || p.startsWith(`${LAYOUT.tlsDir}/`)) return 'service-deploy install --channel';
  return 'service-deploy install';
}

const ownerName = (uid: number, gid: number) => (uid === 0 && gid === 0 ? 'root:root' : `${uid}:${gid}`);
const kindName = (type: string) => (type === 'file' ? 'a regular file' : type === 'symlink' ? 'a symbolic link' : type === 'directory' ? 'a folder' : `a ${type}`);

/**
 * Compares every manifest entry with the machine (in-process: lstat and SHA-256, no
 * process per file). openclaw.json (`structure`) is only checked for owner and mode
 * here; its content, presence and type are the runtime-config check's.
 */
export async function auditManifest(ctx: AuditContext): Promise<ManifestAudit> {
  const { host } = ctx;
  const read = await readManifest(host, MANAGED_PLACES);
  const issues: FileIssue[] = [];
  if (!read.entries) return { read, issues, checked: 0, secrets: 0 };
  const inspector = new Inspector(host.paths);
  const asRoot = process.getuid?.() === 0;

  const self = await inspector.info(LAYOUT.manifestFile);
  if (self && self.mode !== 0o600) issues.push({ path: LAYOUT.manifestFile, problem: `${LAYOUT.manifestFile} is mode ${octal(self.mode)}, must be 0600`, repair: { kind: 'chmod', mode: 0o600 }, command: `chmod 600 ${LAYOUT.manifestFile}` });
  if (self && asRoot && (self.uid !== 0 || self.gid !== 0)) issues.push({ path: LAYOUT.manifestFile, problem: `${LAYOUT.manifestFile} is owned by ${ownerName(self.uid, self.gid)}, must be root:root`, repair: { kind: 'chown', uid: 0, gid: 0 }, command: `chown root:root ${LAYOUT.manifestFile}` });

  const entries = [...read.entries.values()];
  const found = await Promise.all(entries.map(async (entry) => describe(ctx, entry, await compareEntry(inspector, entry, { owners: asRoot }))));
  for (const list of found) issues.push(...list);
  return { read, issues, checked: entries.length, secrets: entries.filter((e) => e.secret).length };
}

async function describe(ctx: AuditContext, entry: ManifestEntry, diffs: Difference[]): Promise<FileIssue[]> {
  const p = entry.path;
  const out: FileIssue[] = [];
  const structural = entry.check === 'structure';
  for (const diff of diffs) {
    switch (diff.kind) {
      case 'missing':
        if (!structural) out.push(await rewrite(ctx, entry, `${p} is missing`));
        break;
      case 'type':
        if (!structural) out.push(await rewrite(ctx, entry, `${p} is ${kindName(diff.actual.type)}${diff.actual.target ? ` to ${diff.actual.target}` : ''}, recorded ${kindName(entry.type)}`));
        break;
      case 'owner':
        out.push({
          path: p,
          problem: `${p} is owned by ${ownerName(diff.actual.uid, diff.actual.gid)}, recorded ${ownerName(entry.uid, entry.gid)}${entry.secret ? ' (a secret: only root may own it)' : ''}`,
          repair: { kind: 'chown', uid: entry.uid, gid: entry.gid },
          command: `chown ${ownerName(entry.uid, entry.gid)} ${p}`,
        });
        break;
      case 'mode': {
        const actual = diff.actual.mode;
        const notes: string[] = [];
        if (entry.secret && (actual & 0o077) !== 0) notes.push(actual & 0o004 ? 'a secret readable by every user' : actual & 0o040 ? 'a secret readable by its group' : 'a secret open to other users');
        if ((entry.mode & 0o111) !== 0 && (actual & 0o111) === 0) notes.push('not executable');
        if ((actual & 0o022) !== 0 && (entry.mode & 0o022) === 0) notes.push(`writable by ${actual & 0o002 ? 'every user' : 'its group'}`);
        out.push({
          path: p,
          problem: `${p} is mode ${octal(actual)}, recorded ${octal(entry.mode)}${notes.length ? ` (${notes.join(', ')})` : ''}`,
          repair: { kind: 'chmod', mode: entry.mode },
          command: `chmod ${octal(entry.mode)} ${p}`,
        });
        break;
      }
      case 'target':
        out.push({ path: p, problem: `${p} points to ${diff.actual.target}, recorded ${entry.target}`, command: restoreCommand(ctx, p) });
        break;
      case 'content': {
        const size = diff.actual.size === 0 ? 'now empty' : entry.size !== undefined && entry.size !== diff.actual.size ? `${diff.actual.size} bytes, recorded ${entry.size}` : `${diff.actual.size} bytes`;
        out.push(await rewrite(ctx, entry, `${p} changed since service-deploy wrote it (${size}; SHA-256 ${diff.sha256.slice(0, 12)}…, recorded ${entry.sha256!.slice(0, 12)}…)`));
        break;
      }
    }
  }
  return out;
}

/** An issue only writing the file again repairs: our own files (render), our binary (self-copy), else a command. */
async function rewrite(ctx: AuditContext, entry: ManifestEntry, problem: string): Promise<FileIssue> {
  const own = ownFile(entry.path);
  if (own && (await own.rewrite.from(ctx)) !== undefined) return { path: entry.path, problem, repair: { kind: 'render' }, command: 'service-deploy doctor --fix' };
  if (entry.path === LAYOUT.binary && entry.sha256 && (await selfHash(ctx)) === entry.sha256) {
    return { path: entry.path, problem, repair: { kind: 'self-copy' }, command: 'service-deploy doctor --fix' };
  }
  return { path: entry.path, problem, command: restoreCommand(ctx, entry.path) };
}

const selfHashes = new WeakMap<AuditContext, Promise<string | undefined>>();

/** SHA-256 of the running single executable (read once per doctor run, only when needed). */
export function selfHash(ctx: AuditContext): Promise<string | undefined> {
  let hit = selfHashes.get(ctx);
  if (!hit) {
    hit = isSingleExecutable() ? fs.readFile(process.execPath).then((bytes) => sha256Of(bytes)) : Promise.resolve(undefined);
    selfHashes.set(ctx, hit);
  }
  return hit;
}
