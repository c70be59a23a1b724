// uninstall on the real server (issue 21): `dpkg -l` and /etc before the first install
// compared with the same after `service-deploy uninstall --yes`, at the very end of the
// scenario (after reset, restore and every other step).
//
// Packages: every package the system had before is still installed, and the only ones
// left from the install are those uninstall lists as left (with why). /etc: byte for
// byte (type, mode, owner, SHA-256 or link target of every entry), except what Debian's
// own package scripts keep after a purge on purpose (ETC_KEPT_BY_PACKAGING, each with why).
import { expect } from 'vitest';
import { log, seconds, type World } from './harness.js';

export interface SystemSnapshot {
  packages: Map<string, string>;
  etc: Map<string, string>;
}

/**
 * Left in /etc after a purge by Debian's packaging itself, not by us: system users and
 * groups a package's postinst adds (Debian policy 9.2: never removed, files may still be
 * owned by them) with the shadow tools' backup copies, and the linker cache ldconfig
 * rewrites on every library install or removal.
 */
const ETC_KEPT_BY_PACKAGING: Array<{ path: RegExp; why: string }> = [
  { path: /^\/etc\/(passwd|group|shadow|gshadow)-?$/, why: 'system users/groups added by package scripts stay after purge (Debian policy)' },
  { path: /^\/etc\/(subuid|subgid)-?$/, why: 'sub-ids of those system users' },
  { path: /^\/etc\/ld\.so\.cache$/, why: 'rebuilt by ldconfig on every library change' },
];

/** Package -> dpkg status (installed, config-files...), and /etc path -> "type mode owner content". */
export async function systemSnapshot(world: World): Promise<SystemSnapshot> {
  const c = world.container;
  const dpkg = await c.ok(`dpkg-query -W -f='\${db:Status-Abbrev} \${Package}\\n'`, { timeoutMs: 60_000 });
  const packages = new Map<string, string>();
  for (const line of dpkg.split('\n')) {
    const m = /^(\S+)\s+(\S+)$/.exec(line.trim());
    if (m && !m[1]!.startsWith('un')) packages.set(m[2]!, m[1]!);
  }
  const meta = await c.ok(`find /etc -xdev -printf '%y %m %u:%g %p\\t%l\\n' | sort`, { timeoutMs: 60_000 });
  const sums = await c.ok(`find /etc -xdev -type f -print0 | xargs -0 -r sha256sum`, { timeoutMs: 120_000 });
  const hash = new Map<string, string>();
  for (const line of sums.split('\n')) {
    const m = /^([0-9a-f]{64})\s+(.+)$/.exec(line);
    if (m) hash.set(m[2]!, m[1]!);
  }
  const etc = new Map<string, string>();
  for (const line of meta.split('\n')) {
    const m = /^(\S) (\d+) (\S+) (.+?)\t(.*)$/.exec(line);
    if (!m) continue;
    const [, type, mode, owner, p, target] = m;
    etc.set(p!, `${type} ${mode} ${owner} ${type === 'f' ? hash.get(p!) : type === 'l' ? `-> ${target}` : ''}`.trim());
  }
  return { packages, etc };
}

export async function uninstallLeavesNothing(world: World, before: SystemSnapshot): Promise<Record<string, unknown>> {
  const r = await world.deploy('uninstall --yes --json', { timeoutMs: 15 * 60_000 });
  expect(r.exitCode, `uninstall exit ${r.exitCode}\n${r.stdout.slice(-3000)}\n${world.masked(r.stderr).slice(-3000)}`).toBe(0);
  const out = r.json;
  expect(out.backup).toMatch(/^\/tmp\/openclaw-backup-\d{8}-\d{6}(-\d+)?\.tar\.gz$/);
  expect(out.backupCopy).toMatch(/^\/var\/backups\/service-deploy\/openclaw-backup-/);
  const left: Array<{ what: string; why: string }> = out.left;
  const after = await systemSnapshot(world);

  // Packages: nothing the system had is gone; nothing of ours stays unless listed as left.
  const leftPackages = new Set(left.filter((l) => l.what.startsWith('packages ')).flatMap((l) => l.what.slice('packages '.length).split(' ')));
  const removedOfTheSystem = [...before.packages.keys()].filter((p) => !after.packages.has(p));
  const added = [...after.packages.keys()].filter((p) => !before.packages.has(p));
  expect(removedOfTheSystem, 'packages the system had before the install were removed').toEqual([]);
  expect(added.filter((p) => !leftPackages.has(p)), `packages the install added are still there (purged: ${out.purged.length})`).toEqual([]);
  const changedState = [...before.packages].filter(([p, s]) => after.packages.get(p) !== s).map(([p, s]) => `${p}: ${s} -> ${after.packages.get(p)}`);
  expect(changedState, 'dpkg states changed').toEqual([]);

  // /etc, entry by entry.
  const diffs: string[] = [];
  for (const p of new Set([...before.etc.keys(), ...after.etc.keys()])) {
    const [b, a] = [before.etc.get(p), after.etc.get(p)];
    if (b !== a) diffs.push(`${p}: ${b ?? '(absent)'} -> ${a ?? '(absent)'}`);
  }
  const kept = diffs.filter((d) => ETC_KEPT_BY_PACKAGING.some((k) => k.path.test(d.slice(0, d.indexOf(': ')))));
  const unexplained = diffs.filter((d) => !kept.includes(d));
  expect(unexplained, '/etc differs from before the install').toEqual([]);

  // Nothing of ours running or listening.
  const running = await world.container.sh(`ss -Hltn | grep -E ':(18789|18790)\\s' ; test -e /usr/local/bin/service-deploy && echo 'binary still there'; test -e /root/.openclaw && echo '/root/.openclaw still there'; test -e /opt/service-deploy && echo '/opt/service-deploy still there'; true`);
  expect(running.stdout.trim()).toBe('');
  log(`uninstall: ${seconds(r.ms)}, removed ${out.removed.length} paths, purged ${out.purged.length} packages; /etc kept by packaging: ${kept.length}`);
  return { wallMs: r.ms, removed: out.removed.length, purged: out.purged.length, left, etcKeptByPackaging: kept };
}
