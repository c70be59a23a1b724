import type { Host } from '../host/index.js';
import { TEMP_DIRS } from '../layout.js';

/**
 * Removes the temp files an interrupted run left behind (their maker is gone: see
 * host/temp.ts), in every folder where we make them. Install, restore and reset run it
 * under the install lock before they start; `doctor --fix` runs it too.
 */
export async function sweepLeftovers(host: Host): Promise<string[]> {
  const removed = await host.files.sweepTemps(TEMP_DIRS);
  if (removed.length > 0) host.log.info(`removed ${removed.length} temp file(s) left by an interrupted run: ${removed.join(', ')}`);
  return removed;
}
