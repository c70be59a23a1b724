import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import type { Components } from '../components.js';
import { LOCKS, type Change, type Step } from '../pipeline/step.js';
import { LAYOUT, QMD_MCP_PORT } from '../layout.js';
import { renderTemplate } from '../render/template.js';
import { planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { waitProgress } from '../pipeline/progress.js';
import { desired, type WrittenFile } from '../pipeline/writes.js';

// QMD as ONE resident MCP server (issue 26 item 1). OpenClaw keeps an MCP runtime per
// session; with QMD as a stdio server every portal session started a `qmd mcp` process
// chain (4 processes, ~54 MiB) that lived as long as the session. Over streamable HTTP
// a session's runtime is a client object in the gateway and the process count does not
// grow with the sessions. The gateway reaches it at QMD_MCP_URL (config/runtime-config.ts).

/**
 * The service's memory bound, relative to the server's memory. At rest QMD serves BM25
 * searches from SQLite in one Node process (about 110 MiB resident, docs/components.md);
 * a search that asks to rerank makes QMD load its reranking model (a 0.6 B GGUF, mapped
 * from its file) into this process, which MemoryHigh lets the kernel reclaim from.
 */
export const QMD_MEMORY = { high: '25%', max: '35%' } as const;

/** QMD's CLI entry point (bin/qmd is a launcher that starts it as a second process). */
export function qmdEntry(components: Components): string {
  return `${LAYOUT.qmdPrefix}/node_modules/${components.qmd.package}/dist/cli/qmd.js`;
}

const QMD_MCP_UNIT: WrittenFile = { path: LAYOUT.qmdMcpServiceFile, type: 'file', mode: 0o644, check: 'sha256' };

export function qmdMcpUnitFile(components: Components): DesiredFile {
  return desired(
    QMD_MCP_UNIT,
    renderTemplate('qmd-mcp.service', {
      home: LAYOUT.runtimeHome,
      nodeBin: `${LAYOUT.nodePrefix}/bin`,
      qmdEntry: qmdEntry(components),
      port: QMD_MCP_PORT,
      memoryHigh: QMD_MEMORY.high,
      memoryMax: QMD_MEMORY.max,
      qmdCacheDir: LAYOUT.qmdCacheDir,
      qmdConfigDir: LAYOUT.qmdConfigDir,
      stateDir: LAYOUT.stateDir,
      runDir: LAYOUT.runDir,
      gatewayUnit: LAYOUT.gatewayUnit,
    }),
  );
}

/** QMD's liveness endpoint (SERVICE_QMD_HEALTH_URL: for sandbox tests, which cannot own the port). */
export function qmdHealthUrl(host: Host): string {
  return host.env.SERVICE_QMD_HEALTH_URL || `http://127.0.0.1:${QMD_MCP_PORT}/health`;
}

export async function probeQmd(host: Host, timeoutMs = 3000): Promise<{ ok: boolean; detail: string }> {
  try {
    const res = await host.net.request(qmdHealthUrl(host), { timeoutMs });
    return { ok: res.status === 200, detail: `HTTP ${res.status} ${res.body.trim().slice(0, 120)}` };
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
}

interface ServicePlan {
  unit: boolean;
  enable: boolean;
  start: boolean;
  restart: boolean;
}

/**
 * The QMD MCP server as root's user service beside the gateway: its unit, enabled,
 * started; restarted only when its unit or the QMD package (`qmd-restart`, from the
 * memory step) changed. After the memory index step: the index and its collection
 * exist before the server opens them.
 */
export const memoryServiceStep: Step = {
  id: 'memory-service',
  title: 'Memory search service (one resident QMD MCP server on loopback)',
  needs: ['memory', 'memory-index', LOCKS.userUnits],
  writes: [QMD_MCP_UNIT],
  async check({ host, components, notified }) {
    const unit = qmdMcpUnitFile(components);
    const [change, active, enabled] = await Promise.all([
      planFile(host, unit),
      host.services.isActive('user', LAYOUT.qmdMcpService).catch(() => false),
      host.services.isEnabled('user', LAYOUT.qmdMcpService).catch(() => false),
    ]);
    const plan: ServicePlan = {
      unit: change !== undefined,
      enable: !enabled,
      start: !active,
      restart: active && (change !== undefined || notified.has('qmd-restart')),
    };
    const changes: Change[] = change ? [change] : [];
    if (plan.enable) changes.push({ target: LAYOUT.qmdMcpService, summary: `enable ${LAYOUT.qmdMcpService}` });
    if (plan.start) changes.push({ target: LAYOUT.qmdMcpService, summary: `start ${LAYOUT.qmdMcpService} (QMD MCP server on 127.0.0.1:${QMD_MCP_PORT})` });
    if (plan.restart) changes.push({ target: LAYOUT.qmdMcpService, summary: `restart ${LAYOUT.qmdMcpService} (${change ? 'its unit' : 'the QMD package'} changed)` });
    return { changes, data: plan };
  },
  async apply({ host, components }, plan) {
    const todo = plan.data as ServicePlan;
    if (todo.unit) {
      await writeDesired(host, qmdMcpUnitFile(components));
      await host.services.daemonReload('user');
    }
    if (todo.enable) await host.services.enable('user', LAYOUT.qmdMcpService);
    if (todo.start || todo.restart) await host.services.restart('user', LAYOUT.qmdMcpService);
  },
  async verify({ host, progress }) {
    // QMD opens its index and listens within a second or two; on a busy small server
    // minutes. The wait ends at once if the unit stops being active (exited, failed).
    const started = Date.now();
    const limitMs = Number(host.env.SERVICE_HEALTH_TIMEOUT_MS ?? 180_000);
    let last = await probeQmd(host);
    while (!last.ok && Date.now() < started + limitMs) {
      if (!(await host.services.isActive('user', LAYOUT.qmdMcpService).catch(() => false))) break;
      progress(`waiting for ${qmdHealthUrl(host)}: ${waitProgress(Date.now() - started, limitMs)} (${last.detail})`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      last = await probeQmd(host);
    }
    if (!last.ok) {
      throw new DeployError(
        `${LAYOUT.qmdMcpService} does not answer ${qmdHealthUrl(host)}: ${last.detail}`,
        `see \`journalctl --user-unit=${LAYOUT.qmdMcpService} -n 50\` (another program on port ${QMD_MCP_PORT}?)`,
      );
    }
  },
};
