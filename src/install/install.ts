import { resolveDeploymentInputs, type Answers } from '../answers/index.js';
import { parseAllowList, type Cidr } from '../channel/allow.js';
import { UsageError } from '../errors.js';
import { createHost, readOnlyHost, type Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { printError, printLine } from '../output.js';
import { emitJson, installOutput } from '../json/index.js';
import { formatRecap, pipelineJson, planLines } from '../pipeline/report.js';
import { openInstallLog } from '../pipeline/install-log.js';
import { runPipeline, type PipelineOutcome } from '../pipeline/runner.js';
import { DEFAULT_CONCURRENCY } from '../pipeline/schedule.js';
import type { InstallOptions, Step } from '../pipeline/step.js';
import { installSteps } from '../steps/index.js';
import { preflightStep } from '../steps/preflight.js';
import { dropUndeclaredEntries } from './footprint.js';
import { sweepLeftovers } from './leftovers.js';
import { pendingUpgrade } from './pending-upgrade.js';
import { DEFAULT_LOCK_TIMEOUT_SECONDS, type InstallRequest } from './request.js';
import { nextSteps, pinChangeLines, type ChannelPinReport } from './summary.js';
import { channelHandoff, channelPin } from '../ops/channel.js';

export type { InstallRequest } from './request.js';

export interface InstallRun {
  host: Host;
  request: InstallRequest;
  /** Extra steps or a replacement list (restore reuses the pipeline). */
  steps?: Step[];
  /** The caller holds the install lock already (an upgrade: backup, switch and install under one lock). */
  lockHeld?: boolean;
  /** The caller reports the outcome (an upgrade prints one report, one JSON document). */
  quiet?: boolean;
}

export async function runInstall(request: InstallRequest): Promise<void> {
  const host = createHost({ verbose: request.verbose, quiet: request.json });
  if (request.resetClean) {
    const { runResetClean } = await import('./reset.js');
    return runResetClean(host, request);
  }
  if (!request.check && !request.diff) {
    // Only an upgrade loads the upgrade's code (backups, archives: tar, zlib).
    const versions = await pendingUpgrade(host);
    if (versions) return (await import('./upgrade.js')).runUpgrade(host, request, versions, installWithLock);
  }
  await installWithLock({ host, request });
}

/** The longest --lock-timeout that makes sense: a day. */
export const MAX_LOCK_TIMEOUT_SECONDS = 86_400;

/** --lock-timeout as given (text from the command line): seconds, refused when empty, negative, not a number or absurd. */
export function lockTimeoutSeconds(value: number | string | undefined): number {
  if (value === undefined) return DEFAULT_LOCK_TIMEOUT_SECONDS;
  const text = String(value).trim();
  const refuse = (why: string): never => {
    throw new UsageError(`--lock-timeout ${JSON.stringify(String(value)).slice(0, 40)}: ${why}`, `give a number of seconds from 0 to ${MAX_LOCK_TIMEOUT_SECONDS} (default ${DEFAULT_LOCK_TIMEOUT_SECONDS}); nothing was changed`);
  };
  if (text === '') refuse('is empty');
  if (!/^\d+(\.\d+)?$/.test(text)) refuse(text.startsWith('-') ? 'is negative' : 'is not a number');
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds > MAX_LOCK_TIMEOUT_SECONDS) refuse(`is more than ${MAX_LOCK_TIMEOUT_SECONDS} seconds (a day)`);
  return seconds;
}

/**
 * Resolves the answers (prompting first, before any task list), then runs the
 * pipeline under the install lock. Bad answers end the run before anything is written.
 * --check and --diff run on a read-only host (host/read-only.ts): no lock, no log
 * file, and any attempt to change the server is a bug that throws.
 */
export async function installWithLock({ host: given, request, steps, lockHeld, quiet }: InstallRun): Promise<PipelineOutcome> {
  const catalog = Boolean(request.catalog);
  const check = Boolean(request.check || request.diff);
  const host = check ? readOnlyHost(given) : given;
  const interactive = !catalog && !request.nonInteractive && !request.json && Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const lockTimeout = lockTimeoutSeconds(request.lockTimeout);

  // Every question is asked before the task list starts; --check and --diff review a run
  // with the answers it would use: only what has no stored value or default is asked.
  const channelKept = await keepsChannel(host, request);
  refuseChannelFlagsWithoutChannel(request, channelKept);
  const channelAllow = parseChannelAllow(request);
  const prompter = interactive ? await (await import('../answers/index.js')).terminalPrompter() : undefined;
  const { profile, components, answers } = await resolveDeploymentInputs(host, request.answers, { prompter, askOnlyMissing: check });

  const options: InstallOptions = {
    check,
    diff: Boolean(request.diff),
    channel: catalog || Boolean(request.channel) || channelKept,
    channelKept,
    catalog,
    rotateChannelSecrets: Boolean(request.rotateChannelSecrets),
    lockTimeoutMs: lockTimeout * 1000,
    channelAllow,
  };

  const lock = check || lockHeld ? undefined : await host.locks.acquire(LAYOUT.installLock, 'install');
  try {
    if (!check) {
      await sweepLeftovers(host);
      await openInstallLog(host);
      await dropUndeclaredEntries(host);
      host.log.debug(`install started: customer ${answers.customerSlug}, model ${answers.modelId}, channel ${options.channelKept ? 'kept' : options.channel}`);
    }
    const started = Date.now();
    const pinBefore = options.channel && !check ? await channelPin(host) : undefined;
    // Step lines on stderr (renderer.ts): live on a terminal, one plain line per event
    // otherwise (the catalog deploy's cloud-init log); none with --json.
    const outcome = await runPipeline(steps ?? installSteps(), { host, profile, answers, components, options }, {
      silent: Boolean(request.json),
      concurrency: request.serial ? 1 : DEFAULT_CONCURRENCY,
    });
    const pin = options.channel && !check ? await pinReport(host, pinBefore) : undefined;
    if (!quiet) await report(host, request, outcome, options, answers, Date.now() - started, pin);
    if (outcome.failed) process.exitCode = failureExitCode(outcome);
    return outcome;
  } finally {
    await lock?.release();
    host.log.close();
  }
}

/**
 * A re-run without --channel (or --catalog) on a server that has the channel endpoint
 * keeps it: its steps converge as in the run that set it up, and the run says
 * "channel: kept". Only an explicit --no-channel leaves it untouched, unconverged.
 */
export const CHANNEL_KEPT = 'channel: kept (this server has the channel endpoint: a re-run without --channel keeps it and converges it)';

async function keepsChannel(host: Host, request: InstallRequest): Promise<boolean> {
  if (request.catalog || request.channel !== undefined) return false;
  return host.files.exists(LAYOUT.channelEnv);
}

/**
 * --channel-allow and --channel-host set up the channel endpoint: refused (exit 2, before
 * any question) on a run that does not configure it: neither --channel nor --catalog, and
 * no channel endpoint on this server to keep (or --no-channel).
 */
function refuseChannelFlagsWithoutChannel(request: InstallRequest, channelKept: boolean): void {
  if (request.catalog || request.channel || channelKept) return;
  const flag = request.channelAllow !== undefined ? '--channel-allow' : request.answers.channelHost?.length ? '--channel-host' : undefined;
  if (!flag) return;
  throw new UsageError(
    `${flag} applies to the channel endpoint, which this run does not configure${request.channel === false ? ' (--no-channel)' : ''}`,
    'add --channel (or --catalog); nothing was changed',
  );
}

/**
 * The channel's certificate pin after the run, and whether the run changed it: a new
 * certificate (a new --channel-host, a new address, expiry) is a new pin, which the
 * portal must be given or it refuses the server.
 */
async function pinReport(host: Host, before: string | undefined): Promise<ChannelPinReport | undefined> {
  const pin = await channelPin(host);
  if (!pin) return undefined;
  const url = await channelHandoff(host).then((h) => h.url, () => undefined);
  return { pin, ...(url ? { url } : {}), changed: before !== undefined && before !== pin, ...(before !== undefined && before !== pin ? { previousPin: before } : {}) };
}

/** --channel-allow, checked before anything runs (exit 2 naming the flag). */
function parseChannelAllow(request: InstallRequest): Cidr[] | undefined {
  if (request.channelAllow === undefined) return undefined;
  try {
    return parseAllowList(String(request.channelAllow));
  } catch (error) {
    throw new UsageError(`--channel-allow: ${(error as Error).message}`, "give addresses or CIDR blocks separated by commas (198.51.100.7,203.0.113.0/24), or 'any'");
  }
}

/** preflight changes nothing by contract: its failure is a refusal (exit 2); any other step's is 1. */
function failureExitCode(outcome: PipelineOutcome): number {
  return outcome.results.some((r) => r.status === 'failed' && r.id === preflightStep.id) ? 2 : 1;
}

async function report(host: Host, request: InstallRequest, outcome: PipelineOutcome, options: InstallOptions, answers: Answers, ms: number, pin: ChannelPinReport | undefined): Promise<void> {
  const recap = formatRecap(outcome.recap);
  host.log.debug(`install finished: ${recap} in ${ms} ms`);
  if (request.json || request.catalog) {
    const failed = outcome.results.find((r) => r.status === 'failed');
    const exitCode = failureExitCode(outcome);
    emitJson(installOutput, {
      ...pipelineJson(outcome, options.check ? 'check' : 'apply', ms),
      ...(pin ? { channel: { ...(pin.url ? { url: pin.url } : {}), pin: pin.pin, pinChanged: pin.changed, ...(pin.previousPin ? { previousPin: pin.previousPin } : {}) } } : {}),
      ...(failed ? { error: { code: exitCode === 2 ? 'refused' : 'step-failed', message: `${failed.title} failed: ${failed.error ?? 'unknown error'}`, hint: failed.hint ?? null, exitCode } } : {}),
    });
    // The catalog deploy's stderr is its cloud-init log: a failure says there what to do.
    if (!request.json && failed) for (const line of (await nextSteps(host, outcome, options, answers, pin)).stderr) printError(line);
    else if (!request.json && pin) for (const line of pinChangeLines(pin)) printError(line);
    return;
  }
  for (const line of planLines(outcome, options)) printLine(line);
  // --check lists every step it could not plan on stdout (planLines).
  const failed = options.check ? undefined : outcome.results.find((r) => r.status === 'failed');
  if (failed) host.log.debug(`${failed.title} failed: ${failed.error}${failed.hint ? ` (-> ${failed.hint})` : ''}`);
  if (options.channelKept) printLine(CHANNEL_KEPT);
  printLine(`${options.check ? 'plan' : 'recap'}: ${recap} (${(ms / 1000).toFixed(1)} s)`);
  // What to do next: where the agent is and how to look after it, or after a failure what to do about it.
  const next = await nextSteps(host, outcome, options, answers, pin);
  for (const line of next.stdout) printLine(line);
  for (const line of next.stderr) printError(line);
}
