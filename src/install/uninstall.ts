import { loadComponents } from '../components.js';
import { CancelledError, UsageError } from '../errors.js';
import { aptPurge, installedPackages, purgeWouldRemove } from '../host/apt.js';
import { createHost, readOnlyHost, type Host } from '../host/index.js';
import { emitJson, uninstallOutput, uninstallPlanOutput } from '../json/index.js';
import { BACKUP_PREFIX, LAYOUT } from '../layout.js';
import { printLine } from '../output.js';
import { readManifest } from '../pipeline/manifest.js';
import { removedIfEmpty, uninstallRemoves } from '../pipeline/writes.js';
import { readAddedPackages } from '../pipeline/packages.js';
import { CHROME_SOURCES } from '../steps/browser.js';
import { removeChannelFirewall } from '../steps/channel-firewall.js';
import { DEFAULT_SITE_FILE, DEFAULT_SITE_LINK, defaultSite, nginxIsOurs } from '../steps/nginx-hardening.js';
import { keepBackupCopy, planBackup, writeBackup } from './backup.js';
import { sweepLeftovers } from './leftovers.js';
import { stopWriters } from './writers.js';
import { FOOTPRINT, MANAGED_PLACES } from './footprint.js';

export interface UninstallRequest {
  yes?: boolean;
  check?: boolean;
  json?: boolean;
  verbose?: boolean;
  nonInteractive?: boolean;
}

/**
 * Everything service-deploy writes, folders whole: the reset's list (runtime, state,
 * units, site, TLS, cron, guard, /opt/service-deploy, the mesh apt source...) and what
 * a reset keeps (its writers declare `life: 'server'`: logs, the browser's apt source,
 * the channel firewall's files, nginx's sandbox drop-in, /run, the binary). Every path
 * of the install manifest is added to it at run time.
 */
export const UNINSTALL_REMOVES: readonly string[] = uninstallRemoves(FOOTPRINT);

/**
 * Folders the install made that others may use too (`life: 'if-empty'`): root's systemd
 * user folders, nginx's drop-in folder (shared with an operator's `systemctl edit
 * nginx`): removed only when empty afterwards.
 */
const PARENTS_IF_EMPTY = removedIfEmpty(FOOTPRINT);

/** Packages from the apt sources the install adds: ours even without a record. */
const OWN_SOURCE_PACKAGES: Array<{ source: string; package: (c: ReturnType<typeof loadComponents>) => string }> = [
  { source: '/etc/apt/sources.list.d/tailscale.list', package: (c) => c.meshClient.package },
  { source: CHROME_SOURCES, package: (c) => c.browser.ubuntu.package },
];

export interface Left {
  what: string;
  why: string;
}

interface Inventory {
  /** Paths present now that uninstall removes. */
  paths: string[];
  /** Packages the install added that are installed now. */
  packages: string[];
  /** What stays, and why. */
  left: Left[];
  /** Whether the record of added packages exists (else only our sources' packages are known). */
  recorded: boolean;
}

function covered(p: string, roots: readonly string[]): boolean {
  return roots.some((r) => p === r || p.startsWith(`${r}/`));
}

/** What is ours on this server now (read-only): paths, packages, and what stays. */
async function inventory(host: Host): Promise<Inventory> {
  const components = loadComponents(host.env);
  const roots = [...UNINSTALL_REMOVES];
  const manifest = await readManifest(host, MANAGED_PLACES);
  for (const p of manifest.entries?.keys() ?? []) if (!covered(p, roots)) roots.push(p);
  const paths: string[] = [];
  for (const p of roots) if (await host.files.exists(p)) paths.push(p);

  const installed = await installedPackages(host);
  const record = await readAddedPackages(host);
  const ours = new Set(record.packages);
  for (const own of OWN_SOURCE_PACKAGES) if (await host.files.exists(own.source)) ours.add(own.package(components));
  const packages = [...ours].filter((p) => installed.has(p)).sort();

  const left: Left[] = [];
  const before = [...new Set([...components.systemPackages, components.browser.debian.package, components.browser.ubuntu.package])].filter((p) => installed.has(p) && !ours.has(p));
  if (before.length > 0) {
    left.push({
      what: `packages ${before.join(' ')}`,
      why: record.missing ? `not recorded as added by service-deploy (${LAYOUT.packagesFile} is missing: an install from before the record); remove them with apt-get purge if nothing else needs them` : 'the system had them before the install',
    });
  }
  if (record.problem) left.push({ what: LAYOUT.packagesFile, why: `${record.problem}: only the packages of our own apt sources are removed` });
  return { paths, packages, left, recorded: !record.missing && !record.problem };
}

/** The backups stay: they are the customer's data (restore takes them back with a new install). */
async function backupsLeft(host: Host, extra: string[] = []): Promise<Left[]> {
  const tmp = (await host.files.list('/tmp')).filter((n) => n.startsWith(BACKUP_PREFIX.slice('/tmp/'.length)) && n.endsWith('.tar.gz')).map((n) => `/tmp/${n}`);
  const kept = [...new Set([...tmp, ...extra])];
  const out: Left[] = [];
  if (kept.length > 0) out.push({ what: kept.join(' '), why: 'backups (in /tmp until the next boot): copy them off the server if you need them' });
  if (await host.files.exists(LAYOUT.backupDir)) out.push({ what: `${LAYOUT.backupDir}/`, why: 'backups kept across reboots; remove the folder when they are no longer needed' });
  return out;
}

/** Commands uninstall runs, in words (for --check). */
const UNINSTALL_COMMANDS = [
  `systemctl --user disable --now ${LAYOUT.gatewayUnit} ${LAYOUT.qmdMcpService} ${LAYOUT.qmdRefreshTimer}`,
  'tailscale logout',
  'nft delete table inet service_deploy_channel; ufw/firewalld: close 18790/tcp where the install opened it',
  'loginctl disable-linger root',
  'apt-get purge (the packages above, when apt removes nothing else with them)',
  'systemctl daemon-reload; systemctl --user daemon-reload',
  'nginx -t, then reload nginx (when nginx stays; restart when its sandbox drop-in was removed)',
];

export async function runUninstall(request: UninstallRequest): Promise<void> {
  const host = createHost({ verbose: request.verbose, quiet: request.json });
  if (request.check) return planUninstall(readOnlyHost(host), request);
  if (!request.yes) {
    if (!process.stdin.isTTY || request.nonInteractive || request.json) {
      throw new UsageError('uninstall removes the deployment and everything the install added, and needs confirmation', 'add --yes to confirm without a terminal (--check shows what it would remove)');
    }
    const { confirm } = await import('../answers/index.js');
    if (!(await confirm('Remove the agent and everything service-deploy installed (a backup is written first)?'))) {
      throw new CancelledError('uninstall cancelled; nothing was changed');
    }
  }
  const runDirWasThere = await host.files.exists(LAYOUT.runDir);
  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  let result: UninstallResult;
  try {
    result = await uninstall(host);
  } finally {
    await lock.release();
  }
  // The lock's folder goes last, after the lock itself.
  await host.files.remove(LAYOUT.runDir);
  if (runDirWasThere) result.removed.push(LAYOUT.runDir);
  report(request, result);
}

interface UninstallResult {
  backup?: string;
  backupCopy?: string;
  removed: string[];
  purged: string[];
  left: Left[];
}

async function uninstall(host: Host): Promise<UninstallResult> {
  await sweepLeftovers(host);
  // First the backup (verified), and its copy that survives a reboot; nothing is removed before.
  let backup: string | undefined;
  let backupCopy: string | undefined;
  if ((await planBackup(host)).items.length > 0) {
    // The databases' writers stop first (as for reset and `backup now`): a gateway still
    // answering a chat would change a WAL file while tar reads it. They stay stopped, as
    // everything is removed next; a failed backup starts them again (nothing removed).
    const writers = await stopWriters(host);
    let written;
    try {
      written = await writeBackup(host);
    } catch (error) {
      await writers.resume();
      throw error;
    }
    backup = written.archive;
    backupCopy = await keepBackupCopy(host, written.archive);
    host.log.info(`backup written and verified: ${backup} (copy: ${backupCopy})`);
  }
  const found = await inventory(host);
  const nginxWasOurs = await nginxIsOurs(host);

  await host.services.disable('user', LAYOUT.gatewayUnit).catch(() => undefined);
  await host.services.disable('user', LAYOUT.qmdRefreshTimer).catch(() => undefined);
  await host.services.disable('user', LAYOUT.qmdMcpService).catch(() => undefined);
  if (await host.exec.which('tailscale')) await host.exec.run('tailscale', ['logout'], { allowFailure: true, timeoutMs: 60_000 });
  await removeChannelFirewall(host);
  if (await host.files.exists(LAYOUT.lingerFile)) await host.exec.run('loginctl', ['disable-linger', 'root'], { allowFailure: true });

  const removed: string[] = [];
  for (const p of found.paths) {
    if (p === LAYOUT.binary || p === LAYOUT.runDir) continue; // last: the lock lives in runDir
    await host.files.remove(p);
    removed.push(p);
  }
  if (await host.files.exists(LAYOUT.lingerFile)) {
    await host.files.remove(LAYOUT.lingerFile);
    removed.push(LAYOUT.lingerFile);
  }

  const left = [...found.left];
  const purged = await purgePackages(host, found.packages, left);
  await host.services.daemonReload('user').catch(() => undefined);
  await host.services.daemonReload('system').catch(() => undefined);
  if (await host.exec.which('nginx')) {
    const test = await host.exec.run('nginx', ['-t'], { allowFailure: true });
    // A sandbox applies at start: without its drop-in nginx runs as Debian configures it only after a restart.
    const sandboxRemoved = found.paths.includes(LAYOUT.nginxHardeningDropIn);
    if (test.exitCode === 0) await (sandboxRemoved ? host.services.restart('system', 'nginx') : host.services.reload('system', 'nginx')).catch(() => undefined);
    else left.push({ what: 'nginx configuration', why: 'nginx -t fails without our site; nginx was not reloaded (see nginx -t)' });
    if (nginxWasOurs && (await defaultSite(host)).state === 'disabled' && (await host.files.exists(DEFAULT_SITE_FILE))) {
      left.push({ what: `${DEFAULT_SITE_LINK} (not enabled)`, why: `nginx stays (see above), and Debian's default site stays disabled as the install left it (port 80 closed); enable it with: ln -s ${DEFAULT_SITE_FILE} ${DEFAULT_SITE_LINK} && systemctl reload nginx` });
    }
  }
  removed.push(...(await removeEmptyParents(host, PARENTS_IF_EMPTY)));
  // The binary last (a running program's file can be unlinked; this run ends normally).
  if (await host.files.exists(LAYOUT.binary)) {
    await host.files.remove(LAYOUT.binary);
    removed.push(LAYOUT.binary);
  }
  left.push(...(await backupsLeft(host, [backup, backupCopy].filter((b): b is string => b !== undefined && b.startsWith('/tmp/')))));
  return { backup, backupCopy, removed, purged, left };
}

/**
 * Purges the packages the install added, when apt would remove nothing else with them
 * (a package the customer installed since, depending on one of ours). Otherwise each
 * package is tried alone, and the ones that would take others along stay (listed).
 */
async function purgePackages(host: Host, packages: string[], left: Left[]): Promise<string[]> {
  if (packages.length === 0 || !(await host.exec.which('apt-get'))) return [];
  const mine = new Set(packages);
  const extras = async (names: string[]) => (await purgeWouldRemove(host, names)).filter((p) => !mine.has(p));
  let purge = packages;
  const others = await extras(packages);
  if (others.length > 0) {
    purge = [];
    for (const p of packages) if ((await extras([p])).length === 0) purge.push(p);
    const kept = packages.filter((p) => !purge.includes(p));
    if (kept.length > 0) left.push({ what: `packages ${kept.join(' ')}`, why: `added by the install, but purging them would also remove ${others.join(' ')}, which the install did not add` });
  }
  await aptPurge(host, purge);
  return purge;
}

/** Removes each folder that is empty now (deepest first); returns the ones removed. */
async function removeEmptyParents(host: Host, dirs: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const dir of dirs) {
    const info = await host.files.stat(dir);
    if (!info?.isDirectory || info.isSymlink) continue;
    if ((await host.files.list(dir)).length > 0) continue;
    await host.files.remove(dir);
    removed.push(dir);
  }
  return removed;
}

function report(request: UninstallRequest, result: UninstallResult): void {
  if (request.json) {
    emitJson(uninstallOutput, { ok: true, ...result });
    return;
  }
  if (result.backup) printLine(`backup: ${result.backup} (copy: ${result.backupCopy})`);
  else printLine('backup: none (no deployment data here)');
  for (const p of result.removed) printLine(`removed  ${p}`);
  for (const p of result.purged) printLine(`purged   ${p}`);
  for (const l of result.left) printLine(`left     ${l.what}: ${l.why}`);
  printLine('service-deploy is uninstalled.');
}

/** --check: what would be backed up, removed, purged and left; on a read-only host. */
async function planUninstall(host: Host, request: UninstallRequest): Promise<void> {
  const [plan, found] = await Promise.all([planBackup(host), inventory(host)]);
  const left = [...found.left, ...(await backupsLeft(host))];
  if (request.json) {
    emitJson(uninstallPlanOutput, { ok: true, mode: 'check', backup: { entries: plan.items.length, bytes: plan.bytes }, remove: found.paths, purge: found.packages, commands: UNINSTALL_COMMANDS, left });
    return;
  }
  if (plan.items.length > 0) printLine(`would back up ${plan.items.length} entries (${plan.bytes} bytes) to /tmp/openclaw-backup-*.tar.gz and ${LAYOUT.backupDir}/`);
  for (const p of found.paths) printLine(`would remove  ${p}`);
  for (const p of found.packages) printLine(`would purge   ${p} (unless apt would remove other packages with it)`);
  for (const c of UNINSTALL_COMMANDS) printLine(`would run     ${c}`);
  for (const l of left) printLine(`would leave   ${l.what}: ${l.why}`);
  printLine('plan: nothing was changed (--check)');
}
