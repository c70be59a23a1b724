import { CancelledError, UsageError } from '../errors.js';
import { readOnlyHost, type Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { printLine } from '../output.js';
import { emitJson, resetOutput, resetPlanOutput } from '../json/index.js';
import { removeChannelFirewall } from '../steps/channel-firewall.js';
import { resetRemoves } from '../pipeline/writes.js';
import { backupName, keepBackupCopy, planBackup, writeBackup, type WrittenBackup } from './backup.js';
import { FOOTPRINT } from './footprint.js';
import { stopWriters } from './writers.js';
import { sweepLeftovers } from './leftovers.js';
import type { InstallRequest } from './request.js';

/**
 * Everything --reset-clean removes: what a backup holds, then the rest of the deployment
 * (what its writers declare `life: 'deployment'`). The server's setup stays (logs, the
 * service-deploy binary, for `restore`).
 */
export const RESET_REMOVES: readonly string[] = resetRemoves(FOOTPRINT);

/** The commands the reset runs after the backup, in words (for --check). */
const RESET_COMMANDS = [
  `systemctl --user stop ${LAYOUT.qmdRefreshTimer} ${LAYOUT.qmdRefreshService} ${LAYOUT.gatewayUnit} ${LAYOUT.qmdMcpService} (before the backup)`,
  `systemctl --user disable --now ${LAYOUT.gatewayUnit} ${LAYOUT.qmdMcpService} ${LAYOUT.qmdRefreshTimer}`,
  'tailscale logout',
  'apt-get purge tailscale',
  'systemctl --user daemon-reload',
  'nginx -t, then reload nginx',
];

/**
 * --reset-clean: confirm, back up (and verify the backup), then remove the agent
 * runtime, the mesh client, all config and the memory/workspace directory.
 * With --check or --diff: say what would be backed up and removed, on a read-only host.
 */
export async function runResetClean(host: Host, request: InstallRequest): Promise<void> {
  if (request.check || request.diff) return planResetClean(readOnlyHost(host), request);
  if (!request.yes) {
    if (!process.stdin.isTTY || request.nonInteractive || request.json) {
      throw new UsageError('--reset-clean removes the deployment and needs confirmation', 'add --yes to confirm without a terminal');
    }
    const { confirm } = await import('../answers/index.js');
    if (!(await confirm('Remove the agent runtime, mesh client, all config and the workspace (a backup is written first)?'))) {
      throw new CancelledError('reset cancelled; nothing was changed');
    }
  }
  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    await sweepLeftovers(host);
    // stop -> archive -> verify -> change: the databases are copied while nothing
    // writes them, and nothing is removed before the archive and its databases check out.
    const writers = await stopWriters(host);
    let backup: WrittenBackup;
    try {
      backup = await writeBackup(host);
    } catch (error) {
      await writers.resume().catch((e: Error) => host.log.warn(`could not start the gateway again: ${e.message}`));
      throw error;
    }
    host.log.info(`backup written and verified: ${backup.archive} (${backup.entries} entries, ${backup.databases.length} databases pass integrity_check)`);
    for (const s of backup.skipped) host.log.warn(`not in the backup: ${s.path} (${s.why})`);
    // /tmp is emptied at boot (spec 1.2 keeps the backup there): a copy that survives it, before anything goes.
    const copy = await keepBackupCopy(host, backup.archive);
    host.log.info(`backup copy: ${copy}`);

    await host.services.disable('user', LAYOUT.gatewayUnit).catch(() => undefined);
    await host.services.disable('user', LAYOUT.qmdRefreshTimer).catch(() => undefined);
    await host.services.disable('user', LAYOUT.qmdMcpService).catch(() => undefined);
    await host.services.disable('system', LAYOUT.backupTimer).catch(() => undefined);
    if (await host.exec.which('tailscale')) {
      await host.exec.run('tailscale', ['logout'], { allowFailure: true, timeoutMs: 60_000 });
    }
    if (await host.exec.which('apt-get')) {
      await host.exec.run('apt-get', ['-o', 'DPkg::Lock::Timeout=300', 'purge', '-y', '-qq', 'tailscale'], {
        allowFailure: true,
        env: { DEBIAN_FRONTEND: 'noninteractive' },
        timeoutMs: 10 * 60_000,
      });
    }
    await removeChannelFirewall(host);
    const scheduled = await host.files.exists(LAYOUT.backupTimerFile);
    for (const p of RESET_REMOVES) await host.files.remove(p);
    await host.services.daemonReload('user').catch(() => undefined);
    if (scheduled) await host.services.daemonReload('system').catch(() => undefined);
    if (await host.exec.which('nginx')) {
      const test = await host.exec.run('nginx', ['-t'], { allowFailure: true });
      if (test.exitCode === 0) await host.services.reload('system', 'nginx').catch(() => undefined);
    }
    if (request.json) emitJson(resetOutput, { ok: true, backup: backup.archive, entries: backup.entries, skipped: backup.skipped, databases: backup.databases, removed: [...RESET_REMOVES], backupCopy: copy });
    else {
      printLine(`backup: ${backup.archive}`);
      printLine(`backup copy: ${copy} (kept across reboots; /tmp is emptied at boot: copy one off the server too)`);
      printLine(`removed the deployment; bring it back with: service-deploy restore ${copy}`);
    }
  } finally {
    await lock.release();
  }
}

/** What --reset-clean would do, read-only: the backup's content and what would be removed. */
async function planResetClean(host: Host, request: InstallRequest): Promise<void> {
  const plan = await planBackup(host);
  const remove: string[] = [];
  for (const p of RESET_REMOVES) if (await host.files.exists(p)) remove.push(p);
  const archive = backupName(host.now());
  const copy = `${LAYOUT.backupDir}/${archive.slice(archive.lastIndexOf('/') + 1)}`;
  if (request.json) {
    emitJson(resetPlanOutput, {
      ok: true,
      mode: 'check',
      backup: { archive, copy, entries: plan.items.length, bytes: plan.bytes, items: plan.items.map((i) => i.path), skipped: plan.skipped },
      remove,
      commands: [...RESET_COMMANDS],
    });
    return;
  }
  if (plan.items.length === 0) printLine('would back up nothing: there is no deployment here (the reset would stop there)');
  else printLine(`would back up ${plan.items.length} entries (${plan.bytes} bytes of files) to ${archive} (0600), and copy it to ${copy}`);
  for (const s of plan.skipped) printLine(`would leave out of the backup  ${s.path} (${s.why})`);
  for (const p of remove) printLine(`would remove  ${p}`);
  for (const c of RESET_COMMANDS) printLine(`would run     ${c}`);
  printLine('plan: nothing was changed (--check)');
}
