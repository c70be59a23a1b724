import type { InstallArgs } from '../commands/install.js';
import { UsageError } from '../errors.js';
import { createHost, type Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { printJson, printLine } from '../output.js';
import { installSteps } from '../steps/index.js';
import { resolveDeploymentInputs, type AnswerFlags } from './answers.js';
import { formatRecap, runPipeline, type PipelineOutcome, type Renderer } from './pipeline.js';
import type { InstallOptions, Step } from './step.js';

export interface InstallRun {
  host: Host;
  args: InstallArgs;
  /** Extra steps or a replacement list (restore reuses the pipeline). */
  steps?: Step[];
}

export async function runInstall(args: InstallArgs): Promise<void> {
  const host = createHost({ verbose: args.verbose, quiet: args.json });
  if (args.resetClean) {
    const { runResetClean } = await import('./reset.js');
    return runResetClean(host, args);
  }
  await installWithLock({ host, args });
}

/**
 * Resolves the answers (prompting first, before any task list), then runs the
 * pipeline under the install lock. Bad answers end the run before anything is written.
 */
export async function installWithLock({ host, args, steps }: InstallRun): Promise<PipelineOutcome> {
  const catalog = Boolean(args.catalog);
  const interactive = !catalog && !args.nonInteractive && !args.json && Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const lockTimeout = args.lockTimeout ?? 300;
  if (!Number.isFinite(lockTimeout) || lockTimeout < 0) throw new UsageError('--lock-timeout must be a number of seconds >= 0');

  // Every question is asked before the task list starts.
  const prompter = interactive ? await (await import('./prompter.js')).terminalPrompter() : undefined;
  const { profile, components, answers } = await resolveDeploymentInputs(host, args as AnswerFlags, { prompter });

  const options: InstallOptions = {
    check: Boolean(args.check),
    diff: Boolean(args.diff),
    channel: catalog || Boolean(args.channel),
    catalog,
    rotateChannelSecrets: Boolean(args.rotateChannelSecrets),
    lockTimeoutMs: lockTimeout * 1000,
  };

  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    if (!options.check) {
      await host.files.ensureDir(LAYOUT.logDir, 0o700);
      host.log.attachFile(host.paths.real(LAYOUT.installLog));
      host.log.debug(`install started: customer ${answers.customerSlug}, model ${answers.modelId}, channel ${options.channel}`);
    }
    const renderer: Renderer = args.json || catalog ? 'silent' : process.stderr.isTTY ? 'default' : 'simple';
    const started = Date.now();
    const outcome = await runPipeline(steps ?? installSteps(), { host, profile, answers, components, options }, renderer);
    report(host, args, outcome, options, Date.now() - started);
    if (outcome.failed) process.exitCode = 1;
    return outcome;
  } finally {
    await lock.release();
    host.log.close();
  }
}

function report(host: Host, args: InstallArgs, outcome: PipelineOutcome, options: InstallOptions, ms: number): void {
  const recap = formatRecap(outcome.recap);
  host.log.debug(`install finished: ${recap} in ${ms} ms`);
  if (args.json || args.catalog) {
    printJson({
      ok: !outcome.failed,
      mode: options.check ? 'check' : 'apply',
      recap: outcome.recap,
      durationMs: ms,
      steps: outcome.results.map((r) => ({
        id: r.id,
        status: r.status,
        durationMs: r.durationMs,
        ...(r.reason ? { reason: r.reason } : {}),
        ...(r.changes.length ? { changes: r.changes.map((c) => c.summary) } : {}),
        ...(r.error ? { error: r.error, hint: r.hint } : {}),
      })),
    });
    return;
  }
  if (options.diff) {
    for (const change of outcome.results.flatMap((r) => r.changes)) if (change.diff) printLine(change.diff);
  }
  if (options.check) {
    for (const r of outcome.results) {
      for (const c of r.changes) printLine(`would change  ${r.id}: ${c.summary}`);
    }
  }
  const failed = outcome.results.find((r) => r.status === 'failed');
  if (failed) {
    host.log.error(`${failed.title} failed: ${failed.error}`);
    if (failed.hint) host.log.error(`  -> ${failed.hint}`);
  }
  printLine(`${options.check ? 'plan' : 'recap'}: ${recap} (${(ms / 1000).toFixed(1)} s)`);
}
