import fs from 'node:fs/promises';
import { isSingleExecutable } from '../assets.js';
import type { Components } from '../components.js';
import type { Host } from '../host/index.js';
import { Inspector } from '../host/inspect.js';
import { LAYOUT } from '../layout.js';
import { compareEntry, readManifest, recordFromDisk, type RecordOptions } from '../pipeline/manifest.js';
import type { Step } from '../pipeline/step.js';
import { PLUGIN_PREFIX, losslessClawFiles, nodeFiles, openclawFiles, qmdFiles } from '../runtime/openclaw.js';
import { openclawWrapper } from './agent-runtime.js';
import { CHROME_KEY, CHROME_SOURCES } from './browser.js';
import { pluginFiles } from './channel.js';
import { gatewayUnitFile } from './gateway-service.js';
import { guardScript } from './guard.js';
import { KEYRING as MESH_KEYRING, SOURCES as MESH_SOURCES } from './mesh-client.js';
import { RUNTIME_CONFIG_RECORD } from './runtime-config.js';

export interface ManagedPath {
  path: string;
  /** The mode it must have; undefined: the one npm or the download gave it. */
  options?: Partial<RecordOptions>;
}

/**
 * Everything the install writes, with the mode each must keep. Each step records what
 * it writes as it writes it; this list lets the install's last step record what is
 * there but not in the manifest yet: a server installed before the manifest existed,
 * or our binary put in place by install.sh.
 */
export function managedPaths(components: Components): ManagedPath[] {
  const file = (p: string, mode: number): ManagedPath => ({ path: p, options: { mode } });
  const program = (files: { required: string[]; optional: string[] }) => [...files.required, ...files.optional].map((p) => ({ path: p }));
  return [
    file(LAYOUT.stateDir, 0o700),
    file(LAYOUT.logDir, 0o700),
    file(LAYOUT.runtimeDir, 0o700),
    file(LAYOUT.answersFile, 0o600),
    { path: LAYOUT.runtimeConfig, options: RUNTIME_CONFIG_RECORD },
    file(LAYOUT.gatewayUnitFile, gatewayUnitFile().mode),
    file(LAYOUT.openclawWrapper, openclawWrapper().mode),
    file(LAYOUT.guardScript, guardScript().mode),
    file(LAYOUT.guardCron, 0o644),
    file(LAYOUT.binary, 0o755),
    file(PLUGIN_PREFIX, 0o755),
    file(MESH_SOURCES, 0o644),
    file(MESH_KEYRING, 0o644),
    file(CHROME_SOURCES, 0o644),
    file(CHROME_KEY, 0o644),
    // The channel (where configured).
    file(LAYOUT.channelEnv, 0o600),
    file(LAYOUT.gatewayDropInDir, 0o755),
    file(LAYOUT.channelDropIn, 0o644),
    file(LAYOUT.channelPluginDir, 0o755),
    ...pluginFiles().map((f) => file(f.path, f.mode)),
    file(LAYOUT.tlsDir, 0o755),
    file(LAYOUT.tlsKey, 0o600),
    file(LAYOUT.tlsCert, 0o644),
    file(LAYOUT.nginxSite, 0o600),
    // The sandbox of the nginx the install brought.
    file(LAYOUT.nginxHardeningDropIn, 0o644),
    // Programs: the files that must be there and stay as installed.
    ...program(nodeFiles()),
    ...program(openclawFiles(components.openclaw.package)),
    ...program(qmdFiles(components.qmd.package)),
    ...program(losslessClawFiles(components.losslessClaw.package)),
  ];
}

/** Paths to record now: on disk but not in the manifest; our binary again when install.sh replaced it. */
async function unrecorded(host: Host, components: Components): Promise<ManagedPath[]> {
  const inspector = new Inspector(host.paths);
  const { entries } = await readManifest(host);
  const wanted = managedPaths(components);
  const present = await Promise.all(wanted.map(async (w) => ((await inspector.info(w.path)) ? w : undefined)));
  const out = present.filter((w): w is ManagedPath => w !== undefined && !entries?.has(w.path));
  const binary = entries?.get(LAYOUT.binary);
  if (binary && (await runningFrom(host, LAYOUT.binary))) {
    // install.sh verified the new binary against SHA256SUMS and runs it: it is ours.
    const moved = await compareEntry(inspector, binary);
    if (moved.length > 0) out.push({ path: LAYOUT.binary, options: { mode: 0o755 } });
  }
  return out;
}

async function runningFrom(host: Host, p: string): Promise<boolean> {
  if (!isSingleExecutable()) return false;
  const [self, target] = await Promise.all([fs.realpath(process.execPath), fs.realpath(host.paths.real(p)).catch(() => undefined)]);
  return self === target;
}

/**
 * The install manifest's last step: records what the install manages but the
 * manifest does not hold yet. Every other write was recorded by the step that made it.
 */
export const manifestStep: Step = {
  id: 'manifest',
  title: 'Install manifest (what doctor checks)',
  async check({ host, components }) {
    const missing = await unrecorded(host, components);
    if (missing.length === 0) return { changes: [] };
    const names = missing.map((m) => m.path);
    const shown = names.length > 4 ? `${names.slice(0, 4).join(', ')} and ${names.length - 4} more` : names.join(', ');
    return { changes: [{ target: LAYOUT.manifestFile, summary: `${LAYOUT.manifestFile}: record ${shown}` }], data: missing };
  },
  async apply({ host }, plan) {
    await recordFromDisk(host, ...(plan.data as ManagedPath[]).map((m) => ({ path: m.path, options: m.options ?? {} })));
  },
};
