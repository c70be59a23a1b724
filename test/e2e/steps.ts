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
        }
        throw new Error(explained, { cause: undefined });
      }
    }, budget(timeoutMs));
  }
  /** For the job's report: the first step that failed and the first line of why (null when none did). */
  const failure = () => ({ failedStep: failed ?? null, failureReason: reason ?? null });
  return { step, failure };
}
