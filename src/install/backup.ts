import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { BACKUP_PREFIX, LAYOUT } from '../layout.js';

/** What a backup holds: config and state, workspace, channel files, nginx site, TLS, cron, units. */
export const BACKUP_PATHS = [
  LAYOUT.runtimeDir,
  LAYOUT.stateDir,
  LAYOUT.gatewayUnitFile,
  LAYOUT.gatewayDropInDir,
  LAYOUT.nginxSite,
  LAYOUT.tlsDir,
  LAYOUT.guardCron,
  LAYOUT.guardScript,
  // The memory index (QMD): private data like the workspace it indexes. Only the index
  // and the collection config, not QMD's model cache; a missed WAL tail is re-read from
  // the memory files by the refresh after restore.
  LAYOUT.qmdIndex,
  LAYOUT.qmdConfigDir,
];

export function backupName(now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}-${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}`;
  return `${BACKUP_PREFIX}${stamp}.tar.gz`;
}

/**
 * Writes a gzip tar of every existing BACKUP_PATHS entry (paths stored relative to /,
 * owners and modes kept), mode 0600 from the first byte, then reads it back whole
 * and checks every file made it. Returns the archive path and its entry count.
 */
export async function writeBackup(host: Host): Promise<{ archive: string; entries: number; files: string[] }> {
  const archive = backupName(host.now());
  const real = host.paths.real(archive);
  const root = host.paths.real('/');
  const present: string[] = [];
  for (const p of BACKUP_PATHS) if (await host.files.exists(p)) present.push(p.slice(1));
  if (present.length === 0) throw new DeployError('there is no deployment here to back up', 'nothing to reset');
  await fs.promises.mkdir(path.dirname(real), { recursive: true });
  const partial = `${real}.partial`;
  await pipeline(
    tar.c({ gzip: true, cwd: root, portable: false, follow: false }, present),
    fs.createWriteStream(partial, { mode: 0o600, flags: 'wx' }),
  );
  const expected = await listFiles(root, present);
  const listed = await listArchive(partial);
  const missing = expected.filter((f) => !listed.has(f));
  if (missing.length > 0) {
    await fs.promises.rm(partial, { force: true });
    throw new DeployError(`the backup archive is incomplete (missing ${missing.slice(0, 5).join(', ')})`, 'nothing was removed; check free space in /tmp and run again');
  }
  await fs.promises.rename(partial, real);
  return { archive, entries: listed.size, files: [...listed] };
}

export interface ArchiveEntry {
  name: string;
  type: string;
  linkpath?: string;
}

/** Every entry of an archive; reading it to the end also checks the gzip stream. */
export async function readArchive(realPath: string): Promise<ArchiveEntry[]> {
  const entries: ArchiveEntry[] = [];
  try {
    await tar.t({
      file: realPath,
      strict: true,
      onReadEntry: (entry) => entries.push({ name: entry.path.replace(/\/$/, ''), type: entry.type, linkpath: entry.linkpath || undefined }),
    });
  } catch (error) {
    throw new DeployError(`${realPath} is not a readable backup archive: ${(error as Error).message}`);
  }
  return entries;
}

export async function listArchive(realPath: string): Promise<Set<string>> {
  return new Set((await readArchive(realPath)).map((e) => e.name));
}

async function listFiles(root: string, relative: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string) => {
    const stat = await fs.promises.lstat(path.join(root, rel));
    out.push(rel);
    if (stat.isDirectory()) for (const child of await fs.promises.readdir(path.join(root, rel))) await walk(path.join(rel, child));
  };
  for (const rel of relative) await walk(rel);
  return out;
}

/**
 * Extracts a backup over / (owners and modes as archived). Every entry is checked
 * first: inside the paths a backup holds, no ".." and no absolute names, hard links
 * inside those paths. Symbolic links are kept as archived (OpenClaw's state holds
 * absolute links into its package folders).
 */
export async function extractBackup(host: Host, archiveRealPath: string): Promise<number> {
  const entries = await readArchive(archiveRealPath);
  const allowed = BACKUP_PATHS.map((p) => p.slice(1));
  const inside = (name: string) => allowed.some((a) => name === a || name.startsWith(`${a}/`));
  const unsafe = entries.filter(
    (e) =>
      !inside(e.name) ||
      e.name.split('/').includes('..') ||
      path.isAbsolute(e.name) ||
      (e.type === 'Link' && (!e.linkpath || !inside(e.linkpath))),
  );
  if (unsafe.length > 0) {
    throw new DeployError(
      `${archiveRealPath} holds paths a service-deploy backup never has: ${unsafe.slice(0, 3).map((e) => e.name).join(', ')}`,
      'refusing to extract it',
    );
  }
  const root = host.paths.real('/');
  await tar.x({
    file: archiveRealPath,
    cwd: root,
    preserveOwner: process.getuid?.() === 0,
    strict: true,
    // node-tar's own escape check compares against cwd + "/", which is "//" when the
    // target is the real root, and so refuses every entry; the checks above do its job.
    preservePaths: root === '/',
  });
  return entries.length;
}
