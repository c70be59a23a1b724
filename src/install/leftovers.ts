import type { Host } from '../host/index.js';
import { isTempName, type LegacyTemp } from '../host/temp.js';
import { BACKUP_PREFIX, LAYOUT } from '../layout.js';
import { tempDirs } from '../pipeline/writes.js';
import { FOOTPRINT } from './footprint.js';

/**
 * Every folder where service-deploy makes temp files (always next to their target,
 * host/temp.ts), derived from what its writers declare: what install, restore, reset and
 * `doctor --fix` sweep at their start.
 */
export const TEMP_DIRS: readonly string[] = tempDirs(FOOTPRINT);

/** Temp names of earlier versions, each only in the folder it was used in. */
export const LEGACY_TEMPS: readonly LegacyTemp[] = [
  ...TEMP_DIRS.map((dir) => ({ dir, name: /^\..+\.tmp-\d+-[0-9a-f]{8}$/ })), // Files.write
  { dir: LAYOUT.stateDir, name: /^mesh-auth-key\.[0-9a-f]{8}$/ }, // the mesh auth key for `tailscale up`
  { dir: LAYOUT.runtimeDir, name: /^\.openclaw\.json\.candidate$/ },
  { dir: LAYOUT.tlsDir, name: /^\.new-\d+$/ },
  { dir: '/opt/service-deploy', name: /^\.node-download-[A-Za-z0-9]{6}$/ },
  { dir: '/opt/service-deploy', name: /^node\.old-\d+$/ },
  { dir: '/tmp', name: new RegExp(`^${BACKUP_PREFIX.slice('/tmp/'.length)}\\d{8}-\\d{6}\\.tar\\.gz\\.partial$`) },
  { dir: '/usr/share/keyrings', name: /^(tailscale-archive-keyring|google-chrome)\.gpg\.partial$/ },
  { dir: LAYOUT.runDir, name: /^(install|guard)\.lock\.stale-\d+$/ },
];

/** Whether a name in `dir` is a temp file of ours (this version's or an earlier one's). */
export function isLeftover(dir: string, name: string): boolean {
  return isTempName(name) || LEGACY_TEMPS.some((l) => l.dir === dir && l.name.test(name));
}

/**
 * Removes the temp files an interrupted run left behind (their maker is gone: see
 * host/temp.ts), in every folder where we make them. Install, restore and reset run it
 * under the install lock before they start; `doctor --fix` runs it too.
 */
export async function sweepLeftovers(host: Host): Promise<string[]> {
  const removed = await host.files.sweepTemps(TEMP_DIRS, LEGACY_TEMPS);
  if (removed.length > 0) host.log.info(`removed ${removed.length} temp file(s) left by an interrupted run: ${removed.join(', ')}`);
  return removed;
}
