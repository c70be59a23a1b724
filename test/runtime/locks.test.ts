import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCKED_COMPONENTS, LOCK_ARCHES, installOptions, lockIndex, shippedLock, type LockArch, type LockedComponent } from '../../src/runtime/locks.js';
import { expectedPackages, packageNameAt } from '../../src/runtime/npm-lock.js';
import { loadComponents } from '../../src/components.js';
import { REPO } from '../helpers/binary.js';
import { NPM_VERSION } from '../e2e/artifacts.js';

const components = loadComponents({});
const LOCKS = path.join(REPO, 'templates', 'locks');
/** The registry npm is configured with here (read, never written down: the locks must not name one either). */
const REGISTRY = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();

/** What each tree's project must depend on: the pin, and for QMD the CPU build of the architecture. */
function pinnedDependencies(component: LockedComponent, arch: LockArch): Record<string, string> {
  const pin = components[component];
  const deps: Record<string, string> = { [pin.package]: pin.version };
  if (component === 'qmd') {
    for (const spec of components.qmd.cpuBuild[arch]) deps[spec.slice(0, spec.lastIndexOf('@'))] = spec.slice(spec.lastIndexOf('@') + 1);
  }
  return deps;
}

const locked = LOCKED_COMPONENTS.flatMap((component) => LOCK_ARCHES.map((arch) => ({ component, arch, shipped: shippedLock(component, arch) }))).filter((l) => l.shipped);

describe('the shipped npm locks (templates/locks/, npm run locks)', () => {
  it('the index names every runtime tree at its pinned version; only lossless-claw, absent from the registry here, may be unlocked, and it says why', () => {
    const index = lockIndex();
    for (const component of LOCKED_COMPONENTS) {
      expect(index.trees[component], component).toMatchObject({ package: components[component].package, version: components[component].version });
      expect(Boolean(index.trees[component].folders) !== Boolean(index.trees[component].unavailable), `${component}: folders or a reason, not both`).toBe(true);
    }
    expect(index.trees.openclaw.folders).toBeDefined();
    expect(index.trees.qmd.folders).toBeDefined();
    if (!index.trees.losslessClaw.folders) expect(index.trees.losslessClaw.unavailable).toMatch(/not on the registry/);
    // The npm that made them is the one the servers' Node bundles (the e2e's Node tarball carries it).
    expect(index.npm).toBe(NPM_VERSION);
    // What the install leaves out of each tree today: QMD's GPU prebuilds, lossless-claw's OpenClaw peer.
    expect(index.trees.qmd.omit).toEqual(['optional']);
    expect(index.trees.losslessClaw.omit).toEqual(['peer']);
    expect(index.trees.openclaw.omit).toEqual([]);
  });

  it('every folder under templates/locks/ is one the index names (no stale lock)', () => {
    const named = new Set(Object.values(lockIndex().trees).flatMap((t) => (t.folders ? Object.values(t.folders) : [])));
    const present = fs.readdirSync(LOCKS, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(present.sort()).toEqual([...named].sort());
  });

  it.each(locked.map((l) => [`${l.shipped!.folder} (linux-${l.arch})`, l] as const))('%s: the project depends on exactly the pins, the lock resolves them, the pinned package at the top', (_, { component, arch, shipped }) => {
    const manifest = JSON.parse(shipped!.manifestText);
    expect(manifest.dependencies).toEqual(pinnedDependencies(component, arch));
    expect(manifest.private).toBe(true);
    expect(shipped!.lock.packages['']?.dependencies).toEqual(manifest.dependencies);
    for (const [name, version] of Object.entries(manifest.dependencies as Record<string, string>)) {
      expect(shipped!.lock.packages[`node_modules/${name}`]?.version, name).toBe(version);
    }
    expect(shipped!.lock.packages[`node_modules/${components[component].package}`]!.version).toBe(components[component].version);
  });

  it.each(locked.map((l) => [`${l.shipped!.folder} (linux-${l.arch})`, l] as const))('%s: every package has a sha512 integrity and comes from the configured registry (no address recorded, no git, file or URL source)', (_, { shipped }) => {
    const entries = Object.entries(shipped!.lock.packages).filter(([p]) => p !== '');
    expect(entries.length).toBeGreaterThan(100);
    const problems: string[] = [];
    for (const [p, entry] of entries) {
      if (entry.link) problems.push(`${p}: a link`);
      if (!/^\d+\.\d+\.\d+(-[\w.-]+)?(\+[\w.-]+)?$/.test(entry.version ?? '')) problems.push(`${p}: version ${entry.version}`);
      // Bundled packages come inside their parent's tarball, whose integrity covers them.
      if (entry.inBundle) continue;
      if (!/^sha512-[A-Za-z0-9+/]{86}==$/.test(entry.integrity ?? '')) problems.push(`${p}: integrity ${entry.integrity}`);
      if (entry.resolved !== undefined && !entry.resolved.startsWith(REGISTRY)) problems.push(`${p}: resolved outside the configured registry`);
    }
    expect(problems).toEqual([]);
    // No registry address in the shipped files at all: a server's npm takes its own registry or mirror.
    expect(shipped!.lockText).not.toMatch(/"resolved"/);
    expect(shipped!.lockText).not.toContain(REGISTRY);
  });

  it('QMD: one lock per architecture, the CPU build of each a regular dependency there; on the server only that CPU build is installed, no GPU prebuild', () => {
    const index = lockIndex();
    expect(index.trees.qmd.folders).toEqual({ x64: 'qmd-linux-x64', arm64: 'qmd-linux-arm64' });
    for (const arch of LOCK_ARCHES) {
      const shipped = shippedLock('qmd', arch)!;
      const other = LOCK_ARCHES.find((a) => a !== arch)!;
      const names = (specs: string[]) => specs.map((s) => s.slice(0, s.lastIndexOf('@')));
      for (const name of names(components.qmd.cpuBuild[arch])) expect(shipped.lock.packages[`node_modules/${name}`]?.optional, `${arch}: ${name}`).toBeUndefined();
      // npm writes every platform's package into a lock: the other architecture's CPU build is there, optional.
      for (const name of names(components.qmd.cpuBuild[other])) expect(shipped.lock.packages[`node_modules/${name}`]?.optional, `${arch}: ${name}`).toBe(true);
      const installed = [...expectedPackages(shipped.lock, installOptions(shipped)).entries()].map(([p, e]) => packageNameAt(p, e));
      expect(installed).toEqual(expect.arrayContaining([components.qmd.package, ...names(components.qmd.cpuBuild[arch]), 'better-sqlite3', 'node-llama-cpp']));
      expect(installed.filter((n) => /cuda|vulkan|metal|^@node-llama-cpp\/(?!linux-(x64|arm64)$)/.test(n) || names(components.qmd.cpuBuild[other]).includes(n))).toEqual([]);
    }
  });

  it("OpenClaw: one lock serves both architectures: made on x64 it already lists arm64's platform packages (optional), and each machine installs its own", () => {
    const index = lockIndex();
    expect(index.trees.openclaw.folders).toEqual({ x64: 'openclaw', arm64: 'openclaw' });
    const shipped = shippedLock('openclaw', 'x64')!;
    const platformOnly = (arch: LockArch) => {
      const keys = [...expectedPackages(shipped.lock, installOptions({ arch, omit: shipped.omit })).keys()];
      return keys.filter((k) => shipped.lock.packages[k]!.cpu !== undefined).map((k) => packageNameAt(k)).sort();
    };
    const x64 = platformOnly('x64');
    const arm64 = platformOnly('arm64');
    expect(x64.length).toBeGreaterThan(0);
    expect(x64.every((n) => !/arm64/.test(n)), x64.join(', ')).toBe(true);
    expect(arm64.every((n) => !/x64/.test(n)), arm64.join(', ')).toBe(true);
    expect(arm64.length).toBe(x64.length);
    // Only glibc builds: the musl ones stay out on Ubuntu.
    expect([...x64, ...arm64].filter((n) => /musl/.test(n))).toEqual([]);
  });

  it('the binary carries every lock file byte for byte (templates/locks/ is embedded like every template)', () => {
    const files = fs.readdirSync(LOCKS, { recursive: true }).map(String).filter((f) => fs.statSync(path.join(LOCKS, f)).isFile());
    expect(files.length).toBeGreaterThanOrEqual(7);
    const binaries = ['x64', 'arm64'].map((arch) => path.join(REPO, 'dist', `service-deploy-linux-${arch}`)).filter((b) => fs.existsSync(b));
    expect(binaries.length, 'run npm run build first').toBeGreaterThan(0);
    for (const binary of binaries) {
      const bytes = fs.readFileSync(binary);
      const missing = files.filter((f) => bytes.indexOf(fs.readFileSync(path.join(LOCKS, f))) < 0);
      expect(missing, path.basename(binary)).toEqual([]);
    }
  });
});
