import { NETWORK_ENV } from './exec.js';
import type { Host } from './index.js';

const APT_ENV = { DEBIAN_FRONTEND: 'noninteractive', NEEDRESTART_MODE: 'a' };

/** Packages of `names` that dpkg does not have installed. */
export async function missingPackages(host: Host, names: readonly string[]): Promise<string[]> {
  const installed = await installedOf(host, names);
  return names.filter((name) => !installed.has(name));
}

/** Package names asked about in this turn of the event loop, per host, and who waits for the answer. */
const asked = new WeakMap<Host, { names: Set<string>; answer: Promise<Set<string>> }>();

/**
 * Which of `names` dpkg has installed. The questions asked in one turn of the event
 * loop (the install's checks start together: system packages, the browser) are
 * answered by one `dpkg-query` of all their names.
 */
function installedOf(host: Host, names: readonly string[]): Promise<Set<string>> {
  let batch = asked.get(host);
  if (!batch) {
    const all = new Set<string>();
    const answer = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      asked.delete(host);
      const result = await host.exec.run('dpkg-query', ['-W', '-f=${Package} ${Status}\\n', ...all], { allowFailure: true });
      return new Set(
        result.stdout
          .split('\n')
          .filter((line) => line.endsWith(' install ok installed'))
          .map((line) => line.split(' ')[0]!),
      );
    });
    batch = { names: all, answer };
    asked.set(host, batch);
  }
  for (const name of names) batch.names.add(name);
  return batch.answer;
}

/** Every package dpkg has installed (names without architecture). */
export async function installedPackages(host: Host): Promise<Set<string>> {
  const result = await host.exec.run('dpkg-query', ['-W', '-f=${Package} ${Status}\\n'], { allowFailure: true });
  return new Set(
    result.stdout
      .split('\n')
      .filter((line) => line.endsWith(' install ok installed'))
      .map((line) => line.split(' ')[0]!),
  );
}

/**
 * apt-get install with apt's own lock wait (DPkg::Lock::Timeout) as a second line of
 * defence behind the package-lock step. Signatures are checked by apt itself.
 * Returns the packages this run added (those asked for and their dependencies), which
 * the install records so that `uninstall` removes exactly those. `progress` hears what
 * apt is doing: its machine-readable status (APT::Status-Fd, whatever -qq says) turned
 * into `apt-get install: 43% Unpacking nginx`.
 */
export async function aptInstall(host: Host, names: readonly string[], lockTimeoutSeconds: number, progress?: (text: string) => void): Promise<string[]> {
  const lock = [`-o`, `DPkg::Lock::Timeout=${Math.max(1, Math.round(lockTimeoutSeconds))}`];
  const before = await installedPackages(host);
  const run = (action: string, args: string[], timeoutMs: number) => {
    progress?.(`apt-get ${action}`);
    return host.exec.run('apt-get', [...lock, ...(progress ? ['-o', 'APT::Status-Fd=1'] : []), ...args], {
      env: APT_ENV,
      inherit: NETWORK_ENV,
      timeoutMs,
      onOutputLine:
        progress &&
        ((line) => {
          const status = aptStatus(line);
          if (status) progress(`apt-get ${action}: ${status}`);
        }),
    });
  };
  await run('update', ['update', '-qq'], 15 * 60_000);
  await run('install', ['install', '-y', '-qq', '--no-install-recommends', ...names], 30 * 60_000);
  const after = await installedPackages(host);
  return [...after].filter((p) => !before.has(p)).sort();
}

/**
 * One line of apt's Status-Fd output as progress: `pmstatus:nginx:42.8571:Unpacking nginx`
 * -> `43% Unpacking nginx` (dlstatus: the downloads); other lines -> undefined.
 */
export function aptStatus(line: string): string | undefined {
  const match = /^(?:dl|pm)status:[^:]*:(\d+(?:\.\d+)?):(.*)$/.exec(line.trim());
  return match ? `${Math.round(Number(match[1]))}% ${match[2]!.trim()}` : undefined;
}

/** What `apt-get purge NAMES` would remove (apt's own simulation): the names and anything depending on them. */
export async function purgeWouldRemove(host: Host, names: readonly string[]): Promise<string[]> {
  const result = await host.exec.run('apt-get', ['-s', 'purge', ...names], { env: APT_ENV, allowFailure: true, timeoutMs: 5 * 60_000 });
  if (result.exitCode !== 0) throw new Error(`apt-get -s purge failed: ${(result.stderr || result.stdout).trim().split('\n').at(-1)}`);
  return [...new Set([...result.stdout.matchAll(/^(?:Purg|Remv) (\S+)/gm)].map((m) => m[1]!.replace(/:[a-z0-9]+$/, '')))].sort();
}

export async function aptPurge(host: Host, names: readonly string[], lockTimeoutSeconds = 300): Promise<void> {
  if (names.length === 0) return;
  await host.exec.run('apt-get', ['-o', `DPkg::Lock::Timeout=${Math.max(1, Math.round(lockTimeoutSeconds))}`, 'purge', '-y', '-qq', ...names], {
    env: APT_ENV,
    timeoutMs: 30 * 60_000,
  });
}
