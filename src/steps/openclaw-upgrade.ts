import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { openclaw } from '../runtime/openclaw.js';
import { installLockedProject, lockedProject, switchProjectIn } from '../runtime/locked-install.js';
import { GLOBAL_BIN_LINK, globalPackageDir, layoutOf, livePackageDir, lockedPackageDir, packageVersionAt, pointCurrentAt, previousRelease } from '../runtime/openclaw-place.js';

/**
 * An upgrade of OpenClaw installs the new release from the shipped lock into a project
 * folder beside the one that runs, and switches by rename (OpenClaw's docs, "Rollback
 * and recovery": a raw `npm i -g` over the old package keeps no previous package and runs
 * no migrations):
 *
 *   npm ci in /opt/service-deploy/openclaw-next (the lock)           (the old one keeps working)
 *   the release that runs -> /opt/service-deploy/openclaw-previous   (kept whole for rollback:
 *                             the project folder, or the global package of the earlier layout)
 *   openclaw-next -> /opt/service-deploy/openclaw; openclaw-current -> its package
 *   openclaw doctor --fix --non-interactive                          (the runtime's migrations)
 *
 * A project folder holds its whole tree, and npm's links in it are relative, so the
 * folder is the whole version. runtime/openclaw-place.ts says where each lives.
 */

/** Where an upgrade failed (the report and the tests name it). */
export type UpgradeStage = 'download' | 'install' | 'migration' | 'start' | 'health';

export class UpgradeError extends DeployError {
  constructor(
    readonly stage: UpgradeStage,
    message: string,
    hint?: string,
  ) {
    super(message, hint);
  }
}

/** Installs `spec` from the shipped lock into the staging project and checks it is `want`, complete; what runs is untouched. */
export async function installBeside(host: Host, spec: string, packageName: string, want: string): Promise<void> {
  const project = lockedProject('openclaw', packageName, spec);
  try {
    await installLockedProject(host, LAYOUT.openclawNext, project);
  } catch (error) {
    await host.files.remove(LAYOUT.openclawNext);
    throw new UpgradeError('download', `npm could not fetch or install OpenClaw ${want} from the lock: ${(error as Error).message}`, 'the installed version keeps running; check the network or the registry and run the install again');
  }
  const staged = lockedPackageDir(LAYOUT.openclawNext, packageName);
  const version = await packageVersionAt(host, staged);
  const entry = await host.files.stat(`${staged}/openclaw.mjs`);
  if (version !== want || !entry?.isFile) {
    await host.files.remove(LAYOUT.openclawNext);
    throw new UpgradeError('install', `the new OpenClaw package is not usable: ${version !== want ? `version ${version ?? 'missing'}, expected ${want}` : 'openclaw.mjs is missing'}`, 'the installed version keeps running; run the install again');
  }
}

/** The staged project in, the release that ran kept as the previous (one earlier previous is dropped). */
export async function switchToStaged(host: Host, packageName: string): Promise<void> {
  const live = await livePackageDir(host, packageName);
  const running = live && layoutOf(live) === 'global' ? live : LAYOUT.openclawProject;
  await host.files.remove(LAYOUT.openclawPrevious);
  const kept = Boolean(await host.files.stat(running));
  if (kept) await host.files.rename(running, LAYOUT.openclawPrevious);
  try {
    await host.files.rename(LAYOUT.openclawNext, LAYOUT.openclawProject);
  } catch (error) {
    if (kept) await host.files.rename(LAYOUT.openclawPrevious, running);
    throw error;
  }
  await pointCurrentAt(host, lockedPackageDir(LAYOUT.openclawProject, packageName));
  // The earlier layout's bin link pointed into the package just kept aside.
  if (running !== LAYOUT.openclawProject && (await host.files.readLink(GLOBAL_BIN_LINK)) !== undefined) await host.files.remove(GLOBAL_BIN_LINK);
}

/**
 * The previous release back where it ran (the newer one removed) and the link pointed at
 * it. A global package of the earlier layout goes back into the Node prefix, unless the
 * Node prefix rolled back with it (it holds that package). False when none is kept.
 */
export async function switchToPrevious(host: Host, packageName = 'openclaw'): Promise<boolean> {
  const previous = await previousRelease(host, packageName);
  if (!previous) return false;
  if (previous.layout === 'locked') {
    await switchProjectIn(host, LAYOUT.openclawPrevious, LAYOUT.openclawProject);
    await pointCurrentAt(host, lockedPackageDir(LAYOUT.openclawProject, packageName));
    return true;
  }
  const home = globalPackageDir(packageName);
  if (await host.files.exists(`${home}/package.json`)) await host.files.remove(LAYOUT.openclawPrevious);
  else await host.files.rename(LAYOUT.openclawPrevious, home);
  await pointCurrentAt(host, home);
  await host.files.remove(LAYOUT.openclawProject);
  return true;
}

/** The runtime's own migrations, as its docs prescribe after a package replacement (gateway stopped). */
export async function runMigrations(host: Host): Promise<void> {
  const result = await openclaw(host, ['doctor', '--fix', '--non-interactive'], { allowFailure: true, timeoutMs: 10 * 60_000 });
  if (result.exitCode !== 0) {
    const said = host.redactor.redact((result.stderr.trim() || result.stdout.trim()).split('\n').slice(-5).join(' | '));
    throw new UpgradeError('migration', `openclaw doctor --fix (the new version's migrations) exited ${result.exitCode}: ${said}`, 'the upgrade is rolled back');
  }
}
