import * as z from '../zod.js';

/**
 * npm lockfiles (lockfileVersion 3), read the way npm reads them: which package goes to
 * which folder, which of them a given machine installs, what changed between two locks,
 * and how an installed node_modules tree differs from one. Pure: the caller reads the
 * files (installed-tree.ts reads a tree through the host). docs/components.md, "Locks".
 */

const StringList = z.union([z.string(), z.array(z.string())]);
const Dependencies = z.optional(z.record(z.string(), z.string()));

const LockEntrySchema = z.object({
  /** Set only where the folder's name is not the package's (an npm: alias). */
  name: z.optional(z.string()),
  version: z.optional(z.string()),
  resolved: z.optional(z.string()),
  integrity: z.optional(z.string()),
  link: z.optional(z.boolean()),
  inBundle: z.optional(z.boolean()),
  dev: z.optional(z.boolean()),
  optional: z.optional(z.boolean()),
  devOptional: z.optional(z.boolean()),
  peer: z.optional(z.boolean()),
  hasInstallScript: z.optional(z.boolean()),
  os: z.optional(StringList),
  cpu: z.optional(StringList),
  libc: z.optional(StringList),
  dependencies: Dependencies,
  optionalDependencies: Dependencies,
  /** Installed for the root project only (npm ignores a dependency's own dev dependencies). */
  devDependencies: Dependencies,
  peerDependencies: Dependencies,
  peerDependenciesMeta: z.optional(z.record(z.string(), z.object({ optional: z.optional(z.boolean()) }))),
});
export type LockEntry = z.infer<typeof LockEntrySchema>;

const LockSchema = z.object({
  name: z.optional(z.string()),
  lockfileVersion: z.literal(3),
  packages: z.record(z.string(), LockEntrySchema),
});
export type NpmLock = z.infer<typeof LockSchema>;

/** Parses a package-lock.json text; throws naming what is wrong (not JSON, not version 3, a bad entry). */
export function parseLock(text: string, source = 'package-lock.json'): NpmLock {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source} is not JSON: ${(error as Error).message}`);
  }
  const parsed = LockSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${source}: ${issue.path.join('.') || '(top)'}: ${issue.message}${issue.path[0] === 'lockfileVersion' ? ' (npm 7 and later write version 3)' : ''}`);
  }
  return parsed.data;
}

/** The package name of a lock path: `node_modules/a/node_modules/@s/b` -> `@s/b` (the entry's own name wins: aliases). */
export function packageNameAt(lockPath: string, entry?: Pick<LockEntry, 'name'>): string {
  if (entry?.name) return entry.name;
  const at = lockPath.lastIndexOf('node_modules/');
  return lockPath.slice(at + 'node_modules/'.length);
}

/** The machine npm installs for: the lock's os/cpu/libc fields are checked against it. */
export interface LockPlatform {
  os: string;
  cpu: string;
  /** `glibc` or `musl` on Linux. */
  libc?: string;
}

/** What npm leaves out (`--omit=optional`, `--omit=peer`, `--omit=dev`). */
export type Omit = 'optional' | 'peer' | 'dev';

export interface InstallOptions {
  platform: LockPlatform;
  omit?: readonly Omit[];
}

/** npm-install-checks' rule: a list of allowed values, `!x` excluding one; only exclusions: anything else. */
function allowedBy(value: string | undefined, list: string | string[] | undefined): boolean {
  if (list === undefined) return true;
  const entries = typeof list === 'string' ? [list] : list;
  if (entries.length === 1 && entries[0] === 'any') return true;
  if (value === undefined) return false;
  let negated = 0;
  let match = false;
  for (const entry of entries) {
    if (entry.startsWith('!')) {
      negated++;
      if (value === entry.slice(1)) return false;
    } else if (value === entry) {
      match = true;
    }
  }
  return match || negated === entries.length;
}

export function runsOn(entry: Pick<LockEntry, 'os' | 'cpu' | 'libc'>, platform: LockPlatform): boolean {
  return allowedBy(platform.os, entry.os) && allowedBy(platform.cpu, entry.cpu) && (entry.libc === undefined || allowedBy(platform.libc, entry.libc));
}

/**
 * The folder a package `name` required from `from` resolves to in the lock, as Node
 * resolves it: `from/node_modules/name`, then each enclosing node_modules up to the root.
 */
function resolveIn(lock: NpmLock, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (!base) return undefined;
    const at = base.lastIndexOf('/node_modules/');
    base = at < 0 ? '' : base.slice(0, at);
  }
}

/**
 * The lock's folders npm installs on `platform` with `omit`: every package reached from
 * the root through dependencies that are installed. An optional package that does not
 * run on the platform is skipped with whatever only it needed (npm's "inert" optional
 * set); `omit` drops the packages the lock flags optional, peer or dev.
 */
export function expectedPackages(lock: NpmLock, options: InstallOptions): Map<string, LockEntry> {
  const omit = new Set(options.omit ?? []);
  const skipped = (entry: LockEntry) =>
    (omit.has('dev') && entry.dev === true) ||
    (omit.has('optional') && entry.optional === true) ||
    (omit.has('peer') && entry.peer === true) ||
    ((entry.optional === true || entry.devOptional === true) && !runsOn(entry, options.platform));
  const expected = new Map<string, LockEntry>();
  const queue: string[] = [''];
  while (queue.length > 0) {
    const at = queue.shift()!;
    const entry = lock.packages[at];
    if (!entry) continue;
    const wanted = [
      ...Object.keys(entry.dependencies ?? {}).map((name) => ({ name, optional: false })),
      ...Object.keys(entry.optionalDependencies ?? {}).map((name) => ({ name, optional: true })),
      ...(at === '' && !omit.has('dev') ? Object.keys(entry.devDependencies ?? {}).map((name) => ({ name, optional: false })) : []),
      ...Object.keys(entry.peerDependencies ?? {})
        .filter((name) => entry.peerDependenciesMeta?.[name]?.optional !== true)
        .map((name) => ({ name, optional: false })),
    ];
    for (const { name, optional } of wanted) {
      const target = resolveIn(lock, at, name);
      if (!target || expected.has(target)) continue;
      const dependency = lock.packages[target]!;
      if (dependency.link) continue;
      if (skipped(dependency) || (optional && !runsOn(dependency, options.platform))) continue;
      expected.set(target, dependency);
      queue.push(target);
    }
  }
  return expected;
}

// ---- comparing two locks (what a refresh changes)

export interface LockChange {
  kind: 'added' | 'removed' | 'version' | 'integrity' | 'install-script' | 'platform';
  path: string;
  name: string;
  before?: string;
  after?: string;
}

const platformText = (entry: LockEntry) => [entry.os, entry.cpu, entry.libc].map((v) => (v === undefined ? '' : [v].flat().join(','))).join('/');

/**
 * What changed between two locks, folder by folder: packages added and removed, versions
 * changed, an integrity changed at the same version (a tarball published again: never
 * routine), an install script that appeared or went, os/cpu/libc that changed.
 */
export function diffLocks(before: NpmLock, after: NpmLock): LockChange[] {
  const changes: LockChange[] = [];
  const paths = [...new Set([...Object.keys(before.packages), ...Object.keys(after.packages)])].filter(Boolean).sort();
  for (const p of paths) {
    const a = before.packages[p];
    const b = after.packages[p];
    const name = packageNameAt(p, b ?? a);
    if (!a) {
      changes.push({ kind: 'added', path: p, name, after: b!.version });
      if (b!.hasInstallScript) changes.push({ kind: 'install-script', path: p, name, after: 'has an install script' });
      continue;
    }
    if (!b) {
      changes.push({ kind: 'removed', path: p, name, before: a.version });
      continue;
    }
    if (a.version !== b.version) changes.push({ kind: 'version', path: p, name, before: a.version, after: b.version });
    else if (a.integrity !== b.integrity) changes.push({ kind: 'integrity', path: p, name, before: a.integrity, after: b.integrity });
    if (Boolean(a.hasInstallScript) !== Boolean(b.hasInstallScript)) {
      changes.push({ kind: 'install-script', path: p, name, before: a.hasInstallScript ? 'has an install script' : 'none', after: b.hasInstallScript ? 'has an install script' : 'none' });
    }
    if (platformText(a) !== platformText(b)) changes.push({ kind: 'platform', path: p, name, before: platformText(a), after: platformText(b) });
  }
  return changes;
}

export function describeChange(change: LockChange): string {
  switch (change.kind) {
    case 'added':
      return `+ ${change.name}@${change.after} (${change.path})`;
    case 'removed':
      return `- ${change.name}@${change.before} (${change.path})`;
    case 'version':
      return `~ ${change.name} ${change.before} -> ${change.after} (${change.path})`;
    case 'integrity':
      return `! ${change.name}: integrity changed at the same version: ${change.before} -> ${change.after} (${change.path})`;
    case 'install-script':
      return `! ${change.name}: install script ${change.before ?? 'none'} -> ${change.after} (${change.path})`;
    case 'platform':
      return `~ ${change.name}: os/cpu/libc ${change.before} -> ${change.after} (${change.path})`;
  }
}

// ---- comparing an installed tree with a lock

/** One package folder found under an installed node_modules (installed-tree.ts). */
export interface InstalledPackage {
  /** Relative to the project folder, as in the lock: `node_modules/a/node_modules/b`. */
  path: string;
  /** From its package.json; undefined when that is missing or unreadable. */
  name?: string;
  version?: string;
  /** A symbolic link instead of a folder (npm ci makes none for registry packages). */
  link?: boolean;
}

export interface TreeFinding {
  kind: 'changed' | 'missing' | 'extra';
  path: string;
  name: string;
  /** The lock's version (changed, missing). */
  want?: string;
  /** The installed one (changed, extra). */
  have?: string;
  /** What differs, for a changed package whose version is not the only difference. */
  detail?: string;
}

/**
 * How an installed tree differs from what npm installs from `lock` on this platform:
 * a package whose folder holds another version or another package (changed), one the
 * lock has and the disk has not (missing), one the disk has and the lock has not, or
 * not for this platform (extra). Sorted by folder; none when the tree is the lock's.
 */
export function compareTree(installed: readonly InstalledPackage[], lock: NpmLock, options: InstallOptions): TreeFinding[] {
  const expected = expectedPackages(lock, options);
  const onDisk = new Map(installed.map((p) => [p.path, p]));
  const findings: TreeFinding[] = [];
  for (const [p, entry] of expected) {
    const name = packageNameAt(p, entry);
    const have = onDisk.get(p);
    if (!have) {
      findings.push({ kind: 'missing', path: p, name, want: entry.version });
      continue;
    }
    const detail = have.link
      ? 'a symbolic link, not a package folder'
      : have.version === undefined
        ? 'its package.json is missing or unreadable'
        : have.name !== name
          ? `the folder holds ${have.name ?? 'a package without a name'}`
          : undefined;
    if (detail || have.version !== entry.version) findings.push({ kind: 'changed', path: p, name, want: entry.version, have: have.version, ...(detail && { detail }) });
  }
  for (const have of installed) {
    if (expected.has(have.path)) continue;
    findings.push({ kind: 'extra', path: have.path, name: have.name ?? packageNameAt(have.path), have: have.version, ...(lock.packages[have.path] && { detail: 'the lock has it, but npm leaves it out here (another platform, or omitted)' }) });
  }
  return findings.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** One line naming the package: what a doctor finding says. */
export function describeFinding(finding: TreeFinding): string {
  const where = `(${finding.path})`;
  switch (finding.kind) {
    case 'missing':
      return `${finding.name}@${finding.want} is missing ${where}`;
    case 'extra':
      return `${finding.name}${finding.have ? `@${finding.have}` : ''} is installed but not locked ${where}${finding.detail ? `: ${finding.detail}` : ''}`;
    case 'changed':
      return finding.detail
        ? `${finding.name}: ${finding.detail}, the lock has ${finding.name}@${finding.want} ${where}`
        : `${finding.name} is ${finding.have}, the lock has ${finding.want} ${where}`;
  }
}
