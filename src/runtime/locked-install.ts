import type { Host } from '../host/index.js';
import { readInstalledTree } from './installed-tree.js';
import { lockArch, installOptions, shippedLock, type LockedComponent, type ShippedLock } from './locks.js';
import { compareTree, describeFinding, expectedPackages, packageNameAt, type TreeFinding } from './npm-lock.js';
import { npm } from './openclaw.js';

/**
 * A runtime tree installed from the lock this binary ships (issue 29): a project folder
 * holding the shipped package.json and package-lock.json, and node_modules as `npm ci`
 * makes it from them: exact versions, every tarball checked against the lock's
 * integrity, nothing resolved, install scripts only for the packages the project's
 * allowScripts names. docs/components.md, "Locks".
 *
 * A source set for a mirror or a test (SERVICE_OPENCLAW_SOURCE, SERVICE_QMD_SOURCE: a
 * tarball or another spec) replaces the top package only: the project names it and npm
 * installs with the lock as its base, so the rest of the tree is still the lock's.
 */

export interface LockedProject {
  shipped: ShippedLock;
  /** The project package.json written (the shipped one, or with the source set in place of the pin). */
  manifestText: string;
  /** `ci` with the shipped manifest; `install` over the lock when a source replaces the pin. */
  command: 'ci' | 'install';
}

/** The shipped lock of `component` for this machine; throws when this binary ships none (the caller installs another way). */
export function shippedFor(component: LockedComponent): ShippedLock {
  const shipped = shippedLock(component, lockArch());
  if (!shipped) throw new Error(`this service-deploy ships no lock for ${component}`);
  return shipped;
}

/** The project as it is written for `spec` (the pinned `name@version`, or a source set for a mirror or a test). */
export function lockedProject(component: LockedComponent, packageName: string, spec: string): LockedProject {
  const shipped = shippedFor(component);
  const manifest = JSON.parse(shipped.manifestText) as { dependencies: Record<string, string> };
  const pinned = `${packageName}@${manifest.dependencies[packageName]}`;
  if (spec === pinned) return { shipped, manifestText: shipped.manifestText, command: 'ci' };
  manifest.dependencies[packageName] = spec.startsWith('/') ? `file:${spec}` : spec.slice(spec.lastIndexOf('@') + 1) || spec;
  return { shipped, manifestText: `${JSON.stringify(manifest, null, 2)}\n`, command: 'install' };
}

/**
 * Installs `project` into `folder` (made afresh: whatever was there is removed), with
 * the pinned Node's npm. The folder is a staging place: the caller switches it in.
 */
export async function installLockedProject(
  host: Host,
  folder: string,
  project: LockedProject,
  options: { env?: Record<string, string>; progress?: (text: string) => void } = {},
): Promise<void> {
  // An installer killed mid-run (kill -9, a lost SSH session) leaves its npm running
  // here, orphaned: stopped first, or it goes on writing into the tree installed now.
  const stopped = await host.proc.stopWorkingIn(host.paths.real(folder));
  if (stopped.length > 0) {
    const what = stopped.map((p) => `${p.pid} (${p.argv.slice(0, 3).map((a) => a.split('/').pop()).join(' ')})`).join(', ');
    host.log.warn(`stopped ${stopped.length} process(es) of an earlier, interrupted run still working in ${folder}: ${what}`);
    options.progress?.(`stopped what an earlier, interrupted run left working in ${folder}`);
  }
  await host.files.remove(folder);
  await host.files.ensureDir(folder, 0o755);
  await host.files.write(`${folder}/package.json`, project.manifestText, { mode: 0o644 });
  await host.files.write(`${folder}/package-lock.json`, project.shipped.lockText, { mode: 0o644 });
  const omit = project.shipped.omit.map((o) => `--omit=${o}`);
  const env = options.env && { env: options.env };
  await npm(host, [project.command, '--prefix', host.paths.real(folder), '--no-audit', '--no-fund', ...omit, '--ignore-scripts'], {
    ...env,
    ...(options.progress && { progress: options.progress }),
  });
  const scripts = installScripts(project.shipped);
  if (scripts.length > 0) {
    options.progress?.(`npm rebuild ${scripts.join(' ')} (their install scripts)`);
    await npm(host, ['rebuild', '--prefix', host.paths.real(folder), ...scripts], { ...env });
  }
}

/**
 * The packages whose install scripts run: those the lock records with one
 * (`hasInstallScript`) among the ones npm installs here, by name. `npm ci` itself runs
 * with --ignore-scripts because, installing from a lock, npm 11 also runs `node-gyp
 * rebuild` in every package with a binding.gyp, even one that says `gypfile: false` and
 * ships its prebuilt binaries (QMD's better-sqlite3 13.2.0: a compiler and Python the
 * servers do not have); `npm install` resolving from the registry does not. This runs
 * the same scripts `npm install` ran.
 */
export function installScripts(shipped: ShippedLock): string[] {
  const names = [...expectedPackages(shipped.lock, installOptions(shipped))].filter(([, entry]) => entry.hasInstallScript).map(([where, entry]) => packageNameAt(where, entry));
  return [...new Set(names)].sort();
}

/** Whether `folder` holds the project as it would be written now (the lock is the shipped one; a source set skips that, npm rewrote it). */
export async function projectIsCurrent(host: Host, folder: string, project: LockedProject): Promise<boolean> {
  const [manifest, lock] = await Promise.all([host.files.read(`${folder}/package.json`), host.files.read(`${folder}/package-lock.json`)]);
  return manifest === project.manifestText && (project.command === 'install' || lock === project.shipped.lockText);
}

/** How the tree under `folder` differs from the shipped lock of `component` (none: it is the lock's). */
export async function treeFindings(host: Host, folder: string, component: LockedComponent): Promise<TreeFinding[]> {
  const shipped = shippedFor(component);
  return compareTree(await readInstalledTree(host, folder), shipped.lock, installOptions(shipped));
}

/**
 * A project whose files are as installed can still hold a package changed since (by
 * hand, or by another npm): such a tree is installed again from the lock. `state` is
 * what the program files said; the tree is read only when they were fine.
 */
export async function lockedTreeState<S extends { install: boolean; damaged?: string }>(host: Host, folder: string, component: LockedComponent, state: S): Promise<S | { install: true; damaged: string }> {
  if (state.install) return state;
  const findings = await treeFindings(host, folder, component);
  if (findings.length === 0) return state;
  const named = findings.slice(0, 3).map(describeFinding).join('; ');
  return { install: true, damaged: `${findings.length} package${findings.length === 1 ? '' : 's'} differ from the lock (${named}${findings.length > 3 ? '; ...' : ''})` };
}

/**
 * Puts the staged project `next` in place of `live` by rename: the live one (if any)
 * moved aside, the staged one renamed in, the aside removed; the live one back if the
 * rename fails.
 */
export async function switchProjectIn(host: Host, next: string, live: string): Promise<void> {
  const aside = host.files.tempPathFor(live);
  const had = Boolean(await host.files.stat(live));
  if (had) await host.files.rename(live, aside);
  try {
    await host.files.rename(next, live);
  } catch (error) {
    if (had) await host.files.rename(aside, live);
    throw error;
  }
  if (had) await host.files.remove(aside);
}
