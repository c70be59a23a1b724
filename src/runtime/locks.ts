import * as z from '../zod.js';
import { readTemplate } from '../assets.js';
import { parseLock, type InstallOptions, type LockPlatform, type NpmLock, type Omit } from './npm-lock.js';

/**
 * The npm locks this binary ships (templates/locks/, embedded): for each runtime tree
 * (OpenClaw, lossless-claw, QMD) the project package.json and its package-lock.json as
 * `npm run locks` (scripts/refresh-locks.mjs) made them from templates/components.json,
 * one folder per architecture where the trees differ. docs/components.md, "Locks".
 */

export type LockArch = 'x64' | 'arm64';
export const LOCK_ARCHES: readonly LockArch[] = ['x64', 'arm64'];
export const LOCKED_COMPONENTS = ['openclaw', 'losslessClaw', 'qmd'] as const;
export type LockedComponent = (typeof LOCKED_COMPONENTS)[number];

const TreeSchema = z.object({
  package: z.string(),
  version: z.string(),
  /** What the install leaves out of this tree (npm --omit). */
  omit: z.array(z.enum(['optional', 'peer', 'dev'])),
  /** The folder under templates/locks/ per architecture; absent when the tree could not be locked. */
  folders: z.optional(z.object({ x64: z.string(), arm64: z.string() })),
  /** Why there is no lock (the registry the locks were made with does not have the package). */
  unavailable: z.optional(z.string()),
});

const IndexSchema = z.object({
  /** The npm that made the locks (the e2e's Node tarball carries the same: test/e2e/artifacts.ts). */
  npm: z.string(),
  trees: z.object({ openclaw: TreeSchema, losslessClaw: TreeSchema, qmd: TreeSchema }),
});
export type LockIndex = z.infer<typeof IndexSchema>;
export type LockTree = z.infer<typeof TreeSchema>;

export function lockIndex(): LockIndex {
  const raw = JSON.parse(readTemplate('locks/index.json')) as Record<string, unknown>;
  delete raw.$comment;
  return IndexSchema.parse(raw);
}

export interface ShippedLock {
  component: LockedComponent;
  arch: LockArch;
  /** templates/locks/<folder>/ */
  folder: string;
  /** The project package.json npm ci installs from, as shipped. */
  manifestText: string;
  lockText: string;
  lock: NpmLock;
  omit: readonly Omit[];
}

/** The shipped lock of one tree for `arch`, or undefined when the index says it has none (and why: `lockIndex()`). */
export function shippedLock(component: LockedComponent, arch: LockArch, index: LockIndex = lockIndex()): ShippedLock | undefined {
  const tree = index.trees[component];
  if (!tree.folders) return undefined;
  const folder = tree.folders[arch];
  const lockText = readTemplate(`locks/${folder}/package-lock.json`);
  return {
    component,
    arch,
    folder,
    manifestText: readTemplate(`locks/${folder}/package.json`),
    lockText,
    lock: parseLock(lockText, `templates/locks/${folder}/package-lock.json`),
    omit: tree.omit,
  };
}

/** The servers: Linux with glibc (preflight refuses anything else). */
export function lockPlatform(arch: LockArch): LockPlatform {
  return { os: 'linux', cpu: arch, libc: 'glibc' };
}

export function installOptions(shipped: Pick<ShippedLock, 'arch' | 'omit'>): InstallOptions {
  return { platform: lockPlatform(shipped.arch), omit: shipped.omit };
}

/** This machine's architecture as a lock names it. */
export function lockArch(arch: string = process.arch): LockArch {
  return arch === 'arm64' ? 'arm64' : 'x64';
}
