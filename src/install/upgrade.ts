import { DeployError, UsageError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { emitJson, installOutput, rollbackOutput, upgradeFailedOutput } from '../json/index.js';
import { printLine } from '../output.js';
import { recordProgramFiles } from '../pipeline/manifest.js';
import { pipelineJson } from '../pipeline/report.js';
import { nodeFiles, openclawFiles } from '../runtime/openclaw.js';
import { installedOpenclawVersion } from '../runtime/openclaw-place.js';
import { waitForGateway } from '../steps/health.js';
import { UpgradeError, installBeside, runMigrations, switchToPrevious, switchToStaged, type UpgradeStage } from '../steps/openclaw-upgrade.js';
import { loadComponents } from '../components.js';
import { nodeVersionIn } from '../steps/node-runtime.js';
import { rollbackPoint, stageNode, switchNodeToPrevious, switchNodeToStaged } from '../steps/node-upgrade.js';
import { inspectArchive, openArchive, stageArchive, swapIntoPlace } from './archive.js';
import { writeBackup, type WrittenBackup } from './backup.js';
import { sweepLeftovers } from './leftovers.js';
import { UPGRADE_RECORD, type UpgradeVersions } from './pending-upgrade.js';
import type { PipelineOutcome } from '../pipeline/runner.js';
import type { InstallRequest } from './request.js';

/** The install pipeline under a lock the caller holds (install.ts passes installWithLock: no import back into it). */
export type InstallUnderLock = (run: { host: Host; request: InstallRequest; lockHeld: boolean; quiet: boolean }) => Promise<PipelineOutcome>;
import { stopWriters } from './writers.js';

/**
 * Upgrades of the pinned OpenClaw and Node that roll back by themselves (issue 19):
 *
 *   verified pre-upgrade backup (writers stopped; they stay stopped)
 *   -> Node (when its pin changed): the new release unpacked beside the old prefix with
 *      the global packages carried over (download, install), switched in by rename, the
 *      old prefix kept whole as the previous
 *   -> OpenClaw (when its pin changed): the new package installed beside the old one
 *      (download, install), switched in by rename, the old one kept as the previous;
 *      the runtime's migrations (openclaw doctor --fix --non-interactive: migration)
 *   -> the install pipeline (starts the gateway: start) -> /healthz (health)
 *   -> on any failure: the previous Node prefix or package and the pre-upgrade state
 *      back, the gateway started and healthy again, exit 1 with a report.
 *
 * All under the install lock, so the guard waits. `service-deploy rollback` does the
 * same going back by hand.
 */

/** "OpenClaw A -> B", "Node X -> Y", or both. */
export function describeUpgrade(v: UpgradeVersions): string {
  const parts = [v.from !== v.to || !v.node ? `OpenClaw ${v.from} -> ${v.to}` : '', v.node ? `Node ${v.node.from} -> ${v.node.to}` : ''];
  return parts.filter(Boolean).join(' and ');
}

/** What the last upgrade did, kept beside the packages (a reset removes both). */
export interface UpgradeRecord extends UpgradeVersions {
  backup: string;
  at: string;
  outcome: 'started' | 'upgraded' | 'rolled-back' | 'rollback-failed';
  failed?: { stage: UpgradeStage; error: string };
}

/** The OpenClaw version a rollback would bring back (undefined: no rollback point kept). */
export async function previousVersion(host: Host): Promise<string | undefined> {
  return (await rollbackPoint(host)).openclaw;
}

export async function readUpgradeRecord(host: Host): Promise<UpgradeRecord | undefined> {
  const text = await host.files.read(LAYOUT.upgradeRecord);
  if (!text) return undefined;
  try {
    const r = JSON.parse(text) as UpgradeRecord;
    return typeof r.from === 'string' && typeof r.to === 'string' && typeof r.backup === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

async function writeRecord(host: Host, record: UpgradeRecord): Promise<void> {
  await host.files.write(UPGRADE_RECORD.path, `${JSON.stringify(record, null, 2)}\n`, { mode: UPGRADE_RECORD.mode });
}

/** An upgrade replaces the earlier upgrade's rollback point (its kept package and Node prefix). */
async function dropRollbackPoint(host: Host): Promise<void> {
  await host.files.remove(LAYOUT.openclawPrevious);
  await host.files.remove(LAYOUT.nodePrevious);
}

const STAGE_OF_STEP: Readonly<Record<string, UpgradeStage>> = { 'gateway-service': 'start', health: 'health' };

export async function runUpgrade(host: Host, request: InstallRequest, versions: UpgradeVersions, installWithLock: InstallUnderLock): Promise<void> {
  const components = loadComponents(host.env);
  const started = Date.now();
  const what = describeUpgrade(versions);
  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  let record: UpgradeRecord | undefined;
  let switched = false;
  try {
    await sweepLeftovers(host);
    host.log.info(`upgrade: ${what}; a verified backup first`);
    const writers = await stopWriters(host);
    let backup: WrittenBackup;
    try {
      backup = await writeBackup(host, { dir: LAYOUT.backupDir, label: 'pre-upgrade' });
    } catch (error) {
      await writers.resume().catch(() => undefined);
      throw error;
    }
    host.log.info(`pre-upgrade backup: ${backup.archive} (${backup.databases.length} databases pass integrity_check)`);
    record = { ...versions, backup: backup.archive, at: host.now().toISOString(), outcome: 'started' };
    await writeRecord(host, record);
    try {
      if (versions.node) {
        await stageNode(host, components);
        await dropRollbackPoint(host);
        await switchNodeToStaged(host);
        switched = true;
        await recordProgramFiles(host, nodeFiles());
        await recordProgramFiles(host, openclawFiles(components.openclaw.package));
      }
      if (versions.from !== versions.to) {
        // With a new Node, the new OpenClaw is installed by its npm, for it.
        await installBeside(host, components.sources.openclawSpec, components.openclaw.package, versions.to);
        if (!switched) await dropRollbackPoint(host);
        await switchToStaged(host, components.openclaw.package);
        switched = true;
        await recordProgramFiles(host, openclawFiles(components.openclaw.package));
        await runMigrations(host);
      }
    } catch (error) {
      // Any failure here, ours too (a rename), is rolled back like a stage's.
      const stage = error instanceof UpgradeError ? error.stage : 'install';
      return await failed(host, request, record, stage, (error as Error).message, switched, writers.resume);
    }
    const outcome = await installWithLock({ host, request: { ...request, nonInteractive: true }, lockHeld: true, quiet: Boolean(request.json) });
    const bad = outcome.results.find((r) => r.status === 'failed');
    if (bad) return await failed(host, request, record, STAGE_OF_STEP[bad.id] ?? 'install', `${bad.title}: ${bad.error ?? 'failed'}`, switched, writers.resume);
    record = { ...record, outcome: 'upgraded' };
    await writeRecord(host, record);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (request.json || request.catalog) {
      emitJson(installOutput, { ...pipelineJson(outcome, 'apply', Date.now() - started), upgrade: { from: versions.from, to: versions.to, ...(versions.node ? { node: versions.node } : {}), backup: backup.archive, seconds: Number(seconds) } });
    } else {
      const kept = [versions.node ? 'Node prefix' : '', versions.from !== versions.to ? 'package' : ''].filter(Boolean).join(' and ');
      printLine(`upgraded ${what} in ${seconds} s; the previous ${kept} ${kept.includes(' and ') ? 'are' : 'is'} kept (service-deploy rollback), the pre-upgrade backup is ${backup.archive}`);
    }
  } finally {
    await lock.release();
  }
}

/** A failed upgrade: everything back as before, then exit 1 with the report. */
async function failed(
  host: Host,
  request: InstallRequest,
  record: UpgradeRecord,
  stage: UpgradeStage,
  error: string,
  switched: boolean,
  resume: () => Promise<void>,
): Promise<void> {
  const what = describeUpgrade(record);
  const before = `OpenClaw ${record.from}${record.node ? ` on Node ${record.node.from}` : ''}`;
  host.log.error(`upgrade ${what} failed at ${stage}: ${error}`);
  const logs = stage === 'start' || stage === 'health' ? await gatewayLog(host) : [];
  let rollback: RollbackResult;
  try {
    rollback = switched ? await rollBack(host, record.backup) : await resumeOnly(host, resume);
  } catch (e) {
    rollback = { healthy: false, detail: (e as Error).message };
  }
  const outcome = rollback.healthy ? 'rolled-back' : 'rollback-failed';
  await writeRecord(host, { ...record, outcome, failed: { stage, error } }).catch(() => undefined);
  process.exitCode = 1;
  if (request.json || request.catalog) {
    // Its own failing document: the CLI prints no error envelope over it (docs/json.md).
    emitJson(upgradeFailedOutput, {
      ok: false,
      upgrade: { from: record.from, to: record.to, ...(record.node ? { node: record.node } : {}), failedAt: stage, error, log: logs, backup: record.backup, rolledBack: rollback.healthy, health: rollback.detail },
      error: {
        code: 'upgrade-failed',
        message: `upgrade ${what} failed at ${stage}: ${error}`,
        hint: rollback.healthy
          ? `${before} and the state from before the upgrade are back and the gateway answers; fix the cause, then run the install again`
          : `the rollback is incomplete (${rollback.detail}); restore by hand with: service-deploy restore ${record.backup}`,
        exitCode: 1,
      },
    });
    return;
  }
  printLine(`upgrade: ${what} FAILED at ${stage}: ${error}`);
  for (const line of logs) printLine(`  log: ${line}`);
  printLine(
    rollback.healthy
      ? `rolled back: ${before} and the state from before the upgrade are back, the gateway answers (${rollback.detail})`
      : `ROLLBACK INCOMPLETE: ${rollback.detail}; restore by hand with: service-deploy restore ${record.backup}`,
  );
  printLine(`pre-upgrade backup: ${record.backup}`);
}

/** The last lines the gateway logged (for the report; secrets masked). */
async function gatewayLog(host: Host): Promise<string[]> {
  return (await host.services.journalTail('user', LAYOUT.gatewayUnit, 15)).map((line) => host.redactor.redact(line));
}

interface RollbackResult {
  healthy: boolean;
  detail: string;
}

async function waitHealthy(host: Host): Promise<RollbackResult> {
  const wait = await waitForGateway(host);
  return { healthy: wait.ok, detail: `/healthz: ${wait.detail}` };
}

/** Nothing was switched: the old package and state are untouched; start what was stopped. */
async function resumeOnly(host: Host, resume: () => Promise<void>): Promise<RollbackResult> {
  await resume();
  return waitHealthy(host);
}

/**
 * The previous Node prefix (it holds the OpenClaw it ran) or the previous OpenClaw
 * package back, and the pre-upgrade state (the backup's roots staged and swapped in, as
 * restore does, while the gateway is stopped); then the gateway started and waited for.
 * Used by a failed upgrade and by `service-deploy rollback`.
 */
export async function rollBack(host: Host, backup: string): Promise<RollbackResult> {
  await stopWriters(host);
  const node = await switchNodeToPrevious(host);
  // OpenClaw's project is apart from the Node prefix; a global package of the earlier layout came back with the prefix.
  const openclaw = await switchToPrevious(host);
  if (!node && !openclaw) {
    throw new DeployError(`no previous OpenClaw package at ${LAYOUT.openclawPrevious} and no previous Node at ${LAYOUT.nodePrevious}`, `restore the state with service-deploy restore ${backup}`);
  }
  const handle = await openArchive(host.paths.real(backup), backup);
  try {
    const manifest = await inspectArchive(handle, backup);
    const staged = await stageArchive(host, handle, manifest);
    await swapIntoPlace(host, staged);
  } finally {
    await handle.close();
  }
  // The install manifest came back with the state; it records the programs now in place.
  const components = loadComponents(host.env);
  if (node) await recordProgramFiles(host, nodeFiles());
  await recordProgramFiles(host, openclawFiles(components.openclaw.package));
  await host.services.daemonReload('user');
  // QMD's server runs on the Node just switched back (stopped above, with the writers).
  await host.services.start('user', LAYOUT.qmdMcpService).catch(() => undefined);
  // A build that exited at start was restarted by systemd until the unit's start limit:
  // without this the earlier release would be refused too (the e2e's broken upgrade).
  await host.services.resetFailed('user', LAYOUT.gatewayUnit);
  await host.services.restart('user', LAYOUT.gatewayUnit);
  await host.services.start('user', LAYOUT.qmdRefreshTimer).catch(() => undefined);
  return waitHealthy(host);
}

export interface RollbackRequest {
  json?: boolean;
  verbose?: boolean;
  yes?: boolean;
  check?: boolean;
  nonInteractive?: boolean;
}

/** `service-deploy rollback`: back to the package (or Node prefix) and state from before the last upgrade. */
export async function runRollback(host: Host, request: RollbackRequest): Promise<void> {
  const record = await readUpgradeRecord(host);
  const point = await rollbackPoint(host);
  if (!record || !point.openclaw) throw new UsageError('there is no upgrade to roll back (no previous OpenClaw package or Node kept)', 'nothing was changed');
  const current = await installedOpenclawVersion(host);
  const currentNode = point.node ? await nodeVersionIn(host, LAYOUT.nodePrefix) : undefined;
  const node = point.node ? { from: currentNode ?? null, to: point.node } : undefined;
  const versions = [current !== point.openclaw || !node ? `OpenClaw ${current ?? 'missing'} -> ${point.openclaw}` : '', node ? `Node ${node.from ?? 'missing'} -> ${node.to}` : ''].filter(Boolean).join(' and ');
  const plan = `${versions}, and the state from ${record.backup} (what changed since the upgrade, ${record.at}, is lost)`;
  if (request.check) {
    if (request.json) emitJson(rollbackOutput, { ok: true, mode: 'check', from: current ?? null, to: point.openclaw, ...(node ? { node } : {}), backup: record.backup });
    else printLine(`would roll back: ${plan}; nothing was changed (--check)`);
    return;
  }
  if (!request.yes) {
    if (!process.stdin.isTTY || request.nonInteractive || request.json) throw new UsageError('rollback replaces the state with the pre-upgrade backup and needs confirmation', 'add --yes to confirm without a terminal');
    const { confirm } = await import('../answers/index.js');
    if (!(await confirm(`Roll back: ${plan}?`))) return;
  }
  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    await sweepLeftovers(host);
    const result = await rollBack(host, record.backup);
    await writeRecord(host, { ...record, outcome: result.healthy ? 'rolled-back' : 'rollback-failed' });
    if (!result.healthy) process.exitCode = 1;
    if (request.json) {
      emitJson(rollbackOutput, {
        ok: result.healthy,
        mode: 'apply',
        from: current ?? null,
        to: point.openclaw,
        ...(node ? { node } : {}),
        backup: record.backup,
        health: result.detail,
        ...(result.healthy ? {} : { error: { code: 'gateway-unhealthy', message: `rolled back to OpenClaw ${point.openclaw}, but the gateway does not answer: ${result.detail}`, hint: 'see why: service-deploy gateway logs; service-deploy doctor', exitCode: 1 } }),
      });
    }
    else printLine(`${result.healthy ? 'rolled back' : 'rolled back, but the gateway does not answer'}: ${plan}; ${result.detail}`);
  } finally {
    await lock.release();
  }
}
