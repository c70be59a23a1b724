import { loadComponents } from '../components.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import type { Written, WrittenFile } from '../pipeline/writes.js';
import { installedOpenclawVersion } from '../runtime/openclaw-place.js';
import { nodeVersionIn, stampedNodeVersion } from '../steps/node-runtime.js';

/**
 * Whether a run is an upgrade, asked on every install before anything else: kept apart
 * from upgrade.ts so that a run that is not one (a re-run, a first install) loads none
 * of the upgrade's code (backups, archives, staging; tar and zlib). What an upgrade
 * writes is declared here for the same reason.
 */

/** What the last upgrade did (versions, backup, outcome): status and rollback read it. */
export const UPGRADE_RECORD: WrittenFile = { path: LAYOUT.upgradeRecord, type: 'file', mode: 0o600 };
/** The new OpenClaw and Node staged beside the installed ones and renamed into place; the replaced ones kept whole for rollback. */
export const UPGRADE_WRITES: readonly Written[] = [
  UPGRADE_RECORD,
  ...[LAYOUT.openclawNext, LAYOUT.openclawPrevious, LAYOUT.nodeNext, LAYOUT.nodePrevious].map((p): Written => ({ path: p, type: 'folder', staged: true })),
];

/** What an upgrade changes: OpenClaw from -> to (the same when only Node changes), and Node when its pin changed. */
export interface UpgradeVersions {
  from: string;
  to: string;
  node?: { from: string; to: string };
}

/**
 * The installed and pinned OpenClaw and Node, when one of them differs and OpenClaw is
 * installed (an upgrade, or a downgrade of the pin). Nothing installed, or a Node that
 * does not run: not an upgrade (the pipeline installs).
 */
export async function pendingUpgrade(host: Host): Promise<UpgradeVersions | undefined> {
  const components = loadComponents(host.env);
  const have = await installedOpenclawVersion(host, components.openclaw.package);
  if (!have) return undefined;
  // The stamp answers while the binary is the one the install verified (no process on a re-run).
  const nodeHave = (await host.files.stat(`${LAYOUT.nodePrefix}/bin/node`)) ? ((await stampedNodeVersion(host)) ?? (await nodeVersionIn(host, LAYOUT.nodePrefix))) : undefined;
  const node = nodeHave && nodeHave !== components.node.version ? { from: nodeHave, to: components.node.version } : undefined;
  if (have === components.openclaw.version && !node) return undefined;
  return { from: have, to: components.openclaw.version, ...(node ? { node } : {}) };
}
