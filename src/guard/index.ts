import { DeployError, UsageError } from '../errors.js';
import { readOnlyHost, type Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { loadProfile } from '../profile.js';
import { parseRuntimeConfig, serializeRuntimeConfig } from '../config/runtime-config.js';
import { readStoredAnswers } from '../answers/index.js';
import { RUNTIME_CONFIG, validateCandidate } from '../steps/runtime-config.js';
import { octal, writeRecorded } from '../pipeline/files.js';
import { applyRuntimeSecrets, planRuntimeSecrets } from '../steps/runtime-secrets.js';
import { gatewayStartRefusal, type StartRefusal } from '../steps/health.js';
import { channelFilesPlan, type ChannelFilesPlan } from './channel.js';
import { enforceConfinement } from './confinement.js';
import { appendGuardLog, syslog } from './log.js';
import { enforceManagedAgent } from './managed.js';
import { enforceRouting, type Restoration } from './routing.js';

export type { Restoration } from './routing.js';

export interface GuardOptions {
  /** Say what would be restored; write, restart and log nothing. */
  check: boolean;
}

export interface GuardOutcome {
  check: boolean;
  restorations: Restoration[];
  /** The gateway was restarted (only when a file it reads changed, or it had stopped itself on a busy start). */
  restarted: boolean;
}

/** Syslog tag of every guard line (journalctl -t service-guard). */
export const GUARD_TAG = 'service-guard';

/**
 * The hourly gateway enforcer. One at a time (a run lock); reads openclaw.json and
 * the stored answers, computes the routing the deployment wants (enforceRouting), the
 * managed agent settings (enforceManagedAgent) and the tool policy (enforceConfinement),
 * and only when something differs: validates the candidate with OpenClaw's own
 * validator, replaces the file atomically, restores the gateway's secret source, the
 * channel drop-in and channel.env mode, restarts the gateway once, and logs every restoration (secrets
 * masked) to syslog and guard.log. A gateway that stopped itself at a start on a busy
 * server (steps/health.ts startRefusal) is started again: systemd does not. A correct
 * server is left untouched: no write, no restart; one "ok" line goes to syslog so doctor
 * can tell when the guard last ran.
 */
export async function runGuard(given: Host, options: GuardOptions): Promise<GuardOutcome> {
  // --check runs on the read-only host: any write would be a bug, and throws.
  const host = options.check ? readOnlyHost(given) : given;
  let inputs: GuardInputs;
  try {
    inputs = await readInputs(host);
  } catch (error) {
    // Refused (bad answers.json): nothing is written, not even the lock or guard.log;
    // the journal still gets the line, so doctor sees the guard failing.
    if (!options.check) await syslog(host, GUARD_TAG, [host.redactor.redact(`failed: ${(error as Error).message}`)]).catch(() => undefined);
    throw error;
  }
  if (!options.check) await waitForInstall(host);
  const lock = options.check ? undefined : await host.locks.acquire(LAYOUT.guardLock, 'guard');
  try {
    const outcome = await enforce(host, inputs, options);
    if (!options.check) await record(host, outcome);
    return outcome;
  } catch (error) {
    if (!options.check) await recordFailure(host, error);
    throw error;
  } finally {
    await lock?.release();
  }
}

/** How long the guard waits for an install, backup, reset, restore or upgrade to finish. */
export const GUARD_INSTALL_WAIT_MS = 15 * 60_000;

/**
 * An install, backup or upgrade holds the install lock while it has the gateway
 * stopped (a consistent backup) or is replacing files: the guard waits for it, so it
 * never restarts the gateway under a backup or validates a half-written config.
 */
async function waitForInstall(host: Host): Promise<void> {
  const holder = await host.locks.waitFree(LAYOUT.installLock, 0);
  if (!holder) return;
  host.log.info(`waiting for the running install/backup (pid ${holder.pid}${holder.command ? `, ${holder.command}` : ''}) to finish`);
  const still = await host.locks.waitFree(LAYOUT.installLock, GUARD_INSTALL_WAIT_MS);
  if (still) {
    throw new DeployError(
      `an install or backup (pid ${still.pid}) still holds ${LAYOUT.installLock} after ${GUARD_INSTALL_WAIT_MS / 60_000} minutes`,
      'the guard runs again at the next hour; see what that process is doing',
    );
  }
}

interface GuardInputs {
  answers: NonNullable<Awaited<ReturnType<typeof readStoredAnswers>>>;
  profile: ReturnType<typeof loadProfile>;
}

async function readInputs(host: Host): Promise<GuardInputs> {
  const answers = await readStoredAnswers(host);
  if (!answers) {
    // Nothing deployed here (yet): a refusal, not a failure.
    throw new UsageError(`no stored answers at ${LAYOUT.answersFile}: the guard does not know the service API key and model`, 'run `service-deploy install` on this server first');
  }
  host.redactor.add(answers.apiKey, answers.mcpToken);
  return { answers, profile: loadProfile(host.env, answers.serviceOverrides) };
}

async function enforce(host: Host, { answers, profile }: GuardInputs, options: GuardOptions): Promise<GuardOutcome> {
  const [text, configInfo] = await Promise.all([host.files.read(LAYOUT.runtimeConfig), host.files.stat(LAYOUT.runtimeConfig)]);
  if (text === undefined) {
    throw new DeployError(`${LAYOUT.runtimeConfig} is missing`, 'run `service-deploy install` to write it again');
  }
  let current;
  try {
    current = await parseRuntimeConfig(text);
  } catch (error) {
    throw new DeployError(`${LAYOUT.runtimeConfig} is not valid JSON5: ${(error as Error).message}`, 'fix or move the file aside, then run `service-deploy install`; the guard does not overwrite a file it cannot read');
  }
  const routed = enforceRouting(current, answers, profile);
  const managed = enforceManagedAgent(routed.config, answers, profile);
  const confined = enforceConfinement(managed.config);
  const config = confined.config;
  const restorations = [...routed.restorations, ...managed.restorations, ...confined.restorations];
  const configChanged = restorations.length > 0;
  const configMode = configInfo !== undefined && configInfo.mode !== RUNTIME_CONFIG.mode;
  if (configMode) restorations.push({ what: `${LAYOUT.runtimeConfig} mode`, before: octal(configInfo.mode), after: octal(RUNTIME_CONFIG.mode) });

  const channel: ChannelFilesPlan = await channelFilesPlan(host);
  restorations.push(...channel.restorations);

  // The secret source the config's references resolve from, as the answers say.
  const secrets = await planRuntimeSecrets(host, answers);
  for (const change of secrets.changes) restorations.push({ what: change.target, before: change.summary.replace(`${change.target}: `, ''), after: 'restored from the stored answers' });

  // A gateway that stopped itself at a start on a busy server (a reboot under load) stays
  // down: systemd does not restart its exit 78. The guard starts it again (hourly at worst).
  const parked = await parkedByBusyStart(host);
  if (parked) restorations.push({ what: LAYOUT.gatewayUnit, before: `stopped itself at its start, the server too busy (${parked.reason})`, after: 'started again' });

  const restart = configChanged || channel.dropIn !== undefined || secrets.restart || parked !== undefined;
  if (options.check || restorations.length === 0) return { check: options.check, restorations, restarted: false };

  if (configChanged) {
    const content = serializeRuntimeConfig(config);
    // Never write a config the runtime would reject: the gateway would not come back.
    await validateCandidate(host, content);
    await writeRecorded(host, RUNTIME_CONFIG, content);
  } else if (configMode) {
    await host.files.chmod(LAYOUT.runtimeConfig, RUNTIME_CONFIG.mode);
  }
  await channel.apply();
  if (secrets.changes.length > 0 || secrets.dirMode) await applyRuntimeSecrets(host, secrets);
  if (channel.dropIn !== undefined) await host.services.daemonReload('user');
  if (parked) await host.services.resetFailed('user', LAYOUT.gatewayUnit);
  if (restart) await host.services.restart('user', LAYOUT.gatewayUnit);
  return { check: false, restorations, restarted: restart };
}

/** The gateway's exit-78 refusal when it is the busy-server one (steps/health.ts), else undefined. */
async function parkedByBusyStart(host: Host): Promise<StartRefusal | undefined> {
  const refusal = await gatewayStartRefusal(host);
  return refusal?.transient ? refusal : undefined;
}

export function formatRestoration(r: Restoration): string {
  return `restored ${r.what}: ${r.before} -> ${r.after}`;
}

async function record(host: Host, outcome: GuardOutcome): Promise<void> {
  if (outcome.restorations.length === 0) {
    await syslog(host, GUARD_TAG, ['ok: nothing to restore']);
    return;
  }
  const lines = [
    ...outcome.restorations.map(formatRestoration),
    `done: ${outcome.restorations.length} restored${outcome.restarted ? `, ${LAYOUT.gatewayUnit} restarted` : ''}`,
  ].map((line) => host.redactor.redact(line));
  await appendGuardLog(host, lines);
  await syslog(host, GUARD_TAG, lines);
}

async function recordFailure(host: Host, error: unknown): Promise<void> {
  const message = host.redactor.redact(`failed: ${error instanceof Error ? error.message : String(error)}`);
  // Logging must not hide the real error.
  await appendGuardLog(host, [message]).catch(() => undefined);
  await syslog(host, GUARD_TAG, [message]).catch(() => undefined);
}
