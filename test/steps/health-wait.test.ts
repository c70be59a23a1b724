import { describe, expect, it } from 'vitest';
import type { Host } from '../../src/host/index.js';
import { waitForGateway } from '../../src/steps/health.js';

/**
 * The gateway's (re)start wait: patient with a gateway that is still the same starting
 * process (a busy server: minutes), quick to fail one that exited or restarts in a loop.
 * The host's /healthz and systemd answers are scripted by elapsed time.
 */
function scriptedHost(options: { answersAfterMs?: number; pid: (ask: number) => number | undefined; env?: Record<string, string> }): { host: Host; pidAsked: () => number } {
  const started = Date.now();
  let asked = 0;
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
      mainPid: async () => options.pid(++asked),
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
    expect(wait.detail).toMatch(/the gateway is not running after \d+ s/);
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
});
