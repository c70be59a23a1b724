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
 * start). Past START_PATIENCE_MS a gateway that is running (or restarted by systemd at
 * most LATE_RESTARTS_ALLOWED times) is starting, not broken, and gets up to
 * START_CAP_MS; one that is stopped or failed (a crash loop hits systemd's start limit)
 * fails then, one that keeps exiting on its next exit.
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

/**
 * How many times the gateway may exit and be restarted by systemd past the patience and
 * still be waited for. The pinned OpenClaw's first boot exits when a startup worker
 * misses a 5 s readiness limit (its state lease heartbeat), which a heavily loaded server
 * can miss once or twice; a release that cannot start exits on every try and fails on
 * the next one (or sooner: at systemd's StartLimitBurst the unit is failed, not restarting).
 */
export const LATE_RESTARTS_ALLOWED = 2;

/** How the gateway ended, in words: "(exit-code, exit status 1)". */
function howEnded(now: MainProcess): string {
  const ended = [now.result && now.result !== 'success' ? now.result : undefined, now.lastExit].filter(Boolean).join(', ');
  return ended ? ` (${ended})` : '';
}

/**
 * The gateway's restarts by systemd since `starting` (systemd's answer when the patience
 * ran out), one more while it waits out RestartSec (NRestarts counts a restart when it
 * happens); pids seen stand in where systemd has no NRestarts.
 */
function lateRestarts(now: MainProcess, starting: MainProcess, pids: Set<number>): number {
  const counted = now.restarts !== undefined && starting.restarts !== undefined ? now.restarts - starting.restarts : Math.max(0, pids.size - 1);
  return counted + (now.subState === 'auto-restart' ? 1 : 0);
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
  // may be restarted LATE_RESTARTS_ALLOWED times, and must not be stopped or failed. A
  // poll systemd did not answer proves nothing either way.
  let starting: MainProcess | undefined;
  const pids = new Set<number>();
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
        if (now.pid !== undefined) pids.add(now.pid);
        const restarts = lateRestarts(now, starting, pids);
        const after = `after ${Math.round(elapsed / 1000)} s`;
        if (now.pid === undefined && now.subState !== 'auto-restart') {
          return { ok: false, detail: `${last.detail}; the gateway is not running: ${now.activeState}/${now.subState}${howEnded(now)} ${after}`, waitedMs: elapsed };
        }
        if (restarts > LATE_RESTARTS_ALLOWED) {
          return { ok: false, detail: `${last.detail}; the gateway keeps exiting: ${restarts} restarts by systemd past ${Math.round(patienceMs / 1000)} s, the last${howEnded(now) || ' one'} ${after}`, waitedMs: elapsed };
        }
        const state = now.pid === undefined ? `the gateway exited${howEnded(now)}, systemd restarts it` : `the gateway (pid ${now.pid}) is still starting`;
        const counted = restarts > 0 ? ` (${restarts} of ${LATE_RESTARTS_ALLOWED} restarts allowed past the patience)` : '';
        progress(`waiting for ${healthUrl(host)}: ${waitProgress(elapsed, capMs)}; ${state}${counted} (${last.detail})`);
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
