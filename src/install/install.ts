import { resolveDeploymentInputs } from '../answers/index.js';
import { parseAllowList, type Cidr } from '../channel/allow.js';
import { UsageError } from '../errors.js';
import { createHost, type Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { printJson, printLine } from '../output.js';
import { formatRecap, pipelineJson, planLines } from '../pipeline/report.js';
import { runPipeline, type PipelineOutcome, type Renderer } from '../pipeline/runner.js';
import type { InstallOptions, Step } from '../pipeline/step.js';
import { installSteps } from '../steps/index.js';
import { DEFAULT_LOCK_TIMEOUT_SECONDS, type InstallRequest } from './request.js';

export type { InstallRequest } from './request.js';

export interface InstallRun {
  host: Host;
  request: InstallRequest;
  /** Extra steps or a replacement list (restore reuses the pipeline). */
  steps?: Step[];
}

export async function runInstall(request: InstallRequest): Promise<void> {
  const host = createHost({ verbose: request.verbose, quiet: request.json });
  if (request.resetClean) {
    const { runResetClean } = await import('./reset.js');
    return runResetClean(host, request);
  }
  await installWithLock({ host, request });
}

/**
 * Resolves the answers (prompting first, before any task list), then runs the
 * pipeline under the install lock. Bad answers end the run before anything is written.
 */
export async function installWithLock({ host, request, steps }: InstallRun): Promise<PipelineOutcome> {
  const catalog = Boolean(request.catalog);
  const interactive = !catalog && !request.nonInteractive && !request.json && Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const lockTimeout = request.lockTimeout ?? DEFAULT_LOCK_TIMEOUT_SECONDS;
  if (!Number.isFinite(lockTimeout) || lockTimeout < 0) throw new UsageError('--lock-timeout must be a number of seconds >= 0');

  // Every question is asked before the task list starts.
  const prompter = interactive ? await (await import('../answers/index.js')).terminalPrompter() : undefined;
  const { profile, components, answers } = await resolveDeploymentInputs(host, request.answers, { prompter });

  const channelAllow = parseChannelAllow(request);
  const options: InstallOptions = {
    check: Boolean(request.check),
    diff: Boolean(request.diff),
    channel: catalog || Boolean(request.channel),
    catalog,
    rotateChannelSecrets: Boolean(request.rotateChannelSecrets),
    lockTimeoutMs: lockTimeout * 1000,
    channelAllow,
  };

  const lock = await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    if (!options.check) {
      await host.files.ensureDir(LAYOUT.logDir, 0o700);
      host.log.attachFile(host.paths.real(LAYOUT.installLog));
      host.log.debug(`install started: customer ${answers.customerSlug}, model ${answers.modelId}, channel ${options.channel}`);
    }
    const renderer: Renderer = request.json || catalog ? 'silent' : process.stderr.isTTY ? 'default' : 'simple';
    const started = Date.now();
    const outcome = await runPipeline(steps ?? installSteps(), { host, profile, answers, components, options }, renderer);
    report(host, request, outcome, options, Date.now() - started);
    if (outcome.failed) process.exitCode = 1;
    return outcome;
  } finally {
    await lock.release();
    host.log.close();
  }
}

/** --channel-allow, checked before anything runs (exit 2 naming the flag). */
function parseChannelAllow(request: InstallRequest): Cidr[] | undefined {
  if (request.channelAllow === undefined) return undefined;
  if (!request.catalog && !request.channel) throw new UsageError('--channel-allow applies to the channel endpoint', 'add --channel (or --catalog)');
  try {
    return parseAllowList(String(request.channelAllow));
  } catch (error) {
    throw new UsageError(`--channel-allow: ${(error as Error).message}`, "give addresses or CIDR blocks separated by commas (198.51.100.7,203.0.113.0/24), or 'any'");
  }
}

function report(host: Host, request: InstallRequest, outcome: PipelineOutcome, options: InstallOptions, ms: number): void {
  const recap = formatRecap(outcome.recap);
  host.log.debug(`install finished: ${recap} in ${ms} ms`);
  if (request.json || request.catalog) {
    printJson(pipelineJson(outcome, options.check ? 'check' : 'apply', ms));
    return;
  }
  for (const line of planLines(outcome, options)) printLine(line);
  const failed = outcome.results.find((r) => r.status === 'failed');
  if (failed) {
    host.log.error(`${failed.title} failed: ${failed.error}`);
    if (failed.hint) host.log.error(`  -> ${failed.hint}`);
  }
  printLine(`${options.check ? 'plan' : 'recap'}: ${recap} (${(ms / 1000).toFixed(1)} s)`);
}
