import fs from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../errors.js';
import { createHost, type Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { extractBackup } from './backup.js';
import { installWithLock } from './install.js';
import type { InstallRequest } from './request.js';

/** `service-deploy restore ARCHIVE`: the archive, and install settings for the run that follows. */
export interface RestoreRequest extends InstallRequest {
  archive: string;
}

/**
 * Puts a backup's files back (config, state, workspace, channel files, nginx site,
 * TLS, cron, units), then runs the install with the restored answers, which brings
 * back what the reset uninstalled (runtime, mesh client) and restarts the services.
 */
export async function runRestore(request: RestoreRequest): Promise<void> {
  const host = createHost({ verbose: request.verbose, quiet: request.json });
  // An absolute path is a path on the server (as --reset-clean printed it), so it maps
  // under SERVICE_DEPLOY_ROOT like every other; a relative one is relative to here.
  const archive = path.isAbsolute(request.archive) ? host.paths.real(request.archive) : path.resolve(request.archive);
  try {
    await fs.access(archive);
  } catch {
    throw new UsageError(`backup archive ${request.archive} does not exist`, 'give the path that --reset-clean printed (/tmp/openclaw-backup-*.tar.gz)');
  }
  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    const entries = await extractBackup(host, archive);
    host.log.info(`restored ${entries} entries from ${archive}`);
    await reloadNginxForRestoredSite(host);
  } finally {
    await lock.release();
  }
  const channel = Boolean(await host.files.exists(LAYOUT.channelEnv));
  await installWithLock({ host, request: { ...request, nonInteractive: true, channel: request.channel || channel } });
}

/**
 * The reset reloaded nginx without the channel site; the install that follows finds the
 * restored site already right and has no reason to reload, so nginx must take it here
 * (only after `nginx -t` accepts it).
 */
async function reloadNginxForRestoredSite(host: Host): Promise<void> {
  if (!(await host.files.exists(LAYOUT.nginxSite)) || !(await host.exec.which('nginx'))) return;
  const test = await host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
  if (test.exitCode !== 0) {
    host.log.warn(`nginx -t rejects the restored configuration; the install will report it:\n${host.redactor.redact(test.stderr.trim())}`);
    return;
  }
  if (await host.services.isActive('system', 'nginx')) await host.services.reload('system', 'nginx');
  else await host.services.enableNow('system', 'nginx');
}
