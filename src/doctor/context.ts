import { parseEnvFile } from '../channel/env-file.js';
import { loadComponents, type Components } from '../components.js';
import type { StoredAnswers } from '../answers/index.js';
import { parseRuntimeConfig, type RuntimeConfig } from '../config/runtime-config.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { loadProfile, type ServiceProfile } from '../profile.js';
import { readStoredAnswers } from '../answers/index.js';
import { UsageError } from '../errors.js';
import { installedFilesProblem } from '../pipeline/manifest.js';
import { nodeFiles, openclawFiles } from '../runtime/openclaw.js';
import { meshStatus, type MeshStatus } from '../steps/mesh-client.js';
import { planFile } from '../pipeline/files.js';
import type { RunResult } from '../host/exec.js';
import { gatewayUnitFile } from '../steps/gateway-service.js';
import * as probes from './probes.js';
import type { ServiceScope, UnitResources } from '../host/services.js';
import { missingPackages } from '../host/apt.js';
import { readOs } from '../host/os.js';
import { browserFor } from '../steps/browser.js';
import { FIREWALLD_UNIT } from '../steps/channel-firewall.js';
import { auditManifest, type FileIssue, type ManifestAudit } from './audit.js';
import { OWN_FILES } from './own-files.js';
import { runtimeNodeVersion } from '../ops/versions.js';

export interface UnitState {
  active: boolean;
  enabled: boolean;
  mainPid?: number;
  resources: UnitResources;
}

export interface Listener {
  address: string;
  port: number;
  process?: string;
}

export interface AnswersRead {
  answers?: StoredAnswers;
  /** Why answers.json could not be used (not a regular file, not valid): the reader's refusal. */
  problem?: string;
}

export interface ConfigRead {
  config?: RuntimeConfig;
  /** Why the file could not be read (missing, not JSON5). */
  problem?: string;
}

/**
 * What the checks share. Facts several checks need (the config, the gateway's pid,
 * listening sockets, the mesh status) are read once, on first use, and shared by
 * the checks running in parallel; `refresh()` forgets them for the re-check after --fix.
 */
export class DoctorContext {
  readonly profile: ServiceProfile;
  readonly components: Components;
  private cache = new Map<string, Promise<unknown>>();
  /** Set by fix actions so a later action does not restart the gateway twice. */
  gatewayRestarted = false;
  /** Set by fix actions that wrote the nginx site and restarted nginx (after nginx -t). */
  nginxRestarted = false;
  /** Set by fix actions that changed what the gateway reads: the gateway-restart action then runs last. */
  gatewayRestartWanted = false;

  /**
   * `recorded`: the service profile overrides the install stored on this server;
   * `answers`: answers.json as the caller just read it (readAnswers), not read again.
   */
  constructor(readonly host: Host, recorded: Record<string, string> = {}, answers?: AnswersRead) {
    this.profile = loadProfile(host.env, recorded);
    this.components = loadComponents(host.env);
    if (answers) this.cache.set('answers', Promise.resolve(this.registered(answers)));
  }

  refresh(): void {
    this.cache.clear();
  }

  private once<T>(key: string, load: () => Promise<T>): Promise<T> {
    let hit = this.cache.get(key) as Promise<T> | undefined;
    if (!hit) {
      hit = load();
      this.cache.set(key, hit);
    }
    return hit;
  }

  /**
   * answers.json through the install's strict reader. A file it refuses (a symbolic
   * link, not valid) is a finding for the checks that need it, never a doctor crash.
   */
  answersRead(): Promise<AnswersRead> {
    return this.once('answers', async () => this.registered(await readAnswers(this.host)));
  }

  /** The answers' secrets registered with the redactor. */
  private registered(read: AnswersRead): AnswersRead {
    if (read.answers) this.host.redactor.add(read.answers.apiKey, read.answers.mcpToken);
    return read;
  }

  async answers(): Promise<StoredAnswers | undefined> {
    return (await this.answersRead()).answers;
  }

  /**
   * Why the OpenClaw CLI cannot start (a file it runs from is missing, Node is gone),
   * or undefined. agent-runtime and node-runtime name the cause; checks that run the
   * CLI do not add a finding of their own for it.
   */
  openclawCliProblem(): Promise<string | undefined> {
    return this.once('openclaw-cli', () => installedFilesProblem(this.host, [...openclawFiles(this.components.openclaw.package).required, ...nodeFiles().required], []));
  }

  /**
   * The runtime's Node version (node-runtime and the report's versions): the install's
   * stamp while the binary is that very file, else `node --version`, once per pass.
   */
  nodeVersion(): Promise<{ version?: string; run?: RunResult }> {
    return this.once('node-version', () => runtimeNodeVersion(this.host));
  }

  runtimeConfig(): Promise<ConfigRead> {
    return this.once('config', async () => {
      const text = await this.host.files.read(LAYOUT.runtimeConfig);
      if (text === undefined) return { problem: `${LAYOUT.runtimeConfig} is missing` };
      try {
        return { config: await parseRuntimeConfig(text) };
      } catch (error) {
        return { problem: `${LAYOUT.runtimeConfig} is not valid JSON5: ${(error as Error).message}` };
      }
    });
  }

  /**
   * A unit's state, asked once per pass. The units asked in one turn of the event loop
   * are answered by one `systemctl show` per scope (host/services.ts).
   */
  unit(scope: ServiceScope, name: string): Promise<UnitState> {
    return this.once(`unit:${scope}:${name}`, async () => {
      const { services } = this.host;
      const [active, enabled, mainPid, resources] = await Promise.all([services.isActive(scope, name), services.isEnabled(scope, name), services.mainPid(scope, name), services.resources(scope, name)]);
      return { active, enabled, mainPid, resources };
    });
  }

  async gatewayActive(): Promise<boolean> {
    return (await this.unit('user', LAYOUT.gatewayUnit)).active;
  }

  async gatewayPid(): Promise<number | undefined> {
    return (await this.unit('user', LAYOUT.gatewayUnit)).mainPid;
  }

  /** The system packages the install puts in and the browser it chose for this OS, and which of them dpkg lacks. */
  packages(): Promise<{ wanted: string[]; missing: string[] }> {
    return this.once('packages', async () => {
      const os = await readOs(this.host.files);
      const browser = browserFor(os, this.components);
      // The install skips the browser where none is known for the OS, or Chrome on arm64.
      const browserSkipped = !browser || (browser.aptRepoUrl !== undefined && process.arch !== 'x64');
      const wanted = [...this.components.systemPackages, ...(browserSkipped ? [] : [browser.package])];
      return { wanted, missing: await missingPackages(this.host, wanted) };
    });
  }

  /** channel.env as KEY -> value (secrets registered with the redactor), or undefined when absent. */
  channelEnv(): Promise<Record<string, string> | undefined> {
    return this.once('channel-env', async () => {
      const text = await this.host.files.read(LAYOUT.channelEnv);
      if (text === undefined) return undefined;
      const env = parseEnvFile(text);
      this.host.redactor.add(env.SERVICE_CHANNEL_TOKEN, env.SERVICE_CHANNEL_KNOCK, env.SERVICE_CHANNEL_EDGE);
      return env;
    });
  }

  /**
   * Whether this server has the channel endpoint: channel.env, the nginx site, or the
   * service-channel plugin enabled in the config. Channel checks skip otherwise.
   */
  channelConfigured(): Promise<boolean> {
    return this.once('channel', async () => {
      if ((await this.channelEnv()) !== undefined) return true;
      if (await this.host.files.exists(LAYOUT.nginxSite)) return true;
      const { config } = await this.runtimeConfig();
      const entry = (config as any)?.plugins?.entries?.['service-channel'];
      return Boolean(entry && entry.enabled !== false);
    });
  }

  /** `openclaw config validate` (config-valid). */
  configValidation(): Promise<RunResult> {
    return this.once('config-validate', () => probes.configValidation(this.host));
  }

  /** `openclaw secrets audit --check` (secrets). */
  secretsAudit(): Promise<RunResult> {
    return this.once('secrets-audit', () => probes.secretsAudit(this.host));
  }

  /** `systemd-analyze security` of the gateway unit (gateway-sandbox). */
  sandboxRating(): Promise<RunResult> {
    return this.once('sandbox-rating', () => probes.sandboxRating(this.host));
  }

  /** `nginx -t` (nginx). */
  nginxTest(): Promise<RunResult> {
    return this.once('nginx-test', () => probes.nginxTest(this.host));
  }

  /** The guard's last run in the journal (guard-cron). */
  lastGuardRun(): Promise<probes.GuardRun | undefined> {
    return this.once('guard-run', () => probes.lastGuardRun(this.host));
  }

  /** Pending device approvals (devices). */
  pendingDevices(): Promise<probes.PendingDevice[]> {
    return this.once('devices', () => probes.pendingDevices(this.host));
  }

  /**
   * Starts, before the checks' own work, the commands the selected checks will run, so
   * that they run while that work is done instead of after it: the slow ones (the
   * OpenClaw CLI, systemd-analyze, nginx -t, journalctl), then the unit states and
   * the packages the checks ask about (one `systemctl show` per scope, one
   * `dpkg-query`, as when the checks ask them together), then, once the gateway is
   * known to run, its device list. Each runs once per pass either way, and only where
   * its check's cheap preconditions on disk hold (the file it judges exists, the CLI is
   * installed); where a later precondition fails, the result is not used. Secrets are
   * registered with the redactor first (the answers, channel.env).
   */
  async startProbes(ids: ReadonlySet<string>): Promise<void> {
    const { files } = this.host;
    const [{ answers }, , config, cli, channel, timer] = await Promise.all([
      this.answersRead(),
      this.channelEnv(),
      files.exists(LAYOUT.runtimeConfig),
      files.exists(LAYOUT.openclawBin),
      this.channelConfigured(),
      files.exists(LAYOUT.backupTimerFile),
    ]);
    const started: Array<Promise<unknown>> = [];
    const units: Array<[ServiceScope, string, boolean]> = [
      ['user', LAYOUT.gatewayUnit, ['gateway-service', 'gateway-memory', 'channel-drop-in', 'devices'].some((id) => ids.has(id))],
      ['user', LAYOUT.qmdRefreshTimer, ids.has('memory')],
      ['user', LAYOUT.qmdMcpService, ids.has('memory')],
      ['system', 'cron', ids.has('guard-cron')],
      ['system', LAYOUT.channelFirewallUnit, ids.has('channel-limits') && channel],
      ['system', FIREWALLD_UNIT, ids.has('channel-port') && channel && (await this.host.exec.which('firewall-cmd')) !== undefined],
      ['system', LAYOUT.backupTimer, ids.has('backups') && timer],
    ];
    for (const [scope, name, wanted] of units) if (wanted) started.push(this.unit(scope, name));
    if (ids.has('packages')) started.push(this.packages());
    // One turn of the event loop: the batched systemctl and dpkg questions start now (first:
    // the device list waits for the gateway's state).
    await new Promise<void>((resolve) => setImmediate(resolve));
    // Then the slowest (the OpenClaw CLI starts a Node runtime).
    if (ids.has('secrets') && answers && config && cli) started.push(this.secretsAudit());
    if (ids.has('config-valid') && config && cli) started.push(this.configValidation());
    if (ids.has('gateway-sandbox') && (await files.read(LAYOUT.gatewayUnitFile)) === gatewayUnitFile().content) started.push(this.sandboxRating());
    if (ids.has('nginx') && channel && (await files.exists(LAYOUT.nginxSite))) started.push(this.nginxTest());
    if (ids.has('guard-cron') && answers) started.push(this.lastGuardRun());
    // Their checks handle failures; one that no check reads is not an unhandled rejection.
    for (const p of started) p.catch(() => undefined);
    // The device list as soon as the gateway is known to run (when the systemctl answer is read).
    if (ids.has('devices') && cli) void this.gatewayActive().then((active) => (active ? this.pendingDevices() : undefined)).catch(() => undefined);
  }

  /** TCP listeners (`ss -Hltnp`), parsed. */
  listeners(): Promise<Listener[]> {
    return this.once('listeners', async () => {
      const result = await this.host.exec.run('ss', ['-Hltnp'], { allowFailure: true, timeoutMs: 10_000 });
      return parseListeners(result.stdout);
    });
  }

  mesh(): Promise<MeshStatus> {
    return this.once('mesh', () => meshStatus(this.host));
  }

  /** The machine compared with the install manifest (files check, and fixability for others). */
  audit(): Promise<ManifestAudit> {
    return this.once('audit', () => auditManifest(this));
  }

  /** The audit's issues for these paths. */
  async issuesFor(...paths: string[]): Promise<FileIssue[]> {
    return (await this.audit()).issues.filter((i) => paths.includes(i.path));
  }

  /**
   * Our own files (own-files.ts) the manifest does not record (a server installed before
   * it existed) that differ from what the install writes: the files action writes them.
   */
  unrecordedOwnDrift(): Promise<string[]> {
    return this.once('own-drift', async () => {
      const { read } = await this.audit();
      const channel = await this.channelConfigured();
      const drift = await Promise.all(
        OWN_FILES.filter((own) => !read.entries?.has(own.path) && (channel || !own.rewrite.channel)).map(async (own) => {
          const desired = await own.rewrite.from(this);
          return desired && (await planFile(this.host, desired)) ? own.path : undefined;
        }),
      );
      return drift.filter((p): p is string => p !== undefined);
    });
  }

  /**
   * Whether the files action repairs what a check found wrong with these paths: the
   * manifest records each as wrong and every one of those issues has a safe repair, or
   * it is one of our own files, unrecorded, that the action writes again.
   */
  async repairedByFiles(...paths: string[]): Promise<boolean> {
    const [issues, unrecorded] = await Promise.all([this.issuesFor(...paths), this.unrecordedOwnDrift()]);
    return paths.every((p) => issues.some((i) => i.path === p) || unrecorded.includes(p)) && issues.every((i) => i.repair !== undefined);
  }
}

/** answers.json through the install's strict reader; a file it refuses is a problem, not an error. */
export async function readAnswers(host: Host): Promise<AnswersRead> {
  try {
    return { answers: await readStoredAnswers(host) };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return { problem: error.message };
  }
}

/** `ss -Hltnp` lines: "LISTEN 0 511 127.0.0.1:18789 0.0.0.0:* users:(("node",pid=1,fd=3))". */
export function parseListeners(text: string): Listener[] {
  const out: Listener[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 4) continue;
    const local = fields[3]!;
    const colon = local.lastIndexOf(':');
    const port = Number(local.slice(colon + 1));
    if (colon < 0 || !Number.isInteger(port)) continue;
    const address = local.slice(0, colon).replace(/^\[|\]$/g, '').replace(/%.*$/, '');
    out.push({ address, port, process: /users:\(\("([^"]+)"/.exec(line)?.[1] });
  }
  return out;
}

export function isLoopbackAddress(address: string): boolean {
  return /^127\./.test(address) || address === '::1' || address === 'localhost' || address === '::ffff:127.0.0.1';
}
