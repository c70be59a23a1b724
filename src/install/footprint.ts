import { GUARD_LOG_WRITES } from '../guard/log.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { forgetRecorded, readManifest } from '../pipeline/manifest.js';
import { isInPlaces, manifestPlaces, type Written } from '../pipeline/writes.js';
import { installWrites } from '../steps/index.js';
import { BACKUP_WRITES } from './backup-set.js';
import { UPGRADE_WRITES } from './pending-upgrade.js';

/**
 * Everything service-deploy writes, as its writers declare it (pipeline/writes.ts): the
 * install's steps and the pipeline (steps/index.ts), the guard's log, backups and their
 * schedule, an upgrade's record and kept copies. What --reset-clean and uninstall remove,
 * the folders swept for temp files and the places the install manifest may name are
 * derived from it.
 */
export function footprint(install: readonly Written[] = installWrites()): Written[] {
  return [...install, ...GUARD_LOG_WRITES, ...BACKUP_WRITES, ...UPGRADE_WRITES];
}

export const FOOTPRINT: readonly Written[] = footprint();

/** Where an install manifest entry may point (readManifest's `places`). */
export const MANAGED_PLACES: readonly string[] = manifestPlaces(FOOTPRINT);

/**
 * Drops manifest entries outside the places service-deploy writes (a manifest edited by
 * hand), so that doctor can read the manifest again; the install then records what is
 * missing. The rest of the manifest stays.
 */
export async function dropUndeclaredEntries(host: Host): Promise<void> {
  const { entries } = await readManifest(host);
  const outside = [...(entries?.keys() ?? [])].filter((p) => !isInPlaces(p, MANAGED_PLACES));
  if (outside.length === 0) return;
  host.log.warn(`${LAYOUT.manifestFile}: ${outside.join(', ')}: not a place service-deploy writes; left out of the manifest`);
  await forgetRecorded(host, outside);
}
