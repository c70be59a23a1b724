import type { ListrTask } from 'listr2';
import { runLowered } from '../host/exec.js';
import { DeployError } from '../errors.js';
import { outcomeText } from './outcome.js';
import { Turn, type StepRendererOptions, type StepRendererTaskOptions } from './renderer.js';
import { runByNeeds } from './schedule.js';
import type { InstallContext, Notify, Plan, Step, StepResult } from './step.js';

export interface PipelineOutcome {
  results: StepResult[];
  recap: { ok: number; changed: number; skipped: number; failed: number };
  failed: boolean;
}

export interface PipelineDisplay {
  /** --json and the catalog deploy: no step lines at all. */
  silent: boolean;
  /**
   * Steps running at once (schedule.ts; default 1: one after the other in the listed
   * order, `install --serial`). Check mode always plans one step after the other, so its
   * output keeps the listed order.
   */
  concurrency?: number;
}

type Assessment = { reason: string } | { plan: Plan } | { error: unknown };

/** What a step's run may do to its line: listr2's task when the list is shown, a stand-in when silent. */
interface StepTask {
  title: string;
  output: string;
  skip(reason: string): void;
}

async function assess(step: Step, ctx: InstallContext): Promise<Assessment> {
  try {
    const reason = await step.skip?.(ctx);
    return reason ? { reason } : { plan: await step.check(ctx) };
  } catch (error) {
    return { error };
  }
}

/** How much lower a background step's commands run when steps run at once (Step.background): nice 10 of 19. */
export const BACKGROUND_NICENESS = 10;

/**
 * Runs the steps as a listr2 task list, each check -> (plan) -> apply -> verify, a step
 * starting once the steps it needs have ended and the locks it takes are free, up to
 * `display.concurrency` at once (schedule.ts; 1: in the listed order). In check mode
 * nothing is applied: the steps are planned one after the other, the plan is the
 * result, and a step whose check fails is recorded as failed (cannot be planned) while
 * the later steps are still planned. Otherwise the first failure stops the run: no step
 * starts after it and the running ones end first. What ran is reported either way, in
 * the listed order whatever order the steps ended in, each step that ran with its start
 * and end (ms since the pipeline started: the install's timeline, critical-path.ts).
 *
 * Checks only read the machine, so they all start at once; a step uses its early
 * result while no step has changed anything yet (the state it read is still the
 * state), and checks again in its turn otherwise. A converged server's re-run thus
 * costs the slowest check, not the sum of them.
 *
 * What people see comes from the renderers (renderer.ts), which listr2 picks:
 * TerminalRenderer when stdout and stderr are terminals, PlainRenderer otherwise (one
 * line per step event). Progress of long work (ctx.progress) is the task's output; the
 * host's log lines go through the renderer while the list runs. With `display.silent`
 * (--json) nothing is shown, and the same step runs are scheduled without listr2 (and
 * without loading it); Ctrl-C exits 127, as listr2 does.
 */
export async function runPipeline(
  steps: Step[],
  base: Omit<InstallContext, 'notified' | 'progress'>,
  display: PipelineDisplay,
): Promise<PipelineOutcome> {
  const results: StepResult[] = [];
  const notified = new Set<Notify>();
  const { log, redactor } = base.host;
  const check = base.options.check;
  let changedSoFar = false;
  // The clock of the steps' start and end (StepResult.startMs): monotonic, so a wall
  // clock set during the install (a fresh server's first time sync) moves no step.
  const pipelineStart = performance.now();
  const sincePipelineStart = () => Math.round(performance.now() - pipelineStart);
  const early = new Map(
    steps
      .filter((step) => step.speculative !== false)
      .map((step) => [step, assess(step, { ...base, notified: new Set(), progress: () => undefined })] as const),
  );

  const concurrency = check ? 1 : (display.concurrency ?? 1);
  const runs = steps.map((step) => {
    let result: StepResult | undefined;
    const rendererOptions: StepRendererTaskOptions = { outcome: () => result, turn: new Turn() };
    return {
      title: step.title,
      rendererOptions,
      run: async (task: StepTask) => {
        const ctx: InstallContext = { ...base, notified, progress: (text) => (task.output = redactor.redact(text)) };
        const startMs = sincePipelineStart();
        const record = (partial: Omit<StepResult, 'id' | 'title' | 'durationMs' | 'startMs' | 'endMs'>) => {
          const endMs = sincePipelineStart();
          // A skipped step did no work: its time (the wait for its early check) is no bar of the timeline.
          const span = partial.status === 'skipped' ? {} : { startMs, endMs };
          result = { id: step.id, title: step.title, durationMs: endMs - startMs, ...span, ...partial };
          results.push(result);
          return result;
        };
        try {
          const speculated = early.get(step);
          const assessment = speculated && !changedSoFar ? await speculated : await assess(step, ctx);
          if ('error' in assessment) throw assessment.error;
          if ('reason' in assessment) {
            record({ status: 'skipped', changes: [], reason: assessment.reason });
            task.skip(assessment.reason);
            return;
          }
          const { plan } = assessment;
          if (plan.changes.length === 0) {
            task.title = `${step.title}: ${outcomeText(record({ status: 'ok', changes: [] }), check)}`;
            return;
          }
          changedSoFar = true;
          if (!check) {
            const work = async () => {
              await step.apply(ctx, plan);
              await step.verify?.(ctx);
            };
            // Beside other steps, a background step's commands yield the cores (Step.background).
            await (step.background && concurrency > 1 ? runLowered(BACKGROUND_NICENESS, work) : work());
          }
          for (const n of plan.notify ?? []) notified.add(n);
          task.title = `${step.title}: ${outcomeText(record({ status: 'changed', changes: plan.changes }), check)}`;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          const hint = error instanceof DeployError ? error.hint : undefined;
          const failed = record({ status: 'failed', changes: [], error: redactor.redact(message), hint });
          log.debug(`step ${step.id} failed: ${error instanceof Error ? error.stack : message}`);
          // Check mode applies nothing, so a step that cannot be planned stops nothing:
          // the rest of the plan is still shown, and this step listed with why.
          if (check) {
            task.title = `${step.title}: ${outcomeText(failed, check)}`;
            return;
          }
          throw new DeployError(`${step.title}: ${failed.error}`, hint);
        }
      },
    };
  });

  try {
    if (display.silent) await runSilently(steps, runs, concurrency);
    else await runListed(steps, runs, { check, concurrency }, log);
  } catch {
    // Recorded in results; the caller reports the failure with the recap.
  }
  const order = new Map(steps.map((step, index) => [step.id, index]));
  results.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  const count = (status: string) => results.filter((r) => r.status === status).length;
  const recap = { ok: count('ok'), changed: count('changed'), skipped: count('skipped'), failed: count('failed') };
  return { results, recap, failed: recap.failed > 0 };
}

type StepRun = { title: string; rendererOptions: StepRendererTaskOptions; run: (task: StepTask) => Promise<void> };

/** The step runs by their needs (schedule.ts), the first failure ending the list (it is recorded in the results). */
async function runSilently(steps: readonly Step[], runs: readonly StepRun[], concurrency: number): Promise<void> {
  const interrupted = () => process.exit(127);
  process.once('SIGINT', interrupted);
  try {
    await runByNeeds(steps, (index) => runs[index]!.run({ title: '', output: '', skip: () => undefined }), { concurrency });
  } finally {
    process.removeListener('SIGINT', interrupted);
  }
}

/**
 * The step runs as a listr2 task list with the step renderers (loaded only for a list
 * that is shown). listr2 starts every task at once; each hands over its task object and
 * waits until the schedule (runByNeeds) has run its step. A step the schedule never
 * started (an earlier failure ended the run) ends without a line (Turn.unreached).
 */
async function runListed(steps: readonly Step[], runs: readonly StepRun[], options: { check: boolean; concurrency: number }, log: InstallContext['host']['log']): Promise<void> {
  const [{ Listr, ListrTaskEventType }, { LineRelay, PlainRenderer, TerminalRenderer }] = await Promise.all([import('listr2'), import('./renderer.js')]);
  const handed = runs.map(() => deferred<StepTask>());
  const ended = runs.map(() => deferred<void>());
  const closed = runs.map(() => deferred<void>());
  const tasks: ListrTask[] = runs.map(({ title, rendererOptions }, index) => ({
    title,
    rendererOptions,
    fallbackRendererOptions: rendererOptions,
    task: (_, task) => {
      // listr2's last event for the task, after the renderer has said its outcome.
      task.task.once(ListrTaskEventType.CLOSED, () => closed[index]!.resolve());
      handed[index]!.resolve(task);
      return ended[index]!.promise;
    },
  }));
  const lines = new LineRelay();
  const rendererOptions: StepRendererOptions = { check: options.check, lines };
  const listr = new Listr(tasks, {
    concurrent: true,
    exitOnError: false,
    renderer: TerminalRenderer,
    rendererOptions,
    fallbackRenderer: PlainRenderer,
    fallbackRendererOptions: rendererOptions,
    // listr2 asks whether stdout is a terminal; the lines go to stderr, so it must be one too.
    fallbackRendererCondition: () => !process.stderr.isTTY || process.env.TERM === 'dumb',
  });
  const schedule = runByNeeds(
    steps,
    async (index) => {
      const task = await handed[index]!.promise;
      runs[index]!.rendererOptions.turn!.begin();
      // A step counts as ended once its line is out, so a step's line always comes
      // after the lines of the steps it needs.
      try {
        await runs[index]!.run(task);
        ended[index]!.resolve();
      } catch (error) {
        ended[index]!.reject(error);
        await closed[index]!.promise;
        throw error;
      }
      await closed[index]!.promise;
    },
    { concurrency: options.concurrency },
  );
  // The steps the schedule did not start: their tasks end, unshown, once it is over.
  const over = schedule.finally(() => {
    for (const [index, run] of runs.entries()) {
      if (run.rendererOptions.outcome?.() !== undefined) continue;
      run.rendererOptions.turn!.unreached = true;
      ended[index]!.resolve();
    }
  });
  log.routeConsole((line) => lines.write(line));
  try {
    await listr.run();
  } finally {
    log.routeConsole(undefined);
  }
  await over;
}

/** A promise with its resolve and reject (Promise.withResolvers, which Node 20's tests lack). */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A step's failure is the schedule's to report; listr2 sees it too, this copy must not be "unhandled".
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}
