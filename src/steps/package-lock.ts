import { DeployError } from '../errors.js';
import type { LockHolder } from '../host/locks.js';
import type { Host } from '../host/index.js';
import type { Step } from '../pipeline/step.js';

/** The locks dpkg and apt take (fcntl), in the order apt takes them. */
export const PACKAGE_LOCKS = [
  '/var/lib/dpkg/lock-frontend',
  '/var/lib/dpkg/lock',
  '/var/lib/apt/lists/lock',
  '/var/cache/apt/archives/lock',
];
const POLL_MS = 1000;

export async function packageLockHolders(host: Host): Promise<Array<LockHolder & { lock: string }>> {
  const all = await Promise.all(PACKAGE_LOCKS.map(async (lock) => (await host.locks.holders(lock)).map((h) => ({ ...h, lock }))));
  return all.flat();
}

/**
 * The cloud-init process this run is part of (the catalog deploy from a user-data
 * runcmd), or undefined. `cloud-init status --wait` from in there would wait for itself.
 */
export async function cloudInitAncestor(host: Host): Promise<{ pid: number; command: string } | undefined> {
  for (const { pid, argv } of await host.proc.ancestors()) {
    // "/usr/bin/cloud-init modules --mode=final", or its interpreter first: "/usr/bin/python3 /usr/bin/cloud-init ..."
    if (argv.slice(0, 2).some((arg) => arg.split('/').pop() === 'cloud-init')) return { pid, command: argv.join(' ').slice(0, 120) };
  }
  return undefined;
}

export function describeHolders(holders: Array<LockHolder & { lock: string }>): string {
  return holders.map((h) => `pid ${h.pid} (${h.command ?? 'unknown'}) on ${h.lock}`).join(', ');
}

/**
 * Waits (up to --lock-timeout, 5 minutes by default) for cloud-init and for whoever
 * holds the dpkg/apt locks (unattended-upgrades, usually), saying who it is. Run by
 * cloud-init itself (the catalog deploy's runcmd), it waits for the locks only: cloud-init
 * finishes after us. On timeout nothing has been installed yet, so the portal can simply
 * retry later.
 */
export const packageLockStep: Step = {
  id: 'package-lock',
  title: 'Wait for the package manager lock',
  needs: ['preflight'],
  // Nothing is installed while another installer runs: a timeout leaves the server as it was.
  barrier: true,
  speculative: false,
  async check(ctx) {
    const { host, options } = ctx;
    const deadline = Date.now() + options.lockTimeoutMs;
    const inside = await cloudInitAncestor(host);
    if (inside) {
      host.log.info(`running inside cloud-init (pid ${inside.pid}: ${inside.command}): not waiting for cloud-init to finish, only for the package locks`);
    } else if (await host.exec.which('cloud-init')) {
      ctx.progress('waiting for cloud-init to finish');
      const result = await host.exec.run('cloud-init', ['status', '--wait'], {
        allowFailure: true,
        timeoutMs: Math.max(1000, deadline - Date.now()),
      });
      if (result.failed && result.exitCode !== 2 && Date.now() >= deadline) {
        throw new DeployError('cloud-init is still running after the lock wait', 'retry the deploy in a few minutes');
      }
    }
    let waited = false;
    for (;;) {
      const holders = await packageLockHolders(host);
      if (holders.length === 0) break;
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (left <= 0) {
        throw new DeployError(
          `the package manager is still locked after ${Math.round(options.lockTimeoutMs / 1000)} s: ${describeHolders(holders)}`,
          'nothing was installed; retry the deploy later (cloud-init or unattended-upgrades usually finish within minutes)',
        );
      }
      if (!waited) host.log.info(`waiting for the package manager lock: ${describeHolders(holders)}`);
      waited = true;
      ctx.progress(`package manager locked by ${describeHolders(holders)}; waiting (${left} s left)`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(50, deadline - Date.now()))));
    }
    if (waited) host.log.info('package manager lock released');
    return { changes: [] };
  },
  async apply() {},
};
