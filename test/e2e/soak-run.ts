// What the bench (soak-bench.ts) and the e2e's short form (soak-short.ts) share: the
// recorder that takes a sample (soak.ts's SoakSample) from the probes, the traffic and
// the AI gateway stand-in's log, and the small operations on the server they need.
import fs from 'node:fs';
import os from 'node:os';
import { GATEWAY_PORT, type World } from './harness.js';
import { intervalStats, type ChatRecord, type SoakSample } from './soak.js';
import { insideFigures, type MemoryLimit, type ServerProbe } from './soak-host.js';
import type { SoakDriver } from './soak-traffic.js';

export const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';
/** The pinned runtime's message when its 256 MCP runtimes are taken (dist/agent-bundle-mcp-manager-api-*.mjs). */
export const MCP_ADMISSION_FAILURE = 'live runtime limit (256) reached';
/** The MCP servers the install configures (src/config/runtime-config.ts): their tools reach the model as `<server>__<tool>`. */
const MCP_TOOL = /^(service|qmd)__/;

export class SoakRecorder {
  readonly samples: SoakSample[] = [];
  private reported = 0;
  private aiSeen = 0;
  private heartbeatCalls = 0;
  private turnsWithoutMcpTools = 0;
  readonly sinceEpochS = Date.now() / 1000;

  constructor(
    private readonly world: World,
    private readonly probe: ServerProbe,
    private readonly driver: SoakDriver | undefined,
    private readonly options: { startedAt: number; limit?: MemoryLimit; trimAiRequests?: boolean },
  ) {}

  /**
   * The AI gateway stand-in's requests since the last look: model calls that are not a
   * chat's (every chat carries the soak's tag; nothing else than the heartbeat calls the
   * model on this server) and chat turns that were offered no MCP tool (what an MCP
   * admission failure means to a user).
   */
  private readAiRequests(): void {
    const requests = this.world.ai.requests;
    for (const r of requests.slice(this.aiSeen)) {
      if (!r.body.includes('[soak s')) this.heartbeatCalls += 1;
      else if (!r.tools.some((t) => MCP_TOOL.test(t))) this.turnsWithoutMcpTools += 1;
    }
    // The bench's thousands of 40 KB request bodies are not kept (the e2e's steps read them).
    if (this.options.trimAiRequests) requests.splice(0, requests.length);
    this.aiSeen = requests.length;
  }

  async sample(label?: string): Promise<SoakSample> {
    const chats: ChatRecord[] = this.driver?.chats ?? [];
    const fresh = chats.slice(this.reported);
    this.reported = chats.length;
    this.readAiRequests();
    const unit = this.probe.unitFigures();
    const server = this.probe.serverFigures();
    const inside = await insideFigures(this.world.container, this.sinceEpochS, { mcp: MCP_ADMISSION_FAILURE });
    const progress = this.driver?.progress ?? { answered: 0, failed: 0, sessions: 0 };
    const sample: SoakSample = {
      atMs: Date.now() - this.options.startedAt,
      ...(label ? { label } : {}),
      chats: progress.answered,
      failed: progress.failed,
      sessions: progress.sessions,
      gatewayPid: unit.mainPid,
      unit: { anonBytes: unit.cgroupAnonBytes ?? unit.anonBytes, pssBytes: unit.pssBytes, processes: unit.pids.length, fds: unit.fds, byName: unit.byName, procs: unit.detail },
      server: { pssBytes: server.pssBytes, anonBytes: server.anonBytes, processes: server.pids.length },
      ...(this.options.limit ? { memcg: this.options.limit.stats() } : {}),
      disk: inside.disk,
      mcpAdmissionFailures: inside.logMatches.mcp ?? 0,
      heartbeatCalls: this.heartbeatCalls,
      turnsWithoutMcpTools: this.turnsWithoutMcpTools,
      interval: intervalStats(fresh),
      loadAverage: os.loadavg()[0]!,
    };
    this.samples.push(sample);
    return sample;
  }
}

/** Waits until the gateway answers /healthz inside the server (it takes 10-30 s to start, minutes on a loaded machine). */
export async function waitHealthy(world: World, timeoutMs = 10 * 60_000, probe: '/healthz' | '/readyz' = '/healthz'): Promise<number> {
  const t = Date.now();
  const r = await world.container.sh(`for i in $(seq 1 ${Math.ceil(timeoutMs / 1000)}); do curl -fsS -o /dev/null http://127.0.0.1:${GATEWAY_PORT}${probe} 2>/dev/null && exit 0; sleep 1; done; exit 1`, { timeoutMs: timeoutMs + 30_000 });
  if (r.exitCode !== 0) throw new Error(`the gateway did not answer ${probe} within ${Math.round(timeoutMs / 1000)} s:\n${await world.diagnostics()}`);
  return Date.now() - t;
}

/**
 * Until the gateway's start is complete (/readyz). A config written while it starts makes
 * the pinned runtime refuse to come up ("migration inputs changed during startup"), with
 * exit 78, which the unit does not restart (RestartPreventExitStatus=78): a soak that set
 * its heartbeat right after the hourly guard's restart left the gateway down.
 */
export function waitReady(world: World, timeoutMs = 10 * 60_000): Promise<number> {
  return waitHealthy(world, timeoutMs, '/readyz');
}

/** `systemctl --user restart` of the gateway (returns once the new process started; the old one drains first). */
export async function restartGateway(world: World): Promise<void> {
  await world.container.ok(`${USER_ENV} systemctl --user restart openclaw-gateway.service`, { timeoutMs: 10 * 60_000 });
}

/**
 * Sets the heartbeat's cadence in openclaw.json (atomically, 0600, as the install
 * writes it). The gateway reloads `agents.defaults.heartbeat` without a restart (the
 * pinned runtime's docs/gateway/configuration/hot-reload.md). The guard puts the
 * managed 30 minutes back, so the soak sets it again after each guard run.
 */
export function setHeartbeatEvery(world: World, every: string): void {
  const file = world.container.hostPath('/root/.openclaw/openclaw.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8'));
  config.agents.defaults.heartbeat = { ...config.agents.defaults.heartbeat, every };
  const tmp = `${file}.soak-${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
}
