import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LOCKS, type Change, type Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { renderTemplate } from '../render/template.js';
import { ensureFolder, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { desired, type WrittenFile, type WrittenFolder } from '../pipeline/writes.js';
import { runtimeEnv } from '../runtime/openclaw.js';

/**
 * QMD as the agent's memory (spec 1: "persistent conversation memory"): a QMD
 * collection over the agent's memory files, refreshed by a systemd user timer beside
 * the gateway, kept private. Session transcripts are not files in the pinned OpenClaw
 * (SQLite rows), so the memory files are what there is to index.
 */
export const MEMORY_COLLECTION = 'memory';
/** The workspace's MEMORY.md and memory/*.md (OpenClaw's memory files), QMD's --mask syntax. */
export const MEMORY_PATTERN = 'MEMORY.md,memory/*.md';
export const REFRESH_PERIOD_MINUTES = 15;

const REFRESH_SCRIPT: WrittenFile = { path: LAYOUT.qmdRefreshScript, type: 'file', mode: 0o755, check: 'sha256' };
const REFRESH_SERVICE: WrittenFile = { path: LAYOUT.qmdRefreshServiceFile, type: 'file', mode: 0o644, check: 'sha256' };
const REFRESH_TIMER: WrittenFile = { path: LAYOUT.qmdRefreshTimerFile, type: 'file', mode: 0o644, check: 'sha256' };
/** The agent's memory files' folders (OpenClaw fills them; QMD needs them to exist). */
const MEMORY_FOLDERS: WrittenFolder[] = [LAYOUT.workspaceDir, `${LAYOUT.workspaceDir}/memory`].map((p) => ({ path: p, type: 'folder', mode: 0o700 }));
/** QMD's index (its cache folder, private) and its collection config: the index is in every backup. */
const QMD_CACHE_DIR: WrittenFolder = { path: LAYOUT.qmdCacheDir, type: 'folder', mode: 0o700 };
const QMD_CONFIG_DIR: WrittenFolder = { path: LAYOUT.qmdConfigDir, type: 'folder', mode: 0o700, life: 'backup' };
const QMD_INDEX: WrittenFile = { path: LAYOUT.qmdIndex, type: 'file', mode: 0o600, life: 'backup', writtenBy: 'QMD' };
/** When the index was last refreshed (a missing stamp makes the install refresh it). */
const REFRESH_STAMP: WrittenFile = { path: LAYOUT.qmdRefreshStamp, type: 'file', mode: 0o600 };

export function refreshScript(): DesiredFile {
  return desired(
    REFRESH_SCRIPT,
    renderTemplate('qmd-refresh.sh', {
      qmdBin: LAYOUT.qmdBin,
      modelsDir: LAYOUT.qmdModelsDir,
      cacheDir: LAYOUT.qmdCacheDir,
      configDir: LAYOUT.qmdConfigDir,
      stamp: LAYOUT.qmdRefreshStamp,
    }),
  );
}

export function refreshServiceUnit(): DesiredFile {
  return desired(REFRESH_SERVICE, renderTemplate('qmd-refresh.service', { home: LAYOUT.runtimeHome, nodeBin: `${LAYOUT.nodePrefix}/bin`, script: LAYOUT.qmdRefreshScript }));
}

export function refreshTimerUnit(): DesiredFile {
  return desired(REFRESH_TIMER, renderTemplate('qmd-refresh.timer', { periodMinutes: REFRESH_PERIOD_MINUTES }));
}

export interface QmdCollection {
  path?: string;
  pattern?: string;
}

/**
 * One collection of QMD's index.yml, which QMD writes with the yaml library:
 * `collections:` / two-space name / four-space `path:` and `pattern:`. A reader for that
 * shape only (no YAML library for two fields); undefined when the collection is absent.
 */
export function readQmdCollection(text: string, name: string): QmdCollection | undefined {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => /^collections:\s*$/.test(line));
  if (start < 0) return undefined;
  let inside = false;
  let found: QmdCollection | undefined;
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    if (!line.startsWith(' ')) break; // the next top-level key
    const entry = /^ {2}(["']?)(.+?)\1:\s*$/.exec(line);
    if (entry) {
      inside = entry[2] === name;
      if (inside) found = {};
      continue;
    }
    const field = /^ {4}(path|pattern):\s*(.*?)\s*$/.exec(line);
    if (inside && field) found![field[1] as 'path' | 'pattern'] = unquote(field[2]!);
  }
  return found;
}

function unquote(value: string): string {
  const quoted = /^(["'])(.*)\1$/.exec(value);
  return quoted ? quoted[2]! : value;
}

interface IndexPlan {
  files: DesiredFile[];
  unitsChanged: boolean;
  collection?: 'create' | 'replace';
  refresh: boolean;
  modes: string[];
  timer: 'ok' | 'enable' | 'restart';
}

/** Files and folders under QMD's index and config folders whose mode lets anyone but root in. */
export async function openModes(host: Host): Promise<string[]> {
  const open: string[] = [];
  for (const dir of [LAYOUT.qmdCacheDir, LAYOUT.qmdConfigDir]) {
    const info = await host.files.stat(dir);
    if (!info) continue;
    if (info.mode !== 0o700) open.push(dir);
    for (const name of await host.files.list(dir)) {
      const child = await host.files.stat(`${dir}/${name}`);
      if (child && !child.isDirectory && child.mode & 0o077) open.push(`${dir}/${name}`);
    }
  }
  return open;
}

function qmd(host: Host, args: string[]) {
  // QMD needs the pinned Node on PATH and root's home (its index and config), nothing of OpenClaw's.
  const { PATH, HOME, NO_COLOR } = runtimeEnv(host);
  return host.exec.run(host.paths.real(LAYOUT.qmdBin), args, { env: { PATH, HOME, NO_COLOR }, timeoutMs: 10 * 60_000 });
}

/**
 * The memory collection, created by the install and idempotent on re-run; the refresh
 * timer (`qmd update`, embeddings only where models exist) as user units beside the
 * gateway; the index private (folders 0700, files 0600).
 */
export const memoryIndexStep: Step = {
  id: 'memory-index',
  title: 'Memory index (QMD collection over the memory files, refresh timer)',
  // gateway-service: it turns on linger and waits for root's user manager, whose units these are.
  needs: ['memory', 'runtime-config', 'gateway-service', LOCKS.userUnits],
  writes: [REFRESH_SCRIPT, REFRESH_SERVICE, REFRESH_TIMER, ...MEMORY_FOLDERS, QMD_CACHE_DIR, QMD_CONFIG_DIR, QMD_INDEX, REFRESH_STAMP],
  async check({ host }) {
    const changes: Change[] = [];
    const files = [refreshScript(), refreshServiceUnit(), refreshTimerUnit()];
    let unitsChanged = false;
    for (const file of files) {
      const change = await planFile(host, file);
      if (!change) continue;
      changes.push(change);
      if (file.path !== LAYOUT.qmdRefreshScript) unitsChanged = true;
    }
    const yml = await host.files.read(LAYOUT.qmdCollectionsFile);
    const current = yml === undefined ? undefined : readQmdCollection(yml, MEMORY_COLLECTION);
    const workspace = host.paths.real(LAYOUT.workspaceDir);
    const collection = !current ? 'create' : current.path !== workspace || current.pattern !== MEMORY_PATTERN ? 'replace' : undefined;
    if (collection) {
      changes.push({
        target: LAYOUT.qmdCollectionsFile,
        summary: collection === 'create'
          ? `QMD collection "${MEMORY_COLLECTION}": create over ${LAYOUT.workspaceDir} (${MEMORY_PATTERN})`
          : `QMD collection "${MEMORY_COLLECTION}": ${current!.path} (${current!.pattern}) -> ${LAYOUT.workspaceDir} (${MEMORY_PATTERN})`,
      });
    }
    // A missing stamp: never refreshed here, or put back by restore without one.
    const refresh = collection !== undefined || !(await host.files.exists(LAYOUT.qmdRefreshStamp));
    if (refresh && !collection) changes.push({ target: LAYOUT.qmdIndex, summary: 'refresh the memory index (qmd update)' });
    const modes = await openModes(host);
    if (modes.length > 0) changes.push({ target: LAYOUT.qmdCacheDir, summary: `private memory index: ${modes.join(', ')} -> 0700 folders, 0600 files` });
    const [enabled, active] = await Promise.all([
      host.services.isEnabled('user', LAYOUT.qmdRefreshTimer).catch(() => false),
      host.services.isActive('user', LAYOUT.qmdRefreshTimer).catch(() => false),
    ]);
    const timer = !enabled || !active ? 'enable' : unitsChanged ? 'restart' : 'ok';
    if (timer === 'enable') changes.push({ target: LAYOUT.qmdRefreshTimer, summary: `enable and start ${LAYOUT.qmdRefreshTimer} (every ${REFRESH_PERIOD_MINUTES} min)` });
    if (timer === 'restart') changes.push({ target: LAYOUT.qmdRefreshTimer, summary: `restart ${LAYOUT.qmdRefreshTimer} (its units changed)` });
    const plan: IndexPlan = { files, unitsChanged, collection, refresh, modes, timer };
    return { changes, data: plan };
  },
  async apply({ host, progress }, plan) {
    const todo = plan.data as IndexPlan;
    for (const folder of MEMORY_FOLDERS) {
      if (!(await host.files.exists(folder.path))) await ensureFolder(host, folder);
    }
    // Private before QMD writes anything into them.
    for (const folder of [QMD_CACHE_DIR, QMD_CONFIG_DIR]) await ensureFolder(host, folder);
    for (const file of todo.files) await writeDesired(host, file);
    if (todo.collection === 'replace') await qmd(host, ['collection', 'remove', MEMORY_COLLECTION]);
    if (todo.collection) {
      progress(`qmd collection add ${LAYOUT.workspaceDir} --name ${MEMORY_COLLECTION}`);
      await qmd(host, ['collection', 'add', host.paths.real(LAYOUT.workspaceDir), '--name', MEMORY_COLLECTION, '--mask', MEMORY_PATTERN]);
    }
    if (todo.refresh) {
      progress('qmd update');
      await qmd(host, ['update']);
      await host.files.write(REFRESH_STAMP.path, '', { mode: REFRESH_STAMP.mode });
    }
    for (const open of await openModes(host)) {
      const info = await host.files.stat(open);
      await host.files.chmod(open, info?.isDirectory ? 0o700 : 0o600);
    }
    if (todo.unitsChanged) await host.services.daemonReload('user');
    if (todo.timer === 'enable') await host.services.enableNow('user', LAYOUT.qmdRefreshTimer);
    if (todo.timer === 'restart') await host.services.restart('user', LAYOUT.qmdRefreshTimer);
  },
  async verify({ host }) {
    const yml = await host.files.read(LAYOUT.qmdCollectionsFile);
    const collection = yml === undefined ? undefined : readQmdCollection(yml, MEMORY_COLLECTION);
    if (!collection) throw new DeployError(`QMD has no "${MEMORY_COLLECTION}" collection after the install (${LAYOUT.qmdCollectionsFile})`, `run \`${LAYOUT.qmdBin} collection list\` to see what QMD has`);
    if (!(await host.services.isActive('user', LAYOUT.qmdRefreshTimer))) {
      throw new DeployError(`${LAYOUT.qmdRefreshTimer} is not active`, `see \`XDG_RUNTIME_DIR=/run/user/0 systemctl --user status ${LAYOUT.qmdRefreshTimer}\``);
    }
  },
};
