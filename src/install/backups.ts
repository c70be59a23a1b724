import path from 'node:path';
import { UsageError } from '../errors.js';
import { createHost, readOnlyHost, type Host } from '../host/index.js';
import { givenProblem, integerProblem } from '../input.js';
import { LAYOUT } from '../layout.js';
import { printLine } from '../output.js';
import { planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { forgetRecorded } from '../pipeline/manifest.js';
import { desired } from '../pipeline/writes.js';
import { renderTemplate } from '../render/template.js';
import { BACKUP_FILE_NAME, backupName, planBackup, writeBackup, type WrittenBackup } from './backup.js';
import { SCHEDULE_SERVICE, SCHEDULE_TIMER } from './backup-set.js';
import { sweepLeftovers } from './leftovers.js';
import { stopWriters } from './writers.js';

/** `service-deploy backup`: a verified archive now, or the schedule. */
export interface BackupRequest {
  json?: boolean;
  verbose?: boolean;
  check?: boolean;
  /** `--every 24h` (m, h or d), or `off` to remove the schedule. As given. */
  every?: string;
  /** `--keep N`: after the backup, only the newest N in the backup folder stay. As given. */
  keep?: string | number;
}

export const MAX_KEEP = 1000;
const EVERY = /^(\d{1,4})(m|min|h|d)$/;
const MIN_EVERY_S = 3600;
const MAX_EVERY_S = 30 * 86_400;
const DEFAULT_SCHEDULED_KEEP = 7;

export interface Schedule {
  /** The systemd time span (`24h`, `7d`, `90min`). */
  every: string;
  seconds: number;
  keep: number;
}

/** `--every` as given: a systemd time span from 1 hour to 30 days, or `off`. */
export function parseEvery(value: string): { every: string; seconds: number } | 'off' {
  const text = value.trim();
  if (text === 'off') return 'off';
  const m = EVERY.exec(text);
  const refuse = (why: string): never => {
    throw new UsageError(`--every ${JSON.stringify(value).slice(0, 40)}: ${why}`, 'give a period like 24h, 12h or 7d (1h to 30d), or off; nothing was changed');
  };
  if (!m) refuse('is not a number followed by m, h or d');
  const n = Number(m![1]);
  const unit = m![2] === 'min' ? 'm' : m![2]!;
  const seconds = n * (unit === 'm' ? 60 : unit === 'h' ? 3600 : 86_400);
  if (seconds < MIN_EVERY_S) refuse('is shorter than an hour (each backup pauses the gateway)');
  if (seconds > MAX_EVERY_S) refuse('is longer than 30 days');
  return { every: `${n}${unit === 'm' ? 'min' : unit}`, seconds };
}

export function parseKeep(value: string | number): number {
  const problem = integerProblem(String(value), 1, MAX_KEEP);
  if (problem) throw new UsageError(givenProblem('--keep', String(value), problem), `give a whole number of backups from 1 to ${MAX_KEEP}; nothing was changed`);
  return Number(String(value).trim());
}

/** The timer and its service, as the schedule wants them (system units). */
export function scheduleUnits(schedule: Schedule): DesiredFile[] {
  const values = { every: schedule.every, keep: schedule.keep };
  return [
    desired(SCHEDULE_SERVICE, renderTemplate('service-deploy-backup.service', { ...values, binary: LAYOUT.binary })),
    desired(SCHEDULE_TIMER, renderTemplate('service-deploy-backup.timer', values)),
  ];
}

/** The schedule in effect, read from the timer and service we wrote (undefined: none). */
export async function readSchedule(host: Host): Promise<Schedule | undefined> {
  const [timer, service] = await Promise.all([host.files.read(LAYOUT.backupTimerFile), host.files.read(LAYOUT.backupServiceFile)]);
  if (timer === undefined) return undefined;
  const every = /^OnUnitActiveSec=(\S+)$/m.exec(timer)?.[1];
  const keep = Number(/ --keep (\d+)/.exec(service ?? '')?.[1] ?? DEFAULT_SCHEDULED_KEEP);
  if (!every) return undefined;
  try {
    const parsed = parseEvery(every);
    return parsed === 'off' ? undefined : { ...parsed, keep };
  } catch {
    return undefined;
  }
}

export interface StoredBackup {
  /** Program path. */
  path: string;
  mtimeMs: number;
  size: number;
}

/** The backups in the backup folder, newest first (only files with our name). */
export async function listBackups(host: Host, dir: string = LAYOUT.backupDir): Promise<StoredBackup[]> {
  const out: StoredBackup[] = [];
  for (const name of await host.files.list(dir)) {
    if (!BACKUP_FILE_NAME.test(name)) continue;
    const p = path.posix.join(dir, name);
    const info = await host.files.stat(p);
    if (info?.isFile && !info.isSymlink) out.push({ path: p, mtimeMs: info.mtimeMs, size: info.size });
  }
  return out.sort((a, b) => b.mtimeMs - a.mtimeMs || b.path.localeCompare(a.path));
}

export async function runBackupCommand(request: BackupRequest): Promise<void> {
  const host = createHost({ verbose: request.verbose, quiet: request.json });
  // Every flag is checked before anything is done.
  const every = request.every !== undefined ? parseEvery(request.every) : undefined;
  const keep = request.keep !== undefined ? parseKeep(request.keep) : undefined;
  if (every === 'off' && keep !== undefined) throw new UsageError('--keep does not go with --every off', 'remove the schedule with --every off alone; nothing was changed');
  if (every !== undefined) return setSchedule(request.check ? readOnlyHost(host) : host, every, keep, request);
  if (request.check) return planBackupNow(readOnlyHost(host), keep, request);
  return backupNow(host, keep, request);
}

export interface BackupNowReport {
  backup: WrittenBackup;
  /** The units stopped while the databases were copied (started again after). */
  stopped: string[];
  /** How long the gateway was stopped, in ms (0 when it was not running). */
  pausedMs: number;
  pruned: string[];
}

/**
 * A consistent, verified backup into the backup folder, with nothing removed: under
 * the install lock, the database writers stopped, the archive written, read back and
 * its databases checked, the writers started again; then, with --keep, the oldest
 * backups beyond N removed.
 */
export async function takeBackup(host: Host, keep?: number): Promise<BackupNowReport> {
  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    await sweepLeftovers(host);
    const started = Date.now();
    const writers = await stopWriters(host);
    let backup: WrittenBackup;
    try {
      backup = await writeBackup(host, { dir: LAYOUT.backupDir });
    } finally {
      await writers.resume();
    }
    const pausedMs = writers.stopped.includes(LAYOUT.gatewayUnit) ? Date.now() - started : 0;
    const pruned: string[] = [];
    if (keep !== undefined) {
      for (const old of (await listBackups(host)).slice(keep)) {
        if (old.path === backup.archive) continue;
        await host.files.remove(old.path);
        pruned.push(old.path);
      }
    }
    return { backup, stopped: writers.stopped, pausedMs, pruned };
  } finally {
    await lock.release();
  }
}

async function backupNow(host: Host, keep: number | undefined, request: BackupRequest): Promise<void> {
  const report = await takeBackup(host, keep);
  const { backup } = report;
  if (request.json) {
    const { emitJson, backupOutput } = await import('../json/index.js');
    emitJson(backupOutput, {
      ok: true,
      archive: backup.archive,
      entries: backup.entries,
      bytes: backup.bytes,
      databases: backup.databases,
      skipped: backup.skipped,
      stopped: report.stopped,
      pausedMs: report.pausedMs,
      pruned: report.pruned,
    });
    return;
  }
  for (const s of backup.skipped) host.log.warn(`not in the backup: ${s.path} (${s.why})`);
  printLine(`backup: ${backup.archive} (${backup.entries} entries, ${backup.bytes} bytes of files, 0600)`);
  printLine(`databases: ${backup.databases.length} pass PRAGMA integrity_check${backup.databases.length ? ` (${backup.databases.map((d) => d.path).join(', ')})` : ''}`);
  if (report.stopped.length) printLine(`paused while copying: ${report.stopped.join(', ')} (gateway ${(report.pausedMs / 1000).toFixed(1)} s), running again`);
  for (const p of report.pruned) printLine(`removed old backup ${p} (--keep ${keep})`);
  printLine(`restore it with: service-deploy restore ${backup.archive}`);
}

async function planBackupNow(host: Host, keep: number | undefined, request: BackupRequest): Promise<void> {
  const plan = await planBackup(host);
  const archive = backupName(host.now(), 1, LAYOUT.backupDir);
  const running: string[] = [];
  for (const unit of [LAYOUT.qmdRefreshTimer, LAYOUT.qmdRefreshService, LAYOUT.gatewayUnit, LAYOUT.qmdMcpService]) {
    if (await host.services.isActive('user', unit).catch(() => false)) running.push(unit);
  }
  const existing = await listBackups(host);
  const prune = keep === undefined ? [] : existing.slice(Math.max(0, keep - 1)).map((b) => b.path);
  if (request.json) {
    const { emitJson, backupPlanOutput } = await import('../json/index.js');
    emitJson(backupPlanOutput, { ok: true, mode: 'check', archive, entries: plan.items.length, bytes: plan.bytes, skipped: plan.skipped, stop: running, prune });
    return;
  }
  if (plan.items.length === 0) {
    printLine('would back up nothing: there is no deployment here');
  } else {
    if (running.length) printLine(`would stop     ${running.join(', ')} (started again after the copy)`);
    printLine(`would write    ${archive} (${plan.items.length} entries, ${plan.bytes} bytes of files; 0600 in ${LAYOUT.backupDir}, 0700)`);
    printLine('would check    the archive with restore\'s reader and every SQLite database in it (PRAGMA integrity_check)');
  }
  for (const s of plan.skipped) printLine(`would leave out ${s.path} (${s.why})`);
  for (const p of prune) printLine(`would remove   ${p} (--keep ${keep})`);
  printLine('plan: nothing was changed (--check)');
}

/** `--every PERIOD [--keep N]` or `--every off`: the timer and its service, through the manifest. */
async function setSchedule(host: Host, every: { every: string; seconds: number } | 'off', keep: number | undefined, request: BackupRequest): Promise<void> {
  const check = Boolean(request.check);
  if (every === 'off') {
    const files = [LAYOUT.backupTimerFile, LAYOUT.backupServiceFile];
    const found = await Promise.all(files.map((p) => host.files.exists(p)));
    const existing = files.filter((_, i) => found[i]);
    const present = existing.length > 0;
    if (!check && present) {
      const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
      try {
        await host.services.disable('system', LAYOUT.backupTimer);
        for (const p of files) await host.files.remove(p);
        await forgetRecorded(host, files);
        await host.services.daemonReload('system');
      } finally {
        await lock.release();
      }
    }
    const removed = present ? [`disable ${LAYOUT.backupTimer}`, ...existing.map((p) => `${p}: removed`)] : [];
    if (request.json) {
      const { emitJson, backupScheduleOutput } = await import('../json/index.js');
      emitJson(backupScheduleOutput, { ok: true, mode: check ? 'check' : 'apply', schedule: null, changed: present, changes: removed });
    } else printLine(present ? `${check ? 'would remove' : 'removed'} the backup schedule (${LAYOUT.backupTimer}); the backups in ${LAYOUT.backupDir} stay` : 'no backup schedule is set');
    return;
  }
  const schedule: Schedule = { ...every, keep: keep ?? DEFAULT_SCHEDULED_KEEP };
  const units = scheduleUnits(schedule);
  const changes = (await Promise.all(units.map((u) => planFile(host, u)))).filter((c) => c !== undefined);
  const active = await host.services.isActive('system', LAYOUT.backupTimer).catch(() => false);
  if (!check && (changes.length > 0 || !active)) {
    const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
    try {
      for (const unit of units) await writeDesired(host, unit);
      if (changes.length > 0) await host.services.daemonReload('system');
      await host.services.enableNow('system', LAYOUT.backupTimer);
      if (changes.length > 0 && active) await host.services.restart('system', LAYOUT.backupTimer);
    } finally {
      await lock.release();
    }
  }
  const what = { every: schedule.every, keep: schedule.keep, dir: LAYOUT.backupDir, timer: LAYOUT.backupTimer };
  if (request.json) {
    const lines = [...changes.map((c) => c!.summary), ...(active ? [] : [`enable ${LAYOUT.backupTimer}`])];
    const { emitJson, backupScheduleOutput } = await import('../json/index.js');
    emitJson(backupScheduleOutput, { ok: true, mode: check ? 'check' : 'apply', schedule: what, changed: lines.length > 0, changes: lines });
    return;
  }
  for (const c of changes) printLine(`${check ? 'would write' : 'wrote'} ${c!.summary}`);
  if (check && !active) printLine(`would enable  ${LAYOUT.backupTimer}`);
  printLine(`${check ? 'plan' : 'schedule'}: a verified backup every ${schedule.every} into ${LAYOUT.backupDir}, the newest ${schedule.keep} kept${check ? ' (nothing was changed: --check)' : ''}`);
}
