import type { Owner } from '../host/files.js';
import { ROOT_OWNER } from '../host/files.js';
import type { Host } from '../host/index.js';
import { recordFromDisk, recordWrittenFile, type EntryCheck } from './manifest.js';
import type { Change } from './step.js';
import type { DesiredFile, WrittenFile, WrittenFolder } from './writes.js';

export type { DesiredFile } from './writes.js';

/**
 * Compares a desired file with the machine. A change is content, mode or owner that
 * differ; never "we ran something". The diff goes through the redactor, so secrets
 * registered for this run show as ****.
 */
export async function planFile(host: Host, desired: DesiredFile): Promise<Change | undefined> {
  const owner = desired.owner ?? ROOT_OWNER;
  const [current, info] = await Promise.all([host.files.read(desired.path), host.files.stat(desired.path)]);
  const reasons: string[] = [];
  if (current === undefined) reasons.push('create');
  else if (current !== desired.content) reasons.push('update content');
  if (info && info.mode !== desired.mode) reasons.push(`mode ${octal(info.mode)} -> ${octal(desired.mode)}`);
  if (info && process.getuid?.() === 0 && (info.uid !== owner.uid || info.gid !== owner.gid)) {
    reasons.push(`owner ${info.uid}:${info.gid} -> ${owner.uid}:${owner.gid}`);
  }
  if (reasons.length === 0) return undefined;
  // Loaded only when something differs: a converged re-run never needs it.
  const diff =
    current === desired.content
      ? undefined
      : host.redactor.redact((await import('diff')).createTwoFilesPatch(desired.path, desired.path, current ?? '', desired.content, '', '', { context: 3 }));
  return { target: desired.path, summary: `${desired.path}: ${reasons.join(', ')}`, diff };
}

/** Writes a desired file atomically and records it in the install manifest. */
export async function writeDesired(host: Host, desired: DesiredFile): Promise<void> {
  await writeAndRecord(host, desired.path, desired.content, desired);
}

/**
 * Every file service-deploy writes goes through here (or writeDesired): the atomic
 * write, then its entry in the install manifest (type, owner, mode, SHA-256). The
 * declaration gives its path, mode, owner and how doctor checks it.
 */
export async function writeRecorded(host: Host, file: WrittenFile, content: string | Uint8Array): Promise<void> {
  await writeAndRecord(host, file.path, content, { mode: file.mode, owner: file.owner, check: file.check });
}

async function writeAndRecord(host: Host, p: string, content: string | Uint8Array, options: { mode: number; owner?: Owner; check?: EntryCheck }): Promise<void> {
  const owner = options.owner ?? ROOT_OWNER;
  await host.files.write(p, content, { mode: options.mode, owner });
  await recordWrittenFile(host, p, content, { mode: options.mode, owner, check: options.check });
}

/** Makes (or re-modes) a declared folder and records it in the install manifest. */
export async function ensureDirRecorded(host: Host, folder: WrittenFolder): Promise<void> {
  const owner = folder.owner ?? ROOT_OWNER;
  await host.files.ensureDir(folder.path, modeOf(folder), owner);
  await recordFromDisk(host, { path: folder.path, options: { mode: modeOf(folder), owner } });
}

/** Makes (or re-modes) a declared folder with its mode, without recording it. */
export async function ensureFolder(host: Host, folder: WrittenFolder): Promise<void> {
  await host.files.ensureDir(folder.path, modeOf(folder), folder.owner);
}

function modeOf(folder: WrittenFolder): number {
  if (folder.mode === undefined) throw new Error(`${folder.path} declares no mode to make it with`);
  return folder.mode;
}

export function octal(mode: number): string {
  return `0${mode.toString(8)}`;
}
