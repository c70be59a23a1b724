import { LOCKS, type Step } from './step.js';

/** Steps that may run at once by default: the install's work is mostly waiting (downloads, npm, apt, a health probe), not CPU. */
export const DEFAULT_CONCURRENCY = 4;

const LOCK_NAMES = new Set<string>(Object.values(LOCKS));

/**
 * Runs `run(index)` for each step once every step it needs (Step.needs) has ended and
 * no running step holds a lock it takes, at most `concurrency` at once. Among the steps
 * that may start, the one listed first starts first, so with `concurrency` 1 the steps
 * run one after the other in their listed order (the serial install).
 *
 * A `run` that rejects is a failure: no step starts after it, the running ones are
 * waited for (a step is never cut off in the middle of its apply), and the promise
 * rejects with the first failure. `started(index)` is called when a step's turn begins.
 */
export function runByNeeds(
  steps: ReadonlyArray<Pick<Step, 'id' | 'needs'>>,
  run: (index: number) => Promise<void>,
  options: { concurrency: number },
): Promise<void> {
  const concurrency = Math.max(1, Math.floor(options.concurrency));
  const waiting = steps.map((_, index) => index);
  const ended = new Set<string>();
  const held = new Set<string>();
  let running = 0;
  let failure: { error: unknown } | undefined;

  const needsOf = (index: number) => steps[index]!.needs ?? [];
  const mayStart = (index: number) =>
    needsOf(index).every((need) => (LOCK_NAMES.has(need) ? !held.has(need) : ended.has(need)));

  return new Promise<void>((resolve, reject) => {
    const pump = (): void => {
      while (!failure && running < concurrency) {
        const position = waiting.findIndex(mayStart);
        if (position < 0) break;
        const [index] = waiting.splice(position, 1) as [number];
        const locks = needsOf(index).filter((need) => LOCK_NAMES.has(need));
        for (const lock of locks) held.add(lock);
        running++;
        const finish = (error?: { error: unknown }) => {
          running--;
          for (const lock of locks) held.delete(lock);
          if (error) failure ??= error;
          else ended.add(steps[index]!.id);
          pump();
        };
        // A synchronous throw in `run` counts as its failure too.
        Promise.resolve()
          .then(() => run(index))
          .then(
            () => finish(),
            (error: unknown) => finish({ error }),
          );
      }
      if (running > 0) return;
      if (failure) reject(failure.error);
      else if (waiting.length === 0) resolve();
      else {
        const stuck = waiting.map((index) => `${steps[index]!.id} (needs ${needsOf(index).filter((n) => !LOCK_NAMES.has(n) && !ended.has(n)).join(', ')})`);
        reject(new Error(`steps that can never start: ${stuck.join('; ')}`));
      }
    };
    pump();
  });
}
