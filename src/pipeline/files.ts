import type { Owner } from '../host/files.js';
import { ROOT_OWNER } from '../host/files.js';
import type { Host } from '../host/index.js';
import type { Change } from './step.js';

export interface DesiredFile {
  path: string;
  content: string;
  mode: number;
  owner?: Owner;
}

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

export async function writeDesired(host: Host, desired: DesiredFile): Promise<void> {
  await host.files.write(desired.path, desired.content, { mode: desired.mode, owner: desired.owner ?? ROOT_OWNER });
}

export function octal(mode: number): string {
  return `0${mode.toString(8)}`;
}
