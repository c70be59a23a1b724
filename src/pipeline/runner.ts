import type { ListrTask } from 'listr2';
import { DeployError } from '../errors.js';
import { outcomeText } from './outcome.js';
import type { StepRendererOptions, StepRendererTaskOptions } from './renderer.js';
import type { InstallContext, Notify, Plan, Step, StepResult } from './step.js';

export interface PipelineOutcome {
  results: StepResult[];
  recap: { ok: number; changed: number; skipped: number; failed: number };
  failed: boolean;
}

export interface PipelineDisplay {
  /** --json and the catalog deploy: no step lines at all. */
  silent: boolean;
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

/**
 * Runs the steps in order as a listr2 task list, each check -> (plan) -> apply ->
 * verify. In check mode nothing is applied: the plan is the result, and a step whose
 * check fails is recorded as failed (cannot be planned) while the later steps are still
 * planned. Otherwise the first failure stops the run (later steps build on earlier
 * ones); what ran is reported either way, each step that ran with its start and end
 * (ms since the pipeline started: the install's timeline, critical-path.ts).
 *
 * Checks only read the machine, so they all start at once; a step uses its early
 * result while no earlier step has changed anything (the state it read is still the
 * state), and checks again in its turn otherwise. A converged server's re-run thus
 * costs the slowest check, not the sum of them.
 *
 * What people see comes from the renderers (renderer.ts), which listr2 picks:
 * TerminalRenderer when stdout and stderr are terminals, PlainRenderer otherwise (one
 * line per step event). Progress of long work (ctx.progress) is the task's output; the
 * host's log lines go through the renderer while the list runs. With `display.silent`
 * (--json) nothing is shown, and the same step runs go one after the other without
 * listr2 (and without loading it): the first failure ends the run, and Ctrl-C exits
 * 127, as listr2 does.
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

  const runs = steps.map((step) => {
    let result: StepResult | undefined;
    const rendererOptions: StepRendererTaskOptions = { outcome: () => result };
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
            await step.apply(ctx, plan);
            await step.verify?.(ctx);
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
    if (display.silent) await runSilently(runs);
    else await runListed(runs, check, log);
  } catch {
    // Recorded in results; the caller reports the failure with the recap.
  }
  const count = (status: string) => results.filter((r) => r.status === status).length;
  const recap = { ok: count('ok'), changed: count('changed'), skipped: count('skipped'), failed: count('failed') };
  return { results, recap, failed: recap.failed > 0 };
}

/** The step runs in order, the first failure ending the list (it is recorded in the results). */
async function runSilently(runs: Array<{ run: (task: StepTask) => Promise<void> }>): Promise<void> {
  const interrupted = () => process.exit(127);
  process.once('SIGINT', interrupted);
  try {
    for (const { run } of runs) await run({ title: '', output: '', skip: () => undefined });
  } finally {
    process.removeListener('SIGINT', interrupted);
  }
}

/** The step runs as a listr2 task list with the step renderers (loaded only for a list that is shown). */
async function runListed(
  runs: Array<{ title: string; rendererOptions: StepRendererTaskOptions; run: (task: StepTask) => Promise<void> }>,
  check: boolean,
  log: InstallContext['host']['log'],
): Promise<void> {
  const [{ Listr }, { LineRelay, PlainRenderer, TerminalRenderer }] = await Promise.all([import('listr2'), import('./renderer.js')]);
  const tasks: ListrTask[] = runs.map(({ title, rendererOptions, run }) => ({
    title,
    rendererOptions,
    fallbackRendererOptions: rendererOptions,
    task: (_, task) => run(task),
  }));
  const lines = new LineRelay();
  const rendererOptions: StepRendererOptions = { check, lines };
  const listr = new Listr(tasks, {
    concurrent: false,
    exitOnError: true,
    renderer: TerminalRenderer,
    rendererOptions,
    fallbackRenderer: PlainRenderer,
    fallbackRendererOptions: rendererOptions,
    // listr2 asks whether stdout is a terminal; the lines go to stderr, so it must be one too.
    fallbackRendererCondition: () => !process.stderr.isTTY || process.env.TERM === 'dumb',
  });
  log.routeConsole((line) => lines.write(line));
  try {
    await listr.run();
  } finally {
    log.routeConsole(undefined);
  }
}
