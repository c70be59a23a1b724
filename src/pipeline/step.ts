import type { Host } from '../host/index.js';
import type { ServiceProfile } from '../profile.js';
import type { Answers } from '../answers/index.js';
import type { Components } from '../components.js';
import type { Cidr } from '../channel/allow.js';
import type { Written } from './writes.js';

/** Something a step would change, shown by --check and --diff. */
export interface Change {
  target: string;
  summary: string;
  /** Unified diff for file changes (secrets masked). */
  diff?: string;
}

/** What several steps touch that must not change under two of them at once: a step names the ones it takes in `needs`. */
export const LOCKS = {
  /** dpkg's lock: one apt-get at a time. */
  apt: 'apt',
  /** nginx's configuration and service: one change, `nginx -t` and reload at a time. */
  nginx: 'nginx',
  /** systemd's system units: unit files, daemon-reload, enable and restart. */
  systemUnits: 'system-units',
  /** root's user manager: our user units, daemon-reload, enable and restart. */
  userUnits: 'user-units',
} as const;

/** Effects a change has on later steps (Ansible's handlers): the pipeline collects them. */
export type Notify = 'gateway-restart' | 'gateway-reload-units' | 'nginx-reload' | 'qmd-restart';

export type StepStatus = 'ok' | 'changed' | 'skipped' | 'failed';

export interface InstallOptions {
  check: boolean;
  diff: boolean;
  channel: boolean;
  /** The channel is on only because this server has it already (a re-run without --channel): "kept". */
  channelKept?: boolean;
  catalog: boolean;
  rotateChannelSecrets: boolean;
  lockTimeoutMs: number;
  /** --channel-allow, parsed (empty: any address); undefined: keep the list in channel.env. */
  channelAllow?: Cidr[];
}

export interface InstallContext {
  host: Host;
  profile: ServiceProfile;
  answers: Answers;
  components: Components;
  options: InstallOptions;
  /** Notifications raised by steps that already ran in this pipeline. */
  notified: ReadonlySet<Notify>;
  /** Progress text for long work (shown in the task list). */
  progress(text: string): void;
}

export interface Plan {
  changes: Change[];
  notify?: Notify[];
  /** Opaque data from check() for apply(), so apply does not recompute. */
  data?: unknown;
}

/**
 * One install step, in the shape of an Ansible module: check what is there, say
 * what would change, apply it, verify it.
 */
export interface Step {
  id: string;
  title: string;
  /**
   * What it writes (pipeline/writes.ts): its files and folders, each with its mode, how
   * doctor checks it, whether doctor may write it again, and what a backup, a reset and
   * uninstall do with it. Everything it writes must be here (test/pipeline/writes.test.ts).
   */
  writes?: readonly Written[];
  /**
   * What must be done before it runs (pipeline/needs.ts): the steps whose result it
   * uses or whose notifications it acts on, by id (a skipped step counts as done), and
   * the locks it takes (LOCKS), which no two steps hold at once. The runner starts a step
   * once these have ended and are free (schedule.ts), several at once; `--serial` runs
   * them in their listed order, which these declarations must agree with.
   */
  needs?: readonly string[];
  /**
   * Every later step waits for this one, directly or through its needs (needs.ts checks
   * it): it decides whether the install may change anything at all (preflight: the
   * server can take it; package-lock: no other installer runs), so a refusal or a lock
   * timeout leaves the server as it was.
   */
  barrier?: true;
  /**
   * Off the path to the gateway's first health check (needs.test.ts holds it): when
   * steps run at once, its commands run at a lower CPU priority (BACKGROUND_NICENESS,
   * host/exec.ts runLowered), so on a small server the steps the gateway waits for get
   * the cores first. Its own duration grows; the install's does not, as long as it
   * stays off that path.
   */
  background?: true;
  /**
   * false when check() waits or polls (lock wait, health probe): it then runs only in
   * its turn. Other checks are read-only and start together (see runPipeline).
   */
  speculative?: false;
  /** A reason to skip this step in this run, or undefined to run it. */
  skip?(ctx: InstallContext): string | undefined | Promise<string | undefined>;
  /** Reads the machine; returns no changes when everything is already right. */
  check(ctx: InstallContext): Promise<Plan>;
  apply(ctx: InstallContext, plan: Plan): Promise<void>;
  /** Throws when the applied state is not right after all. */
  verify?(ctx: InstallContext): Promise<void>;
}

export interface StepResult {
  id: string;
  title: string;
  status: StepStatus;
  changes: Change[];
  reason?: string;
  error?: string;
  hint?: string;
  /** endMs - startMs (a skipped step's too, though it has neither). */
  durationMs: number;
  /**
   * When the step's turn began and its result was recorded, in ms since the pipeline
   * started (runPipeline; a monotonic clock). Set for a step that ran (ok, changed,
   * failed), not for a skipped one; a step the run did not reach has no result at all.
   */
  startMs?: number;
  endMs?: number;
}
