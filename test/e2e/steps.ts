// A scenario's steps: they build on each other, so once one fails the rest are skipped
// (saying which failed); each logs ok/FAIL with its time, and a failure's message gets
// the scenario's own diagnostics. A step's time limit is a safety net against a hang,
// scaled like every test budget with the machine's load and TEST_TIME_SCALE
// (test/helpers/budget.ts): on a shared 2-core machine the first install's npm alone
// took 11 minutes.
import { it } from 'vitest';
import { budget } from '../helpers/budget.js';
import { log, seconds } from './harness.js';

export interface StepOptions {
  /**
   * Nothing after this step builds on it (it leaves the server as it found it): its
   * failure fails the job but does not skip the steps after it.
   */
  independent?: boolean;
}

export function scenarioSteps(explain: (error: Error) => Promise<string>) {
  let broken: string | undefined;
  let failed: string | undefined;
  let reason: string | undefined;
  let detail: string[] | undefined;
  function step(name: string, timeoutMs: number, fn: () => Promise<void>, options: StepOptions = {}): void {
    it(name, async (ctx) => {
      if (broken) ctx.skip(`an earlier step failed: ${broken}`);
      const t = Date.now();
      try {
        await fn();
        log(`ok   ${name} (${seconds(Date.now() - t)})`);
      } catch (error) {
        if (!options.independent) broken = name;
        log(`FAIL ${name} (${seconds(Date.now() - t)})`);
        const explained = await explain(error as Error);
        // The first line says why; the run's summary prints it, since a CI log may keep
        // only the tail of the long diagnostics below it.
        if (!failed) {
          failed = name;
          reason = explained.split('\n').find((line) => line.trim() !== '')?.trim().slice(0, 400);
          detail = failureDetail(explained);
        }
        throw new Error(explained, { cause: undefined });
      }
    }, budget(timeoutMs));
  }
  /** For the job's report: the first step that failed and the first line of why (null when none did). */
  const failure = () => ({ failedStep: failed ?? null, failureReason: reason ?? null, failureDetail: detail ?? null });
  return { step, failure };
}

/** How many lines of a failure's diagnostics the run's summary repeats (CI keeps only a log's tail). */
export const FAILURE_DETAIL_LINES = 30;

/**
 * The lines of a failure's diagnostics that say why a gateway did not come up: its
 * journal and systemd's status (from "--- gateway journal" to the next "--- " section),
 * else the diagnostics' last lines. Already masked by the scenario's explain().
 */
export function failureDetail(explained: string): string[] | undefined {
  const lines = explained.split('\n').map((line) => line.trimEnd()).filter((line) => line !== '');
  const start = lines.indexOf('--- gateway journal');
  let section = lines;
  if (start >= 0) {
    const end = lines.findIndex((line, i) => i > start && line.startsWith('--- '));
    section = lines.slice(start + 1, end < 0 ? undefined : end);
  }
  const tail = section.slice(-FAILURE_DETAIL_LINES).map((line) => line.slice(0, 300));
  return tail.length > 0 ? tail : undefined;
}
