import { createHash } from '../host/crypto.js';
import path from 'node:path';
import { resolveDeploymentInputs } from '../answers/index.js';
import { UsageError } from '../errors.js';
import { createHost, readOnlyHost, type Host } from '../host/index.js';
import { givenProblem, integerProblem } from '../input.js';
import { LAYOUT } from '../layout.js';
import { printLine } from '../output.js';
import { emitJson, restorePlanOutput } from '../json/index.js';
import { octal } from '../pipeline/files.js';
import {
  DEFAULT_ARCHIVE_LIMITS,
  checkParents,
  inspectArchive,
  openArchive,
  parentsOf,
  stageArchive,
  swapIntoPlace,
  type ArchiveItem,
  type ArchiveLimits,
  type Manifest,
} from './archive.js';
import { checkArchiveDatabases, databaseProblems } from './backup.js';
import { installWithLock } from './install.js';
import { stopWriters } from './writers.js';
import { sweepLeftovers } from './leftovers.js';
import type { InstallRequest } from './request.js';
import { mcpTokenVerdict, rejectedTokenMessage } from '../steps/mcp.js';

/** `service-deploy restore ARCHIVE`: the archive, and install settings for the run that follows. */
export interface RestoreRequest extends InstallRequest {
  archive: string;
  /** Raise the per-entry and total size limits (MiB, as given on the command line). */
  maxEntryMib?: number | string;
  maxTotalMib?: number | string;
}

const MIB = 1024 * 1024;
const MAX_LIMIT_MIB = 1024 * 1024; // 1 TiB

function limitsOf(request: RestoreRequest): ArchiveLimits {
  const mib = (value: number | string | undefined, flag: string, fallback: number): number => {
    if (value === undefined) return fallback;
    const problem = integerProblem(String(value), 1, MAX_LIMIT_MIB);
    if (problem) throw new UsageError(givenProblem(flag, String(value), problem), `give a whole number of MiB from 1 to ${MAX_LIMIT_MIB}; nothing was changed`);
    return Number(String(value).trim()) * MIB;
  };
  return {
    ...DEFAULT_ARCHIVE_LIMITS,
    maxEntryBytes: mib(request.maxEntryMib, '--max-entry-mib', DEFAULT_ARCHIVE_LIMITS.maxEntryBytes),
    maxTotalBytes: mib(request.maxTotalMib, '--max-total-mib', DEFAULT_ARCHIVE_LIMITS.maxTotalBytes),
  };
}

/**
 * Puts a backup's files back (config, state, workspace, channel files, nginx site,
 * TLS, cron, units), then runs the install with the restored answers, which brings
 * back what the reset uninstalled (runtime, mesh client) and restarts the services.
 *
 * The archive is untrusted: it is read whole and every entry checked before anything
 * is written (archive.ts); any problem refuses it (exit 2) with nothing changed. Then
 * the roots it holds are staged in private folders beside their places and moved in.
 * With --check or --diff: what would be put back, on a read-only host.
 */
export async function runRestore(request: RestoreRequest): Promise<void> {
  const host = createHost({ verbose: request.verbose, quiet: request.json });
  if (request.resetClean) throw new UsageError('restore does not take --reset-clean', 'run `service-deploy install --reset-clean` and `service-deploy restore ARCHIVE` separately');
  const limits = limitsOf(request);
  // An absolute path is a path on the server (as --reset-clean printed it), so it maps
  // under SERVICE_DEPLOY_ROOT like every other; a relative one is relative to here.
  const archive = path.isAbsolute(request.archive) ? host.paths.real(request.archive) : path.resolve(request.archive);
  const handle = await openArchive(archive, request.archive);
  try {
    // Everything is checked before anything is written (not even the lock file).
    const check = Boolean(request.check || request.diff);
    const readOnly = readOnlyHost(host);
    const manifest = await inspectArchive(handle, request.archive, limits);
    await checkParents(readOnly, manifest);
    await checkRestoredAnswers(readOnly, manifest, request);
    if (check) {
      await printRestorePlan(readOnly, manifest, request);
      return;
    }
    // Every database in the archive passes integrity_check before anything is changed.
    const databases = await checkArchiveDatabases(host, handle, manifest);
    const bad = databaseProblems(databases);
    if (bad) throw new UsageError(`${request.archive}: a database in it fails PRAGMA integrity_check: ${bad}`, 'restore an earlier backup; nothing was changed');
    host.log.debug(`${databases.length} database(s) in ${request.archive} pass integrity_check`);
    const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
    try {
      await sweepLeftovers(host);
      // The gateway and the memory refresh write into the folders being replaced: they
      // stay stopped until the install that follows starts them with the restored state.
      await stopWriters(host);
      const staged = await stageArchive(host, handle, manifest, limits);
      await swapIntoPlace(host, staged);
      host.log.info(`restored ${manifest.items.length} entries (${manifest.roots.map((r) => r.path).join(', ')}) from ${request.archive}`);
      await reloadNginxForRestoredSite(host);
    } finally {
      await lock.release();
    }
  } finally {
    await handle.close();
  }
  const channel = Boolean(await host.files.exists(LAYOUT.channelEnv));
  await installWithLock({ host, request: { ...request, nonInteractive: true, channel: request.channel || channel } });
}

/**
 * The answers the install after the restore will use (the backup's, under the
 * environment and flags given now), resolved and checked before anything is written:
 * bad values, and an MCP token the service rejects, are refused with nothing changed.
 */
async function checkRestoredAnswers(host: Host, manifest: Manifest, request: RestoreRequest): Promise<void> {
  const { profile, answers } = await resolveDeploymentInputs(host, request.answers, { current: manifest.answers, needMeshAuthKey: false });
  const verdict = await mcpTokenVerdict(host, profile, answers.mcpToken);
  if (verdict.status === 'rejected') {
    const { message, hint } = rejectedTokenMessage(verdict, profile);
    throw new UsageError(`${message}: the token in ${request.archive} (or SERVICE_MCP_TOKEN) is not accepted`, `${hint} (give it as SERVICE_MCP_TOKEN); nothing was changed`);
  }
}

type ItemState = 'new' | 'same' | 'differs';

interface PlannedItem extends ArchiveItem {
  state: ItemState;
  why?: string;
}

async function sha256Of(host: Host, p: string): Promise<string | undefined> {
  const bytes = await host.files.readBytes(p);
  return bytes ? createHash('sha256').update(bytes).digest('hex') : undefined;
}

/** How an archive item compares with the server. */
async function compare(host: Host, item: ArchiveItem): Promise<PlannedItem> {
  const info = await host.files.stat(item.path);
  if (!info) return { ...item, state: 'new' };
  const kind = info.isSymlink ? 'symlink' : info.isDirectory ? 'directory' : info.isFile ? 'file' : 'other';
  if (kind !== item.kind) return { ...item, state: 'differs', why: `a ${kind} there now` };
  const reasons: string[] = [];
  if (item.kind === 'file' && (info.size !== item.size || (await sha256Of(host, item.path)) !== item.sha256)) reasons.push('content');
  if (item.kind === 'symlink' && (await host.files.readLink(item.path)) !== item.target) reasons.push('target');
  if (item.kind !== 'symlink' && info.mode !== item.mode) reasons.push(`mode ${octal(info.mode)} -> ${octal(item.mode)}`);
  return reasons.length ? { ...item, state: 'differs', why: reasons.join(', ') } : { ...item, state: 'same' };
}

/** What is on the server under the archive's roots but not in the archive (restore replaces roots whole). */
async function notInArchive(host: Host, manifest: Manifest): Promise<string[]> {
  const inArchive = new Set(manifest.items.map((i) => i.path));
  const out: string[] = [];
  const walk = async (p: string): Promise<void> => {
    const info = await host.files.stat(p);
    if (!info) return;
    if (!inArchive.has(p)) {
      out.push(p);
      return;
    }
    if (info.isDirectory && !info.isSymlink) for (const name of await host.files.list(p)) await walk(path.posix.join(p, name));
  };
  for (const root of manifest.roots) await walk(root.path);
  return out;
}

async function printRestorePlan(host: Host, manifest: Manifest, request: RestoreRequest): Promise<void> {
  const items = await Promise.all(manifest.items.map((item) => compare(host, item)));
  const remove = await notInArchive(host, manifest);
  const create = (await Promise.all(manifest.roots.map((r) => parentsOf(host, r.path)))).flatMap((p) => p.missing);
  if (request.json) {
    emitJson(restorePlanOutput, {
      ok: true,
      mode: 'check',
      archive: request.archive,
      entries: items.length,
      bytes: manifest.totalBytes,
      items: items.map((i) => ({ path: i.path, kind: i.kind, size: i.size, mode: octal(i.mode), state: i.state, ...(i.why ? { why: i.why } : {}), ...(i.target ? { target: i.target } : {}) })),
      createFolders: [...new Set(create)],
      remove,
      then: 'install (with the restored answers)',
    });
    return;
  }
  for (const dir of new Set(create)) printLine(`would create  ${dir}/ (0755)`);
  for (const i of items) {
    const what = i.kind === 'symlink' ? `-> ${i.target}` : i.kind === 'directory' ? `${octal(i.mode)} folder` : `${octal(i.mode)} ${i.size} B`;
    printLine(`would restore ${i.path}  ${what}  (${i.state}${i.why ? `: ${i.why}` : ''})`);
  }
  for (const p of remove) printLine(`would remove  ${p} (not in the backup)`);
  const changed = items.filter((i) => i.state !== 'same').length;
  printLine(`plan: ${items.length} entries, ${changed} new or different, ${remove.length} to remove; then the install runs with the restored answers (nothing was changed: --check)`);
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
