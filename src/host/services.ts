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

  private systemctl(scope: ServiceScope, args: string[], allowFailure = false, timeoutMs = 120_000): Promise<RunResult> {
    const scoped = scope === 'user' ? ['--user', ...args] : args;
    return this.exec.run('systemctl', scoped, {
      env: scope === 'user' ? userManagerEnv() : undefined,
      allowFailure,
      timeoutMs,
    });
  }

  async isActive(scope: ServiceScope, unit: string): Promise<boolean> {
    return (await this.systemctl(scope, ['is-active', '--quiet', unit], true)).exitCode === 0;
  }

  async isEnabled(scope: ServiceScope, unit: string): Promise<boolean> {
    return (await this.systemctl(scope, ['is-enabled', '--quiet', unit], true)).exitCode === 0;
  }

  /** MainPID of a running unit, or undefined. */
  async mainPid(scope: ServiceScope, unit: string): Promise<number | undefined> {
    const result = await this.systemctl(scope, ['show', '--property=MainPID', '--value', unit], true);
    const pid = Number(result.stdout.trim());
    return result.exitCode === 0 && pid > 0 ? pid : undefined;
  }

  async daemonReload(scope: ServiceScope): Promise<void> {
    await this.systemctl(scope, ['daemon-reload']);
  }

  async restart(scope: ServiceScope, unit: string): Promise<void> {
    await this.systemctl(scope, ['restart', unit]);
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

export function userManagerEnv(): Record<string, string> {
  return {
    XDG_RUNTIME_DIR: ROOT_USER_RUNTIME_DIR,
    DBUS_SESSION_BUS_ADDRESS: `unix:path=${ROOT_USER_RUNTIME_DIR}/bus`,
  };
}
