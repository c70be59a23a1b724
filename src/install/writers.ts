import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';

/**
 * The processes that write the deployment's SQLite databases: the gateway (OpenClaw's
 * state and per-agent databases, in WAL mode), the QMD refresh (the memory index) and
 * the QMD MCP server (the index's search cache).
 * A backup copies their files only while none of them runs, so every database and its
 * WAL in the archive come from the same moment (OpenClaw's docs: never copy a live WAL
 * database file by file). The guard, which can restart the gateway, waits for the
 * install lock the caller holds (guard/index.ts).
 *
 * Stop order: the timer first (so it cannot start a refresh), then a refresh in
 * progress, then the gateway (it drains a running agent turn within its own stop
 * budget, TimeoutStopSec=330, and that turn may still search the memory), then QMD's
 * MCP server.
 */
const WRITERS = [LAYOUT.qmdRefreshTimer, LAYOUT.qmdRefreshService, LAYOUT.gatewayUnit, LAYOUT.qmdMcpService] as const;

export interface StoppedWriters {
  /** The units that were running and were stopped, in stop order. */
  stopped: string[];
  /** Starts again what was running (QMD's server, the gateway, then the timer); never a one-shot refresh. */
  resume(): Promise<void>;
}

export async function stopWriters(host: Host): Promise<StoppedWriters> {
  const stopped: string[] = [];
  for (const unit of WRITERS) {
    if (!(await host.services.isActive('user', unit).catch(() => false))) continue;
    host.log.debug(`stopping ${unit} for a consistent backup`);
    await host.services.stop('user', unit);
    if (await host.services.isActive('user', unit).catch(() => false)) {
      throw new DeployError(`${unit} is still running after systemctl --user stop`, 'nothing was archived or removed; see `service-deploy gateway logs` and run again');
    }
    stopped.push(unit);
  }
  return {
    stopped,
    async resume() {
      // The refresh service is a one-shot the timer starts; it is not started by hand.
      for (const unit of [LAYOUT.qmdMcpService, LAYOUT.gatewayUnit, LAYOUT.qmdRefreshTimer]) {
        if (stopped.includes(unit)) await host.services.start('user', unit);
      }
    },
  };
}
