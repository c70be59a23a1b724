import { NETWORK_ENV } from './exec.js';
import type { Host } from './index.js';

const APT_ENV = { DEBIAN_FRONTEND: 'noninteractive', NEEDRESTART_MODE: 'a' };

/** Packages of `names` that dpkg does not have installed. */
export async function missingPackages(host: Host, names: readonly string[]): Promise<string[]> {
  const result = await host.exec.run('dpkg-query', ['-W', '-f=${Package} ${Status}\\n', ...names], { allowFailure: true });
  const installed = new Set(
    result.stdout
      .split('\n')
      .filter((line) => line.endsWith(' install ok installed'))
      .map((line) => line.split(' ')[0]),
  );
  return names.filter((name) => !installed.has(name));
}

/**
 * apt-get install with apt's own lock wait (DPkg::Lock::Timeout) as a second line of
 * defence behind the package-lock step. Signatures are checked by apt itself.
 */
export async function aptInstall(host: Host, names: readonly string[], lockTimeoutSeconds: number): Promise<void> {
  const lock = [`-o`, `DPkg::Lock::Timeout=${Math.max(1, Math.round(lockTimeoutSeconds))}`];
  await host.exec.run('apt-get', [...lock, 'update', '-qq'], { env: APT_ENV, inherit: NETWORK_ENV, timeoutMs: 15 * 60_000 });
  await host.exec.run('apt-get', [...lock, 'install', '-y', '-qq', '--no-install-recommends', ...names], {
    env: APT_ENV,
    inherit: NETWORK_ENV,
    timeoutMs: 30 * 60_000,
  });
}
