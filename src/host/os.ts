import os from 'node:os';
import type { Files } from './files.js';
import type { Exec } from './exec.js';

export interface OsInfo {
  id: string;
  versionId: string;
  codename: string;
  prettyName: string;
  /** ID_LIKE: the distributions this one derives from ("ubuntu debian" for Linux Mint). */
  like: string[];
}

/** The package family whose repositories (mesh client, browser) fit this OS. */
export type OsFamily = 'ubuntu' | 'debian';

export const SUPPORTED_OS: ReadonlyArray<{ id: string; versionId: string }> = [
  { id: 'ubuntu', versionId: '22.04' },
  { id: 'ubuntu', versionId: '24.04' },
];

/** Parses /etc/os-release (KEY=value lines, values optionally quoted). */
export function parseOsRelease(text: string): OsInfo {
  const values: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (match) values[match[1]!] = match[2]!.replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1');
  }
  return {
    id: values.ID ?? 'unknown',
    versionId: values.VERSION_ID ?? '',
    codename: values.VERSION_CODENAME ?? values.UBUNTU_CODENAME ?? '',
    prettyName: values.PRETTY_NAME ?? `${values.ID ?? 'unknown'} ${values.VERSION_ID ?? ''}`.trim(),
    like: (values.ID_LIKE ?? '').split(/\s+/).filter(Boolean),
  };
}

/**
 * Ubuntu or Debian, from what the server reports: its ID, else its ID_LIKE (Ubuntu's
 * derivatives list "ubuntu debian": the nearer one first). Undefined: neither, and
 * nothing that depends on the family is guessed.
 */
export function osFamily(os: OsInfo): OsFamily | undefined {
  for (const name of [os.id, ...os.like]) if (name === 'ubuntu' || name === 'debian') return name;
  return undefined;
}

export async function readOs(files: Files): Promise<OsInfo> {
  return parseOsRelease((await files.read('/etc/os-release')) ?? '');
}

export function isSupportedOs(os: OsInfo): boolean {
  return SUPPORTED_OS.some((s) => s.id === os.id && s.versionId === os.versionId);
}

/** The machine's CPU architecture in Node's naming, or undefined if we do not ship for it. */
export function supportedArch(arch: string = process.arch): 'x64' | 'arm64' | undefined {
  return arch === 'x64' || arch === 'arm64' ? arch : undefined;
}

/**
 * The C library's version ("2.31") as `getconf GNU_LIBC_VERSION` reports it ("glibc
 * 2.31"); undefined where the answer is not glibc's or getconf cannot answer.
 */
export async function glibcVersion(exec: Exec): Promise<string | undefined> {
  const r = await exec.run('getconf', ['GNU_LIBC_VERSION'], { allowFailure: true });
  return r.exitCode === 0 ? /^glibc (\d+\.\d+)/.exec(r.stdout.trim())?.[1] : undefined;
}

/** Whether dotted version `have` is older than `floor` ("2.31" < "2.34"; "2.4" < "2.34"). */
export function versionBelow(have: string, floor: string): boolean {
  const a = have.split('.').map(Number);
  const b = floor.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  }
  return false;
}

/**
 * The server's memory in bytes: MemTotal of /proc/meminfo (what the kernel manages, less
 * than the plan's nominal size by what firmware and the kernel keep), else Node's figure.
 */
export async function memoryTotal(files: Files): Promise<number> {
  const kib = /^MemTotal:\s+(\d+) kB$/m.exec((await files.read('/proc/meminfo')) ?? '')?.[1];
  return kib !== undefined ? Number(kib) * 1024 : os.totalmem();
}
