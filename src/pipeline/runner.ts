import { Listr, ListrLogLevels, ListrLogger, type ListrTask } from 'listr2';
import { DeployError } from '../errors.js';
import type { InstallContext, Notify, Plan, Step, StepResult } from './step.js';

export interface PipelineOutcome {
  results: StepResult[];
  recap: { ok: number; changed: number; skipped: number; failed: number };
  failed: boolean;
}

export type Renderer = 'default' | 'simple' | 'silent';

type Assessment = { reason: string } | { plan: Plan } | { error: unknown };

async function assess(step: Step, ctx: InstallContext): Promise<Assessment> {
  try {
    const reason = await step.skip?.(ctx);
    return reason ? { reason } : { plan: await step.check(ctx) };
  } catch (error) {
    return { error };
  }
}

/**
 * Runs the steps in order, each check -> (plan) -> apply -> verify. In check mode
 * nothing is applied: the plan is the result, and a step whose check fails is recorded
 * as failed (cannot be planned) while the later steps are still planned. Otherwise the
 * first failure stops the run (later steps build on earlier ones); what ran is
 * reported either way.
 *
 * Checks only read the machine, so they all start at once; a step uses its early
 * result while no earlier step has changed anything (the state it read is still the
 * state), and checks again in its turn otherwise. A converged server's re-run thus
 * costs the slowest check, not the sum of them.
 */
export async function runPipeline(
  steps: Step[],
  base: Omit<InstallContext, 'notified' | 'progress'>,
  renderer: Renderer,
): Promise<PipelineOutcome> {
  const results: StepResult[] = [];
  const notified = new Set<Notify>();
  let changedSoFar = false;
  const early = new Map(
    steps
      .filter((step) => step.speculative !== false)
      .map((step) => [step, assess(step, { ...base, notified: new Set(), progress: () => undefined })] as const),
  );

  const tasks: ListrTask[] = steps.map((step) => ({
    title: step.title,
    task: async (_, task) => {
      const ctx: InstallContext = { ...base, notified, progress: (text) => (task.output = text) };
      const started = Date.now();
      const record = (partial: Omit<StepResult, 'id' | 'title' | 'durationMs'>) =>
        results.push({ id: step.id, title: step.title, durationMs: Date.now() - started, ...partial });
      try {
        const speculated = early.get(step);
        const assessment = speculated && !changedSoFar ? await speculated : await assess(step, ctx);
        if ('error' in assessment) throw assessment.error;
        if ('reason' in assessment) {
          record({ status: 'skipped', changes: [], reason: assessment.reason });
          task.skip(`${step.title}: skipped (${assessment.reason})`);
          return;
        }
        const { plan } = assessment;
        if (plan.changes.length === 0) {
          record({ status: 'ok', changes: [] });
          task.title = `${step.title}: ok`;
          return;
        }
        changedSoFar = true;
        if (!ctx.options.check) {
          await step.apply(ctx, plan);
          await step.verify?.(ctx);
        }
        for (const n of plan.notify ?? []) notified.add(n);
        record({ status: 'changed', changes: plan.changes });
        task.title = `${step.title}: ${ctx.options.check ? 'would change' : 'changed'} (${plan.changes.map((c) => c.summary).join('; ')})`;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const hint = error instanceof DeployError ? error.hint : undefined;
        record({ status: 'failed', changes: [], error: base.host.redactor.redact(message), hint });
        base.host.log.debug(`step ${step.id} failed: ${error instanceof Error ? error.stack : message}`);
        // Check mode applies nothing, so a step that cannot be planned stops nothing:
        // the rest of the plan is still shown, and this step listed with why.
        if (ctx.options.check) {
          task.title = `${step.title}: cannot plan (${base.host.redactor.redact(message)})`;
          return;
        }
        throw new DeployError(`${step.title}: ${message}`, hint);
      }
    },
  }));

  const listr = new Listr(tasks, {
    concurrent: false,
    exitOnError: true,
    renderer,
    fallbackRenderer: 'simple',
    // Progress is for people: stderr. stdout stays for the recap and --json.
    rendererOptions: { collapseSubtasks: false, logger: new ListrLogger({ useIcons: true, toStderr: Object.values(ListrLogLevels) }) },
    fallbackRendererOptions: { logger: new ListrLogger({ useIcons: true, toStderr: Object.values(ListrLogLevels) }) },
  } as never);
  try {
    await listr.run();
  } catch {
    // Recorded in results; the caller reports the failure with the recap.
  }
  const count = (status: string) => results.filter((r) => r.status === status).length;
  const recap = { ok: count('ok'), changed: count('changed'), skipped: count('skipped'), failed: count('failed') };
  return { results, recap, failed: recap.failed > 0 };
}
