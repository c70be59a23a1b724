import fs from 'node:fs/promises';
import path from 'node:path';
import type { RestoreArgs } from '../commands/restore.js';
import { UsageError } from '../errors.js';
import { createHost } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { extractBackup } from './backup.js';
import { installWithLock } from './run.js';

/**
 * Puts a backup's files back (config, state, workspace, channel files, nginx site,
 * TLS, cron, units), then runs the install with the restored answers, which brings
 * back what the reset uninstalled (runtime, mesh client) and restarts the services.
 */
export async function runRestore(args: RestoreArgs): Promise<void> {
  const host = createHost({ verbose: args.verbose, quiet: args.json });
  // An absolute path is a path on the server (as --reset-clean printed it), so it maps
  // under SERVICE_DEPLOY_ROOT like every other; a relative one is relative to here.
  const archive = path.isAbsolute(args.archive) ? host.paths.real(args.archive) : path.resolve(args.archive);
  try {
    await fs.access(archive);
  } catch {
    throw new UsageError(`backup archive ${args.archive} does not exist`, 'give the path that --reset-clean printed (/tmp/openclaw-backup-*.tar.gz)');
  }
  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    const entries = await extractBackup(host, archive);
    host.log.info(`restored ${entries} entries from ${archive}`);
  } finally {
    await lock.release();
  }
  const channel = Boolean(await host.files.exists(LAYOUT.channelEnv));
  await installWithLock({ host, args: { ...args, nonInteractive: true, channel: args.channel || channel } });
}
