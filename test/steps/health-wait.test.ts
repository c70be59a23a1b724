import { describe, expect, it } from 'vitest';
import type { Host } from '../../src/host/index.js';
import type { MainProcess } from '../../src/host/services.js';
import { LATE_RESTARTS_ALLOWED, REFUSED_STARTS_ALLOWED, waitForGateway } from '../../src/steps/health.js';
import { BUSY_START_JOURNAL, CONFIG_ERROR_JOURNAL, SYSTEMD_STARTED } from '../helpers/gateway-journal.js';

/**
 * The gateway's (re)start wait: patient with a gateway that is still the same starting
 * process (a busy server: minutes), quick to fail one that exited or restarts in a loop.
 * The host's /healthz and systemd answers are scripted by elapsed time.
 */
type Answer = MainProcess | undefined;

/** systemd's answer for a running process (pid) or none (undefined: not running, inactive). */
function running(pid: number | undefined, restarts = 0): MainProcess {
  return pid === undefined ? { activeState: 'inactive', subState: 'dead', restarts, result: 'success' } : { pid, activeState: 'active', subState: 'running', restarts, result: 'success' };
}

function scriptedHost(options: {
  answersAfterMs?: number;
  answersAfterAsk?: number;
  answersAfterStarts?: number;
  pid?: (ask: number) => number | undefined;
  process?: (ask: number) => Answer;
  journal?: () => string[];
  env?: Record<string, string>;
}): { host: Host; pidAsked: () => number; calls: string[] } {
  const started = Date.now();
  let asked = 0;
  const calls: string[] = [];
  const answer = options.process ?? ((ask: number) => running(options.pid!(ask)));
  const host = {
    env: options.env ?? {},
    net: {
      request: async () => {
        if (options.answersAfterMs !== undefined && Date.now() - started >= options.answersAfterMs) return { status: 200, body: 'ok' };
        if (options.answersAfterAsk !== undefined && asked >= options.answersAfterAsk) return { status: 200, body: 'ok' };
        if (options.answersAfterStarts !== undefined && calls.filter((c) => c === 'start').length >= options.answersAfterStarts) return { status: 200, body: 'ok' };
        throw new Error('connect ECONNREFUSED 127.0.0.1:18789');
      },
    },
    services: {
      // Scripted by the question's number, not by time: the same answers on a busy machine.
      mainProcess: async () => answer(++asked),
      journalTail: async () => options.journal?.() ?? [],
      resetFailed: async () => void calls.push('reset-failed'),
      start: async () => void calls.push('start'),
    },
    redactor: { redact: (text: string) => text.replace(/pkt_\w+/g, 'pkt_****') },
  } as unknown as Host;
  return { host, pidAsked: () => asked, calls };
}

const LIMITS = { patienceMs: 200, capMs: 1500, pollMs: 20 };

describe('waitForGateway', () => {
  it('a gateway that answers within the patience is ok, systemd not even asked', async () => {
    const { host, pidAsked } = scriptedHost({ answersAfterMs: 50, pid: () => 4242 });
    const wait = await waitForGateway(host, { ...LIMITS, patienceMs: 60_000, capMs: 60_000 });
    expect(wait.ok).toBe(true);
    expect(pidAsked()).toBe(0);
  });

  it('past the patience, the same running process is still starting: waited for, up to the cap', async () => {
    const lines: string[] = [];
    const { host } = scriptedHost({ answersAfterMs: 700, pid: () => 4242 });
    const wait = await waitForGateway(host, { ...LIMITS, progress: (text) => lines.push(text) });
    expect(wait.ok).toBe(true);
    expect(wait.waitedMs).toBeGreaterThanOrEqual(700);
    expect(lines.some((line) => /the gateway \(pid 4242\) is still starting/.test(line))).toBe(true);
  });

  it('a gateway that never answers ends at the cap, not before', async () => {
    const { host } = scriptedHost({ pid: () => 4242 });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.waitedMs).toBeGreaterThanOrEqual(LIMITS.capMs);
    expect(wait.detail).toContain('ECONNREFUSED');
  });

  it('a gateway that is not running past the patience fails at once', async () => {
    const { host } = scriptedHost({ pid: () => undefined });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/the gateway is not running: inactive\/dead after \d+ s/);
    expect(wait.waitedMs).toBeLessThan(LIMITS.capMs);
  });

  it('past the patience, systemd not answering (a busy user manager) is not "not running": the wait goes on and ends well', async () => {
    const lines: string[] = [];
    const { host } = scriptedHost({ answersAfterMs: 700, process: (ask) => (ask % 2 === 1 ? undefined : running(4242)) });
    const wait = await waitForGateway(host, { ...LIMITS, progress: (text) => lines.push(text) });
    expect(wait.ok).toBe(true);
    expect(lines.some((line) => /systemd did not say how the gateway is/.test(line))).toBe(true);
  });

  it('systemd never answering ends at the cap, saying so', async () => {
    const { host } = scriptedHost({ process: () => undefined });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.waitedMs).toBeGreaterThanOrEqual(LIMITS.capMs);
    expect(wait.detail).toMatch(/systemd never said how the gateway is/);
  });

  it(`past the patience, up to ${LATE_RESTARTS_ALLOWED} restarts by systemd (a first boot that missed a startup limit under load) are waited out, and it ends well`, async () => {
    const lines: string[] = [];
    const crashed: MainProcess = { activeState: 'activating', subState: 'auto-restart', restarts: 0, result: 'exit-code', lastExit: 'exit status 1' };
    // Answers once systemd was asked 10 times (by count, not time: the same on a busy machine).
    const { host } = scriptedHost({
      answersAfterAsk: 10,
      process: (ask) => (ask < 3 ? running(4242, 0) : ask < 5 ? crashed : ask < 7 ? running(5151, 1) : ask < 9 ? { ...crashed, restarts: 1 } : running(6161, 2)),
    });
    const wait = await waitForGateway(host, { ...LIMITS, progress: (text) => lines.push(text) });
    expect(wait.ok).toBe(true);
    expect(lines.some((line) => /the gateway exited \(exit-code, exit status 1\), systemd restarts it \(1 of 2 restarts allowed/.test(line))).toBe(true);
    expect(lines.some((line) => /the gateway \(pid 6161\) is still starting \(2 of 2 restarts allowed/.test(line))).toBe(true);
  });

  it('a gateway that keeps exiting fails on the restart past the allowance, naming how the last one ended', async () => {
    const { host } = scriptedHost({
      answersAfterMs: 60_000,
      process: (ask) => (ask % 2 === 1 ? { pid: 4000 + ask, activeState: 'active', subState: 'running', restarts: ask, result: 'success' } : { activeState: 'activating', subState: 'auto-restart', restarts: ask - 1, result: 'signal', lastExit: 'signal KILL' }),
    });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/the gateway keeps exiting: 3 restarts by systemd past 0 s, the last \(signal, signal KILL\) after \d+ s/);
    expect(wait.waitedMs).toBeLessThan(LIMITS.capMs);
  });

  it('past the patience, a gateway systemd is starting again (activating/start-pre, the last exit still shown) is waited for, not "not running"', async () => {
    const lines: string[] = [];
    const startPre: MainProcess = { activeState: 'activating', subState: 'start-pre', restarts: 1, result: 'exit-code', lastExit: 'exit status 1' };
    const { host } = scriptedHost({
      answersAfterAsk: 8,
      process: (ask) => (ask < 3 ? running(4242, 0) : ask < 6 ? startPre : running(5151, 1)),
    });
    const wait = await waitForGateway(host, { ...LIMITS, progress: (text) => lines.push(text) });
    expect(wait.ok, wait.detail).toBe(true);
    expect(lines.some((line) => /systemd is starting the gateway \(activating\/start-pre\) \(1 of 2 restarts allowed/.test(line))).toBe(true);
  });

  it('a failed wait repeats the gateway\'s last journal lines since its last start, secrets masked', async () => {
    const journal = ['Started OpenClaw gateway (private AI agent).', 'old line', SYSTEMD_STARTED, 'gateway: loading config', 'gateway: provider key pkt_live_abc123 rejected', 'gateway: exiting'];
    const { host } = scriptedHost({ pid: () => undefined, journal: () => journal });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/its journal's last lines: gateway: loading config \| gateway: provider key pkt_\*\*\*\* rejected \| gateway: exiting$/);
    expect(wait.detail).not.toContain('old line');
    expect(wait.detail).not.toContain('pkt_live_abc123');
  });

  it('without NRestarts (older systemd) the pids seen count the restarts', async () => {
    const { host } = scriptedHost({ answersAfterMs: 60_000, process: (ask) => ({ pid: 4000 + ask, activeState: 'active', subState: 'running', result: 'success' }) });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/the gateway keeps exiting: 3 restarts/);
  });

  it('a crash loop that hit systemd\'s start limit (failed, not restarting) fails at once, with how it ended', async () => {
    const { host } = scriptedHost({ process: () => ({ activeState: 'failed', subState: 'failed', restarts: 10, result: 'exit-code', lastExit: 'exit status 1' }) });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/the gateway is not running: failed\/failed \(exit-code, exit status 1\) after \d+ s/);
    expect(wait.waitedMs).toBeLessThan(LIMITS.capMs);
  });

  it('SERVICE_HEALTH_TIMEOUT_MS is one fixed limit (no patience past it)', async () => {
    const { host, pidAsked } = scriptedHost({ pid: () => 4242, env: { SERVICE_HEALTH_TIMEOUT_MS: '300' } });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.waitedMs).toBeGreaterThanOrEqual(300);
    expect(wait.waitedMs).toBeLessThan(LIMITS.capMs);
    expect(pidAsked()).toBe(0);
  });

  describe('a gateway that stopped itself (exit 78: systemd does not restart it)', () => {
    const BUSY = BUSY_START_JOURNAL;
    const CONFIG = [SYSTEMD_STARTED, `${CONFIG_ERROR_JOURNAL[1]}: models.providers.service.apiKey pkt_live_secret_123 is not a SecretRef`];
    const refused: MainProcess = { activeState: 'failed', subState: 'failed', restarts: 0, result: 'exit-code', lastExit: 'exit status 78' };
    // Asked every poll within the patience here: the wait's checks are by count, not time.
    const QUICK = { ...LIMITS, patienceMs: 60_000, capMs: 60_000, stateEveryMs: 0 };

    it('for a server too busy at its start: started again (reset-failed, start), and it ends well', async () => {
      const lines: string[] = [];
      const { host, calls } = scriptedHost({ answersAfterStarts: 1, process: () => refused, journal: () => BUSY });
      const wait = await waitForGateway(host, { ...QUICK, progress: (text) => lines.push(text) });
      expect(wait.ok).toBe(true);
      expect(calls).toEqual(['reset-failed', 'start']);
      expect(lines.some((line) => new RegExp(`too busy for its state lease worker's 5 s startup limit; starting it again \\(1 of ${REFUSED_STARTS_ALLOWED}\\)`).test(line))).toBe(true);
    });

    it(`stops after ${REFUSED_STARTS_ALLOWED} starts again, well before the cap`, async () => {
      const { host, calls } = scriptedHost({ process: () => refused, journal: () => BUSY });
      const wait = await waitForGateway(host, QUICK);
      expect(wait.ok).toBe(false);
      expect(calls.filter((c) => c === 'start')).toHaveLength(REFUSED_STARTS_ALLOWED);
      expect(wait.detail).toMatch(new RegExp(`stopped itself at its start ${REFUSED_STARTS_ALLOWED + 1} times, the server too busy`));
      expect(wait.detail).toContain('Gateway failed to start: OpenClaw startup migrations did not complete cleanly');
      expect(wait.waitedMs).toBeLessThan(QUICK.capMs);
    });

    it('for any other reason (a config error): fails at once with its own words, secrets masked, never started again', async () => {
      const { host, calls } = scriptedHost({ process: () => refused, journal: () => CONFIG });
      const wait = await waitForGateway(host, QUICK);
      expect(wait.ok).toBe(false);
      expect(calls).toEqual([]);
      expect(wait.detail).toMatch(/the gateway stopped itself \(exit status 78\) after \d+ s: Gateway failed to start: Invalid config/);
      expect(wait.detail).toContain('pkt_****');
      expect(wait.detail).not.toContain('pkt_live_secret_123');
      expect(wait.waitedMs).toBeLessThan(QUICK.capMs);
    });

    it('the busy-server line of an earlier start does not count for the last one', async () => {
      const { host, calls } = scriptedHost({ process: () => refused, journal: () => [...BUSY, ...CONFIG] });
      const wait = await waitForGateway(host, QUICK);
      expect(wait.ok).toBe(false);
      expect(calls).toEqual([]);
      expect(wait.detail).toMatch(/Invalid config/);
    });

    it('a gateway started again and still in start-pre (ExecMainStatus still 78) is not another refusal', async () => {
      const startPre: MainProcess = { activeState: 'activating', subState: 'start-pre', restarts: 0, result: 'exit-code', lastExit: 'exit status 78' };
      const { host, calls } = scriptedHost({ answersAfterAsk: 6, process: (ask) => (ask === 1 ? refused : ask < 5 ? startPre : running(7171)), journal: () => BUSY });
      const wait = await waitForGateway(host, QUICK);
      expect(wait.ok, wait.detail).toBe(true);
      expect(calls).toEqual(['reset-failed', 'start']);
    });

    it('an exit 78 with an empty journal is a refusal that says so, not a busy server', async () => {
      const { host, calls } = scriptedHost({ process: () => refused, journal: () => [] });
      const wait = await waitForGateway(host, QUICK);
      expect(wait.ok).toBe(false);
      expect(calls).toEqual([]);
      expect(wait.detail).toMatch(/exit status 78, nothing in its journal says why/);
    });

    it('within the patience, a running gateway that systemd is asked about is waited for as before', async () => {
      const { host, pidAsked, calls } = scriptedHost({ answersAfterMs: 300, pid: () => 4242 });
      const wait = await waitForGateway(host, QUICK);
      expect(wait.ok).toBe(true);
      expect(pidAsked()).toBeGreaterThanOrEqual(1);
      expect(calls).toEqual([]);
    });
  });
});
