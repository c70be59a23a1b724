import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import type { MainProcess } from '../host/services.js';
import { waitProgress } from '../pipeline/progress.js';
import type { Step } from '../pipeline/step.js';
import { GATEWAY_PORT, LAYOUT } from '../layout.js';

export function healthUrl(host: Host): string {
  // SERVICE_HEALTH_URL exists for sandbox tests, whose stand-in gateway cannot own 18789.
  return host.env.SERVICE_HEALTH_URL || `http://127.0.0.1:${GATEWAY_PORT}/healthz`;
}

/**
 * How long a one-shot verdict (status, gateway status, doctor) waits for /healthz: a
 * busy gateway (starting its sidecars, a loaded small server) can take seconds to answer,
 * and one slow answer must not read as "down". Polling loops use the short default.
 */
export const HEALTH_VERDICT_TIMEOUT_MS = 10_000;

/**
 * How long a (re)started gateway gets to answer /healthz: 10-30 s on an idle small
 * server, but minutes on a busy one (a 2-core machine at load 25 took 88 s for the first
 * start). Past START_PATIENCE_MS a gateway that is still the same running process (not
 * exited, not restarted by systemd) is starting, not broken, and gets up to
 * START_CAP_MS; one that exited or restarts in a loop fails at START_PATIENCE_MS.
 * SERVICE_HEALTH_TIMEOUT_MS, when set, is one fixed limit instead.
 */
export const START_PATIENCE_MS = 120_000;
export const START_CAP_MS = 600_000;

export async function probeHealth(host: Host, timeoutMs = 3000): Promise<{ ok: boolean; detail: string }> {
  try {
    const res = await host.net.request(healthUrl(host), { timeoutMs });
    return { ok: res.status === 200, detail: `HTTP ${res.status} ${res.body.trim().slice(0, 120)}` };
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
}

export interface GatewayWait {
  ok: boolean;
  /** The last probe's answer, or why the wait ended early. */
  detail: string;
  waitedMs: number;
}

export interface GatewayWaitOptions {
  /** A line per probe: how long, against what, and whether the gateway is still starting. */
  progress?: (text: string) => void;
  /** Defaults: START_PATIENCE_MS, START_CAP_MS, one probe a second (tests make them short). */
  patienceMs?: number;
  capMs?: number;
  pollMs?: number;
}

/** Why the gateway's process is not the one that was starting, in words; undefined while it still is. */
function notStarting(now: MainProcess, starting: MainProcess): string | undefined {
  if (now.pid === undefined) {
    const ended = [now.result && now.result !== 'success' ? now.result : undefined, now.lastExit].filter(Boolean).join(', ');
    const how = ended ? ` (${ended})` : '';
    if (now.subState === 'auto-restart') return `the gateway exited${how} and systemd restarts it`;
    return `the gateway is not running: ${now.activeState}/${now.subState}${how}`;
  }
  if (starting.pid !== undefined && now.pid !== starting.pid) return `the gateway restarted (pid ${starting.pid} -> ${now.pid}${now.lastExit ? `, the last one ended with ${now.lastExit}` : ''})`;
  if (now.restarts !== undefined && starting.restarts !== undefined && now.restarts > starting.restarts) {
    return `the gateway restarted (${now.restarts - starting.restarts} automatic restart(s) by systemd${now.lastExit ? `, the last process ended with ${now.lastExit}` : ''})`;
  }
  return undefined;
}

/** Polls /healthz after a (re)start until it answers, within the limits above. */
export async function waitForGateway(host: Host, options: GatewayWaitOptions = {}): Promise<GatewayWait> {
  const started = Date.now();
  const progress = options.progress ?? (() => {});
  const fixed = host.env.SERVICE_HEALTH_TIMEOUT_MS;
  const patienceMs = fixed !== undefined ? Number(fixed) : (options.patienceMs ?? START_PATIENCE_MS);
  const capMs = fixed !== undefined ? Number(fixed) : (options.capMs ?? START_CAP_MS);
  const pollMs = options.pollMs ?? 1000;
  let last = await probeHealth(host);
  // The gateway's process when the patience ran out (systemd's answer): from then on it
  // must stay that process. A poll systemd did not answer proves nothing either way.
  let starting: MainProcess | undefined;
  let unanswered = 0;
  for (;;) {
    if (last.ok) return { ok: true, detail: last.detail, waitedMs: Date.now() - started };
    const elapsed = Date.now() - started;
    if (elapsed >= capMs) break;
    if (elapsed < patienceMs) {
      progress(`waiting for ${healthUrl(host)}: ${waitProgress(elapsed, patienceMs)} (${last.detail})`);
    } else {
      const now = await host.services.mainProcess('user', LAYOUT.gatewayUnit).catch(() => undefined);
      if (!now) {
        unanswered++;
        progress(`waiting for ${healthUrl(host)}: ${waitProgress(elapsed, capMs)}; systemd did not say how the gateway is (${unanswered} time(s)); still waiting (${last.detail})`);
      } else {
        starting ??= now;
        const why = notStarting(now, starting);
        if (why) return { ok: false, detail: `${last.detail}; ${why} after ${Math.round(elapsed / 1000)} s`, waitedMs: elapsed };
        progress(`waiting for ${healthUrl(host)}: ${waitProgress(elapsed, capMs)}; the gateway (pid ${now.pid}) is still starting (${last.detail})`);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    last = await probeHealth(host);
  }
  const silent = unanswered > 0 && !starting ? '; systemd never said how the gateway is' : '';
  return { ok: false, detail: `${last.detail}${silent}`, waitedMs: Date.now() - started };
}

/** The gateway answers /healthz (it takes 10-30 s after a (re)start on a small server, minutes on a busy one). */
export const healthStep: Step = {
  id: 'health',
  title: 'Health check (gateway /healthz)',
  needs: ['gateway-service'],
  speculative: false,
  skip: ({ options }) => (options.check ? 'check mode: nothing was started' : undefined),
  async check(ctx) {
    const wait = await waitForGateway(ctx.host, { progress: (text) => ctx.progress(text) });
    if (!wait.ok) {
      throw new DeployError(`the gateway does not answer ${healthUrl(ctx.host)}: ${wait.detail}`, 'see `service-deploy gateway logs`, or run `service-deploy doctor`');
    }
    return { changes: [] };
  },
  async apply() {},
};
