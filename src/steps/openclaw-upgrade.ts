import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { GLOBAL_MODULES, installedPackageVersion, npm, openclaw } from '../runtime/openclaw.js';

/**
 * An upgrade of OpenClaw installs the new package beside the old one and switches
 * by rename (OpenClaw's docs, "Rollback and recovery": a raw `npm i -g` over the old
 * package keeps no previous package and runs no migrations):
 *
 *   npm install --global --prefix /opt/service-deploy/openclaw-next <spec>   (the old one keeps working)
 *   .../lib/node_modules/openclaw  -> /opt/service-deploy/openclaw-previous   (kept whole for rollback)
 *   openclaw-next/lib/node_modules/openclaw -> .../lib/node_modules/openclaw
 *   openclaw doctor --fix --non-interactive                                  (the runtime's migrations)
 *
 * A global npm package holds its dependencies inside its own folder, and the
 * `bin/openclaw` link is relative to it, so the folder is the whole version.
 */
export const CURRENT_PACKAGE = `${GLOBAL_MODULES}/openclaw`;

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

/** Installs `spec` into the side prefix and checks it is `want`, complete; the live package is untouched. */
export async function installBeside(host: Host, spec: string, packageName: string, want: string): Promise<void> {
  await host.files.remove(LAYOUT.openclawNext);
  try {
    await npm(host, ['install', '--global', '--prefix', host.paths.real(LAYOUT.openclawNext), '--no-audit', '--no-fund', '--allow-scripts=openclaw', spec]);
  } catch (error) {
    await host.files.remove(LAYOUT.openclawNext);
    throw new UpgradeError('download', `npm could not fetch or install OpenClaw ${want}: ${(error as Error).message}`, 'the installed version keeps running; check the network or the registry and run the install again');
  }
  const staged = `${LAYOUT.openclawNext}/lib/node_modules/${packageName}`;
  const version = await installedPackageVersion(host, `${LAYOUT.openclawNext}/lib/node_modules`, packageName);
  const entry = await host.files.stat(`${staged}/openclaw.mjs`);
  if (version !== want || !entry?.isFile) {
    await host.files.remove(LAYOUT.openclawNext);
    throw new UpgradeError('install', `the new OpenClaw package is not usable: ${version !== want ? `version ${version ?? 'missing'}, expected ${want}` : 'openclaw.mjs is missing'}`, 'the installed version keeps running; run the install again');
  }
}

/** The staged package in, the live one kept as the previous (one earlier previous is dropped). */
export async function switchToStaged(host: Host, packageName: string): Promise<void> {
  await host.files.remove(LAYOUT.openclawPrevious);
  await host.files.rename(CURRENT_PACKAGE, LAYOUT.openclawPrevious);
  try {
    await host.files.rename(`${LAYOUT.openclawNext}/lib/node_modules/${packageName}`, CURRENT_PACKAGE);
  } catch (error) {
    await host.files.rename(LAYOUT.openclawPrevious, CURRENT_PACKAGE);
    throw error;
  }
  await host.files.remove(LAYOUT.openclawNext);
}

/** The previous package back in place (the failed one removed). False when there is none. */
export async function switchToPrevious(host: Host): Promise<boolean> {
  if (!(await host.files.exists(`${LAYOUT.openclawPrevious}/package.json`))) return false;
  const failed = host.files.tempPathFor(CURRENT_PACKAGE);
  if (await host.files.stat(CURRENT_PACKAGE)) await host.files.rename(CURRENT_PACKAGE, failed);
  await host.files.rename(LAYOUT.openclawPrevious, CURRENT_PACKAGE);
  await host.files.remove(failed);
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
