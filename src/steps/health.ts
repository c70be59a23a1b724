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
  /** How often systemd is asked within the patience (default 5 s): for a gateway that stopped itself. */
  stateEveryMs?: number;
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
  return counted + (now.subState.startsWith('auto-restart') ? 1 : 0);
}

/**
 * systemd is between two runs of the gateway and will go on by itself: starting it
 * (start-pre, start), waiting out RestartSec (auto-restart, auto-restart-queued) or
 * stopping what is left of the last run before it restarts. Only inactive or failed is
 * an end. On a loaded server the start-pre window (the unit's `mkdir` of the run folder)
 * lasts long enough to be seen: CI's fleet job once read activating/start-pre as "not
 * running" and failed an install whose gateway systemd was restarting.
 */
function systemdMoving(now: MainProcess): boolean {
  return now.activeState === 'activating' || now.activeState === 'deactivating' || now.activeState === 'reloading';
}

/**
 * How the pinned OpenClaw says it stopped itself: exit status 78 (EX_CONFIG), which the
 * unit's RestartPreventExitStatus=78 (the release's own service policy) keeps systemd
 * from restarting. It means a config error or a state migration that needs a person...
 */
export const GATEWAY_REFUSAL_EXIT = 'exit status 78';

/**
 * ...or a server too busy at the gateway's start: its startup state migrations take a
 * lease whose heartbeat worker must be ready within 5 s (LEASE_HEARTBEAT_START_TIMEOUT_MS
 * in the release's code); when it is not, the migration step is refused and the gateway
 * exits 78 with this line in its journal. Nothing is written before the refusal, so a
 * plain start runs the migrations again (checked against the pinned release: test/
 * runtime/gateway-refusal.test.ts makes its worker miss the limit).
 */
export const LEASE_STARTUP_TIMEOUT = /state lease heartbeat did not become ready \(phase=startup, trigger=timeout/;

/** How many times a gateway that stopped itself for that busy-server reason is started again. */
export const REFUSED_STARTS_ALLOWED = 3;

export interface StartRefusal {
  /** The busy-server refusal (LEASE_STARTUP_TIMEOUT): starting it again is the fix. */
  transient: boolean;
  /** The gateway's own words for why it stopped (secrets masked), or how it ended. */
  reason: string;
}

/** The unit's journal lines of its last start: after systemd's last "Started ..." line for it. */
function lastStartLines(lines: string[]): string[] {
  let from = 0;
  lines.forEach((line, i) => {
    if (/^Started .*OpenClaw gateway/.test(line)) from = i + 1;
  });
  return lines.slice(from);
}

/**
 * Why the gateway stopped itself (exit 78), from its journal, or undefined when it did
 * not (it runs, systemd restarts it, or it ended another way).
 */
export async function startRefusal(host: Host, now: MainProcess): Promise<StartRefusal | undefined> {
  // ExecMainStatus still holds the last run's exit while systemd starts the next one.
  if (now.pid !== undefined || systemdMoving(now) || now.lastExit !== GATEWAY_REFUSAL_EXIT) return undefined;
  const lines = lastStartLines(await host.services.journalTail('user', LAYOUT.gatewayUnit, 300));
  const transient = lines.some((line) => LEASE_STARTUP_TIMEOUT.test(line));
  const said = [...lines].reverse().find((line) => /Gateway failed to start|gateway requires/.test(line));
  const reason = said ? host.redactor.redact(said).slice(0, 300) : `${GATEWAY_REFUSAL_EXIT}, nothing in its journal says why`;
  return { transient, reason };
}

/** startRefusal of the gateway as systemd sees it now (doctor, the guard); undefined when systemd does not answer. */
export async function gatewayStartRefusal(host: Host): Promise<StartRefusal | undefined> {
  const now = await host.services.mainProcess('user', LAYOUT.gatewayUnit);
  return now ? startRefusal(host, now) : undefined;
}

/** How many of the gateway's last journal lines a failed wait repeats. */
const LAST_WORDS = 3;

/**
 * The gateway's last journal lines since its last start, secrets masked, for a failed
 * wait's message: what the partner (and a CI log's tail) needs to know why.
 */
async function lastWords(host: Host): Promise<string> {
  const lines = await host.services.journalTail('user', LAYOUT.gatewayUnit, 300).catch(() => [] as string[]);
  const words = lastStartLines(lines).slice(-LAST_WORDS).map((line) => host.redactor.redact(line).slice(0, 240));
  return words.length > 0 ? `; its journal's last lines: ${words.join(' | ')}` : '';
}

/** How often the wait asks systemd about the gateway while still within its patience. */
const STATE_EVERY_MS = 5000;

/**
 * Polls /healthz after a (re)start until it answers, within the limits above. A gateway
 * that stopped itself because the server was too busy at its start (LEASE_STARTUP_TIMEOUT)
 * is started again, up to REFUSED_STARTS_ALLOWED times, each start with a new patience;
 * one that stopped itself for any other reason fails at once, with its own words.
 */
export async function waitForGateway(host: Host, options: GatewayWaitOptions = {}): Promise<GatewayWait> {
  const started = Date.now();
  const progress = options.progress ?? (() => {});
  const fixed = host.env.SERVICE_HEALTH_TIMEOUT_MS;
  const patienceMs = fixed !== undefined ? Number(fixed) : (options.patienceMs ?? START_PATIENCE_MS);
  const capMs = fixed !== undefined ? Number(fixed) : (options.capMs ?? START_CAP_MS);
  const pollMs = options.pollMs ?? 1000;
  const stateEveryMs = options.stateEveryMs ?? STATE_EVERY_MS;
  let last = await probeHealth(host);
  // The gateway's process when the patience ran out (systemd's answer): from then on it
  // may be restarted LATE_RESTARTS_ALLOWED times, and must not be stopped or failed. A
  // poll systemd did not answer proves nothing either way.
  let starting: MainProcess | undefined;
  const pids = new Set<number>();
  let unanswered = 0;
  // The patience runs from the last start this wait made (a refused start started again).
  let startedAt = started;
  let askedAt = started;
  let startsAgain = 0;
  for (;;) {
    if (last.ok) return { ok: true, detail: last.detail, waitedMs: Date.now() - started };
    const elapsed = Date.now() - started;
    if (elapsed >= capMs) break;
    const sinceStart = Date.now() - startedAt;
    const patient = sinceStart < patienceMs;
    if (patient && Date.now() - askedAt < stateEveryMs) {
      progress(`waiting for ${healthUrl(host)}: ${waitProgress(sinceStart, patienceMs)} (${last.detail})`);
    } else {
      askedAt = Date.now();
      const now = await host.services.mainProcess('user', LAYOUT.gatewayUnit).catch(() => undefined);
      const refusal = now ? await startRefusal(host, now) : undefined;
      const after = `after ${Math.round(elapsed / 1000)} s`;
      if (refusal && !refusal.transient) {
        return { ok: false, detail: `${last.detail}; the gateway stopped itself (${GATEWAY_REFUSAL_EXIT}) ${after}: ${refusal.reason}`, waitedMs: elapsed };
      }
      if (refusal) {
        if (startsAgain >= REFUSED_STARTS_ALLOWED) {
          return { ok: false, detail: `${last.detail}; the gateway stopped itself at its start ${startsAgain + 1} times, the server too busy for its 5 s startup limit (${refusal.reason}) ${after}`, waitedMs: elapsed };
        }
        startsAgain++;
        progress(`the gateway stopped itself at its start: the server was too busy for its state lease worker's 5 s startup limit; starting it again (${startsAgain} of ${REFUSED_STARTS_ALLOWED})`);
        await host.services.resetFailed('user', LAYOUT.gatewayUnit);
        await host.services.start('user', LAYOUT.gatewayUnit);
        startedAt = Date.now();
        starting = undefined;
        pids.clear();
      } else if (patient) {
        progress(`waiting for ${healthUrl(host)}: ${waitProgress(sinceStart, patienceMs)} (${last.detail})`);
      } else if (!now) {
        unanswered++;
        progress(`waiting for ${healthUrl(host)}: ${waitProgress(elapsed, capMs)}; systemd did not say how the gateway is (${unanswered} time(s)); still waiting (${last.detail})`);
      } else {
        starting ??= now;
        if (now.pid !== undefined) pids.add(now.pid);
        const restarts = lateRestarts(now, starting, pids);
        if (now.pid === undefined && !systemdMoving(now)) {
          return { ok: false, detail: `${last.detail}; the gateway is not running: ${now.activeState}/${now.subState}${howEnded(now)} ${after}${await lastWords(host)}`, waitedMs: elapsed };
        }
        if (restarts > LATE_RESTARTS_ALLOWED) {
          return { ok: false, detail: `${last.detail}; the gateway keeps exiting: ${restarts} restarts by systemd past ${Math.round(patienceMs / 1000)} s, the last${howEnded(now) || ' one'} ${after}${await lastWords(host)}`, waitedMs: elapsed };
        }
        const state =
          now.pid !== undefined
            ? `the gateway (pid ${now.pid}) is still starting`
            : now.subState.startsWith('auto-restart')
              ? `the gateway exited${howEnded(now)}, systemd restarts it`
              : `systemd is starting the gateway (${now.activeState}/${now.subState})`;
        const counted = restarts > 0 ? ` (${restarts} of ${LATE_RESTARTS_ALLOWED} restarts allowed past the patience)` : '';
        progress(`waiting for ${healthUrl(host)}: ${waitProgress(elapsed, capMs)}; ${state}${counted} (${last.detail})`);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    last = await probeHealth(host);
  }
  const silent = unanswered > 0 && !starting ? '; systemd never said how the gateway is' : '';
  return { ok: false, detail: `${last.detail}${silent}${await lastWords(host)}`, waitedMs: Date.now() - started };
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
