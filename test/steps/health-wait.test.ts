import { describe, expect, it } from 'vitest';
import type { Host } from '../../src/host/index.js';
import type { MainProcess } from '../../src/host/services.js';
import { waitForGateway } from '../../src/steps/health.js';

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

function scriptedHost(options: { answersAfterMs?: number; pid?: (ask: number) => number | undefined; process?: (ask: number) => Answer; env?: Record<string, string> }): { host: Host; pidAsked: () => number } {
  const started = Date.now();
  let asked = 0;
  const answer = options.process ?? ((ask: number) => running(options.pid!(ask)));
  const host = {
    env: options.env ?? {},
    net: {
      request: async () => {
        if (options.answersAfterMs !== undefined && Date.now() - started >= options.answersAfterMs) return { status: 200, body: 'ok' };
        throw new Error('connect ECONNREFUSED 127.0.0.1:18789');
      },
    },
    services: {
      // Scripted by the question's number, not by time: the same answers on a busy machine.
      mainProcess: async () => answer(++asked),
    },
  } as unknown as Host;
  return { host, pidAsked: () => asked };
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

  it('a gateway restarted by systemd after the patience fails at once, naming both pids', async () => {
    const { host } = scriptedHost({ answersAfterMs: 60_000, pid: (ask) => (ask < 4 ? 4242 : 5151) });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/the gateway restarted \(pid 4242 -> 5151\)/);
    expect(wait.waitedMs).toBeLessThan(LIMITS.capMs);
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

  it('a restart systemd counted (NRestarts) fails even if the pid reads the same, naming how the last process ended', async () => {
    const { host } = scriptedHost({
      answersAfterMs: 60_000,
      process: (ask) => (ask < 3 ? running(4242, 0) : { ...running(4242, 1), lastExit: 'signal KILL' }),
    });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/1 automatic restart\(s\) by systemd, the last process ended with signal KILL/);
  });

  it('a gateway waiting out RestartSec after a crash is named as such, with how it ended', async () => {
    const { host } = scriptedHost({
      process: (ask) => (ask < 3 ? running(4242) : { activeState: 'activating', subState: 'auto-restart', restarts: 1, result: 'exit-code', lastExit: 'exit status 1' }),
    });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.detail).toMatch(/the gateway exited \(exit-code, exit status 1\) and systemd restarts it after \d+ s/);
  });

  it('SERVICE_HEALTH_TIMEOUT_MS is one fixed limit (no patience past it)', async () => {
    const { host, pidAsked } = scriptedHost({ pid: () => 4242, env: { SERVICE_HEALTH_TIMEOUT_MS: '300' } });
    const wait = await waitForGateway(host, LIMITS);
    expect(wait.ok).toBe(false);
    expect(wait.waitedMs).toBeGreaterThanOrEqual(300);
    expect(wait.waitedMs).toBeLessThan(LIMITS.capMs);
    expect(pidAsked()).toBe(0);
  });
});
