import os from 'node:os';

/**
 * Time budgets for tests on a busy machine. A budget is the most a test waits for a
 * signal it polls or listens for (a port, a log line, a file), never a delay it
 * sleeps hoping it is enough. It scales with the machine's load when asked
 * (one-minute load average per core, at most 4x) and with TEST_TIME_SCALE (e.g. 3 on a
 * slow CI machine), so a slow start is waited for while a hang still ends.
 */
export function timeScale(): number {
  const configured = Number(process.env.TEST_TIME_SCALE);
  const load = os.loadavg()[0]! / Math.max(1, os.cpus().length);
  return Math.max(Number.isFinite(configured) && configured > 0 ? configured : 1, Math.min(4, load));
}

export function budget(ms: number): number {
  return Math.round(ms * timeScale());
}

/**
 * Polls `probe` until it returns a value other than undefined/false, within a budget
 * that scales. On timeout the error names what was awaited and the last state seen.
 */
export async function waitUntil<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: { budgetMs?: number; intervalMs?: number; lastSeen?: () => string } = {},
): Promise<T> {
  const limit = budget(options.budgetMs ?? 30_000);
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > limit) {
      const seen = options.lastSeen?.();
      throw new Error(`gave up after ${Math.round(limit / 1000)} s waiting for ${what}${seen ? `; last seen: ${seen}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}
