import os from 'node:os';
import type { Exec, RunResult } from './exec.js';

/** root's user manager; the gateway is a user service of root (linger enabled). */
export const ROOT_USER_RUNTIME_DIR = '/run/user/0';

export type ServiceScope = 'system' | 'user';

/**
 * How long `systemctl stop` may take: the gateway's own stop budget is 330 s
 * (TimeoutStopSec, its drain of a running agent turn), plus a margin.
 */
export const STOP_TIMEOUT_MS = 360_000;

/**
 * systemd services through systemctl. User services of root need
 * XDG_RUNTIME_DIR=/run/user/0 (and DBUS address) to reach root's user manager,
 * which is what people forget when they run `systemctl --user` over ssh.
 */
export class Services {
  constructor(private readonly exec: Exec) {}

  /** Units asked about in this turn of the event loop, per scope: one `systemctl show` answers them all. */
  private pending: Partial<Record<ServiceScope, Map<string, Waiting[]>>> = {};

  private systemctl(scope: ServiceScope, args: string[], allowFailure = false, timeoutMs = 120_000): Promise<RunResult> {
    const scoped = scope === 'user' ? ['--user', ...args] : args;
    return this.exec.run('systemctl', scoped, {
      env: scope === 'user' ? userManagerEnv() : undefined,
      allowFailure,
      timeoutMs,
    });
  }

  /** What `systemctl is-active` says: the unit is active (or reloading, refreshing). */
  async isActive(scope: ServiceScope, unit: string): Promise<boolean> {
    return (await this.state(scope, unit)).active;
  }

  /** What `systemctl is-enabled` says: enabled, or static, indirect... (see ENABLED_STATES). */
  async isEnabled(scope: ServiceScope, unit: string): Promise<boolean> {
    return (await this.state(scope, unit)).enabled;
  }

  /** MainPID of a running unit, or undefined. */
  async mainPid(scope: ServiceScope, unit: string): Promise<number | undefined> {
    return (await this.state(scope, unit)).mainPid;
  }

  /**
   * A unit's state, read afresh: the questions asked in one turn of the event loop (the
   * install's and doctor's checks start together) are answered by one `systemctl show`
   * of their units instead of one process per question.
   */
  private state(scope: ServiceScope, unit: string): Promise<UnitState> {
    return new Promise((resolve, reject) => {
      let batch = this.pending[scope];
      if (!batch) {
        const units = new Map<string, Waiting[]>();
        batch = this.pending[scope] = units;
        setImmediate(() => {
          delete this.pending[scope];
          this.show(scope, [...units.keys()]).then(
            (states) => {
              for (const [name, waiting] of units) for (const { resolve } of waiting) resolve(states.get(name) ?? STOPPED);
            },
            (error: unknown) => {
              for (const waiting of units.values()) for (const { reject } of waiting) reject(error);
            },
          );
        });
      }
      const waiting = batch.get(unit) ?? [];
      waiting.push({ resolve, reject });
      batch.set(unit, waiting);
    });
  }

  /** `systemctl show` of `units`, one block each, in their order; a unit it does not answer for is stopped. */
  private async show(scope: ServiceScope, units: string[]): Promise<Map<string, UnitState>> {
    const states = new Map<string, UnitState>();
    const result = await this.systemctl(scope, ['show', `--property=${SHOWN.join(',')}`, ...units], true).catch(() => undefined);
    // No manager to ask (a user manager not running): nothing is active or enabled.
    if (!result || result.exitCode !== 0) return states;
    const blocks = result.stdout.split(/\n\s*\n/).filter((block) => block.trim() !== '');
    if (blocks.length !== units.length) {
      // Not one block per unit (never seen): ask each unit on its own.
      if (units.length > 1) for (const unit of units) for (const [name, state] of await this.show(scope, [unit])) states.set(name, state);
      return states;
    }
    units.forEach((unit, i) => {
      const props = showProperties(blocks[i]!);
      const pid = Number(props.get('MainPID'));
      states.set(unit, {
        active: ACTIVE_STATES.includes(props.get('ActiveState') ?? ''),
        enabled: ENABLED_STATES.includes(props.get('UnitFileState') ?? ''),
        mainPid: pid > 0 ? pid : undefined,
        resources: { memoryMax: props.get('MemoryMax'), memoryHigh: props.get('MemoryHigh'), memoryCurrent: props.get('MemoryCurrent'), controlGroup: props.get('ControlGroup') },
      });
    });
    return states;
  }

  /**
   * A unit's main process as the manager sees it, asked on its own: undefined when the
   * manager did not answer (a user manager busy with a daemon-reload on a loaded server
   * can miss systemctl's timeout), which a caller waiting for a start must not read as
   * "not running". NRestarts counts systemd's automatic restarts (Restart=), so a crash
   * between two polls is seen even when the new process is already up.
   */
  async mainProcess(scope: ServiceScope, unit: string): Promise<MainProcess | undefined> {
    const result = await this.systemctl(scope, ['show', `--property=${PROCESS_SHOWN.join(',')}`, unit], true, 30_000).catch(() => undefined);
    if (!result || result.exitCode !== 0) return undefined;
    const props = showProperties(result.stdout);
    if (!props.has('ActiveState') || !props.has('MainPID')) return undefined;
    const pid = Number(props.get('MainPID'));
    const restarts = Number(props.get('NRestarts'));
    return {
      pid: pid > 0 ? pid : undefined,
      activeState: props.get('ActiveState')!,
      subState: props.get('SubState') ?? '',
      restarts: Number.isInteger(restarts) ? restarts : undefined,
      result: props.get('Result') ?? '',
      lastExit: describeExit(props.get('ExecMainCode'), props.get('ExecMainStatus')),
    };
  }

  /**
   * A unit's last `lines` journal lines as printed (`-o cat`), its manager's lines about it
   * included ("Started ..."), raw: callers mask secrets before showing any. Empty when the
   * journal cannot be read. A user unit is asked for with --user-unit, not `--user -u`:
   * `--user` opens only per-user journal files, which a volatile journal (/run/log/journal)
   * never splits off, so it would find nothing there.
   */
  async journalTail(scope: ServiceScope, unit: string, lines: number): Promise<string[]> {
    const scoped = scope === 'user' ? [`--user-unit=${unit}`] : ['-u', unit];
    const result = await this.exec
      .run('journalctl', [...scoped, '-n', String(lines), '--no-pager', '-o', 'cat'], { allowFailure: true, timeoutMs: 30_000 })
      .catch(() => undefined);
    if (!result || result.exitCode !== 0) return [];
    return result.stdout.split('\n').filter((line) => line.trim() !== '');
  }

  /**
   * What the manager applies to a unit's resources (the MemoryMax it computed from a
   * percentage, its cgroup), raw; asked in the same batched `systemctl show` as the state.
   */
  async resources(scope: ServiceScope, unit: string): Promise<UnitResources> {
    return (await this.state(scope, unit)).resources;
  }

  async daemonReload(scope: ServiceScope): Promise<void> {
    await this.systemctl(scope, ['daemon-reload']);
  }

  async restart(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['restart', unit]);
  }

  /**
   * Forgets a unit's failures, its start-limit count included: after a crash loop (a
   * broken build restarted until StartLimitBurst) systemd refuses every start of the unit
   * until this, or until its StartLimitIntervalSec has passed.
   */
  async resetFailed(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['reset-failed', unit], true);
  }

  async reload(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['reload', unit]);
  }

  async enable(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['enable', unit]);
  }

  async enableNow(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['enable', '--now', unit]);
  }

  async stop(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['stop', unit], true, STOP_TIMEOUT_MS);
  }

  async start(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['start', unit]);
  }

  async disable(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['disable', '--now', unit], true);
  }
}

/** As `systemctl show` prints them: bytes, `infinity`, `[not set]`; undefined when not reported. */
export interface UnitResources {
  memoryMax?: string;
  memoryHigh?: string;
  memoryCurrent?: string;
  controlGroup?: string;
}

/** A unit's main process (Services.mainProcess). */
export interface MainProcess {
  pid?: number;
  /** ActiveState/SubState: active/running, activating/auto-restart (exited, restarting after RestartSec), failed/failed... */
  activeState: string;
  subState: string;
  /** systemd's automatic restarts of the unit since it was last started by hand (NRestarts; systemd 235+). */
  restarts?: number;
  /** success, exit-code, signal, oom-kill, timeout... of the unit's last run. */
  result: string;
  /** How the last main process ended ("exit status 1", "signal KILL"), when one did. */
  lastExit?: string;
}

/** `systemctl show`'s Key=value lines (one unit's block) as a map. */
function showProperties(block: string): Map<string, string> {
  const lines = block.split('\n').filter((line) => line.includes('='));
  return new Map(lines.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const));
}

const PROCESS_SHOWN = ['ActiveState', 'SubState', 'MainPID', 'NRestarts', 'Result', 'ExecMainCode', 'ExecMainStatus'];

/** ExecMainCode is the siginfo code: 1 exited, 2 killed, 3 dumped core (0: still running or never ran). */
function describeExit(code: string | undefined, status: string | undefined): string | undefined {
  if (code === '1') return `exit status ${status}`;
  if (code === '2' || code === '3') return `signal ${signalName(Number(status))}${code === '3' ? ' (core dumped)' : ''}`;
  return undefined;
}

function signalName(signal: number): string {
  const name = Object.entries(os.constants.signals).find(([, number]) => number === signal)?.[0];
  return name ? name.replace(/^SIG/, '') : String(signal);
}

interface UnitState {
  active: boolean;
  enabled: boolean;
  mainPid?: number;
  resources: UnitResources;
}
interface Waiting {
  resolve(state: UnitState): void;
  reject(error: unknown): void;
}
const STOPPED: UnitState = { active: false, enabled: false, resources: {} };
const SHOWN = ['ActiveState', 'UnitFileState', 'MainPID', 'MemoryMax', 'MemoryHigh', 'MemoryCurrent', 'ControlGroup'];
/** The ActiveStates `systemctl is-active` succeeds for. */
const ACTIVE_STATES = ['active', 'reloading', 'refreshing'];
/** The UnitFileStates `systemctl is-enabled` succeeds for. */
const ENABLED_STATES = ['enabled', 'enabled-runtime', 'static', 'alias', 'indirect', 'generated'];

export function userManagerEnv(): Record<string, string> {
  return {
    XDG_RUNTIME_DIR: ROOT_USER_RUNTIME_DIR,
    DBUS_SESSION_BUS_ADDRESS: `unix:path=${ROOT_USER_RUNTIME_DIR}/bus`,
  };
}
