import path from 'node:path';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';

/**
 * Where the OpenClaw that runs lives. This release installs it from the shipped lock
 * into a project folder of its own (LAYOUT.openclawProject, `npm ci`); releases before
 * the locks installed it globally into the Node prefix (`npm install --global`). A
 * server installed that way converges on a re-run, and a rollback across the change
 * brings the global package back, so both are read here. LAYOUT.openclawCurrent is a
 * link to the package that runs: the unit, the wrapper and our own calls go through it.
 */
export type OpenclawLayout = 'locked' | 'global';

const OPT = path.posix.dirname(LAYOUT.openclawCurrent);

export function lockedPackageDir(project: string = LAYOUT.openclawProject, name = 'openclaw'): string {
  return `${project}/node_modules/${name}`;
}

/** The package folder the releases before the locks installed (npm --global into the Node prefix). */
export function globalPackageDir(name = 'openclaw', nodePrefix: string = LAYOUT.nodePrefix): string {
  return `${nodePrefix}/lib/node_modules/${name}`;
}

/** The link those releases' npm made in the Node prefix's bin folder. */
export const GLOBAL_BIN_LINK = `${LAYOUT.nodePrefix}/bin/openclaw`;

/** The link's target for a package folder under /opt/service-deploy: relative, so a sandbox root holds it too. */
export function currentLinkTarget(packageDir: string): string {
  return path.posix.relative(OPT, packageDir);
}

async function hasPackage(host: Host, dir: string): Promise<boolean> {
  return Boolean((await host.files.stat(`${dir}/package.json`))?.isFile);
}

/**
 * The package folder that runs: the link's target when it holds a package, else the
 * project's, else the global one (a server of the earlier layout has no link). Undefined
 * when OpenClaw is not installed.
 */
export async function livePackageDir(host: Host, name = 'openclaw'): Promise<string | undefined> {
  const target = await host.files.readLink(LAYOUT.openclawCurrent);
  if (target !== undefined) {
    const dir = path.posix.resolve(OPT, target);
    if (dir.startsWith(`${OPT}/`) && (await hasPackage(host, dir))) return dir;
  }
  for (const dir of [lockedPackageDir(LAYOUT.openclawProject, name), globalPackageDir(name)]) {
    if (await hasPackage(host, dir)) return dir;
  }
  return undefined;
}

export function layoutOf(packageDir: string): OpenclawLayout {
  return packageDir.startsWith(`${LAYOUT.openclawProject}/`) ? 'locked' : 'global';
}

/** Points LAYOUT.openclawCurrent at `packageDir` in one rename (a new link beside it, then over it). */
export async function pointCurrentAt(host: Host, packageDir: string): Promise<void> {
  const target = currentLinkTarget(packageDir);
  if ((await host.files.readLink(LAYOUT.openclawCurrent)) === target) return;
  const temp = host.files.tempPathFor(LAYOUT.openclawCurrent);
  await host.files.remove(temp);
  await host.files.symlink(target, temp);
  await host.files.rename(temp, LAYOUT.openclawCurrent);
}

/** The version in a package folder's package.json (undefined: none, unreadable). */
export async function packageVersionAt(host: Host, packageDir: string): Promise<string | undefined> {
  const text = await host.files.read(`${packageDir}/package.json`);
  if (!text) return undefined;
  try {
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}

/** The version of the OpenClaw that runs (undefined: not installed). */
export async function installedOpenclawVersion(host: Host, name = 'openclaw'): Promise<string | undefined> {
  const dir = await livePackageDir(host, name);
  return dir ? packageVersionAt(host, dir) : undefined;
}

/**
 * What an upgrade kept as the previous release: a project folder (this layout) or a
 * global package folder (the earlier one). Undefined when nothing usable is kept.
 */
export async function previousRelease(host: Host, name = 'openclaw'): Promise<{ layout: OpenclawLayout; packageDir: string; version?: string } | undefined> {
  const kept = LAYOUT.openclawPrevious;
  if (await hasPackage(host, lockedPackageDir(kept, name))) {
    const packageDir = lockedPackageDir(kept, name);
    return { layout: 'locked', packageDir, version: await packageVersionAt(host, packageDir) };
  }
  if ((await hasPackage(host, kept)) && (await host.files.exists(`${kept}/openclaw.mjs`))) return { layout: 'global', packageDir: kept, version: await packageVersionAt(host, kept) };
  return undefined;
}
