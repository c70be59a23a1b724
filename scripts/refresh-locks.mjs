#!/usr/bin/env node
// npm run locks: the npm locks of the runtime trees the install puts on a server
// (OpenClaw, lossless-claw, QMD), made again from the pins in templates/components.json,
// and what changed printed for review (docs/components.md, "Locks").
//
//   npm run locks                 make them, print the changes, write templates/locks/
//   npm run locks -- --check      make them and print the changes; write nothing, exit 1 when they differ
//
// For each tree it writes a project package.json (the pinned package, QMD's CPU build
// for the architecture, the install scripts the install allows) and lets the npm the
// pinned Node bundles resolve it: `npm install --package-lock-only --ignore-scripts`, so
// nothing is installed and no package's script runs. Packages come from the registry npm
// is configured with; the locks record no registry address (omit-lockfile-registry-resolved):
// a server's npm fetches each package from its own configured registry or mirror and
// checks it against the lock's integrity hash.
//
// Each tree is resolved as on linux-x64 and as on linux-arm64. npm checks a package's
// `cpu` only against process.arch (its --cpu flag applies to optional packages alone), and
// QMD's CPU packages are regular dependencies of its tree (the install leaves every optional
// package out): so npm runs with process.arch set to the target (a --require preload).
// Where both locks come out the same (OpenClaw: its platform packages are optional and a
// lock lists them for every platform), one folder serves both architectures.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleScript } from './bundle-script.mjs';

const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const LOCKS = path.join(repo, 'templates', 'locks');
/** The npm of the pinned Node's release (the e2e's Node tarball carries the same: test/e2e/artifacts.ts). */
const NPM_VERSION = '11.21.2';
const ARCHES = ['x64', 'arm64'];
const check = process.argv.includes('--check');

const say = (line) => process.stdout.write(`${line}\n`);

/** The trees, as the install puts them on a server: what each project depends on, which install scripts run, what npm leaves out. */
function trees(components) {
  const exact = (spec) => {
    const at = spec.lastIndexOf('@');
    return [spec.slice(0, at), spec.slice(at + 1)];
  };
  return [
    {
      key: 'openclaw',
      folder: 'openclaw',
      pin: components.openclaw,
      omit: [],
      manifest: () => ({ name: 'service-deploy-openclaw', private: true, dependencies: { [components.openclaw.package]: components.openclaw.version }, allowScripts: { [components.openclaw.package]: true } }),
    },
    {
      key: 'losslessClaw',
      folder: 'lossless-claw',
      pin: components.losslessClaw,
      // OpenClaw is its peer: the gateway loads it, npm must not install a second OpenClaw.
      omit: ['peer'],
      manifest: () => ({ name: 'service-deploy-plugins', private: true, dependencies: { [components.losslessClaw.package]: components.losslessClaw.version } }),
    },
    {
      key: 'qmd',
      folder: 'qmd',
      pin: components.qmd,
      // node-llama-cpp's GPU prebuilds (CUDA, Vulkan) are optional: left out, the CPU build named instead.
      omit: ['optional'],
      manifest: (arch) => ({
        name: 'service-deploy-qmd',
        private: true,
        dependencies: Object.fromEntries([[components.qmd.package, components.qmd.version], ...components.qmd.cpuBuild[arch].map(exact)].sort(([a], [b]) => (a < b ? -1 : 1))),
        allowScripts: { 'better-sqlite3': true, 'node-llama-cpp': true },
      }),
    },
  ];
}

/** npm NPM_VERSION, unpacked under .cache/ once (`npm pack` checks the tarball against the registry's integrity). */
function pinnedNpm() {
  const dir = path.join(repo, '.cache', `npm-${NPM_VERSION}`);
  const cli = path.join(dir, 'package', 'bin', 'npm-cli.js');
  if (fs.existsSync(cli)) return cli;
  fs.mkdirSync(dir, { recursive: true });
  const file = execFileSync('npm', ['pack', `npm@${NPM_VERSION}`, '--silent', '--pack-destination', dir], { encoding: 'utf8' }).trim().split('\n').pop();
  execFileSync('tar', ['-xzf', path.join(dir, file), '-C', dir]);
  return cli;
}

/** The pinned Node of node_modules (what servers run npm with), else this one. */
function pinnedNode() {
  const node = path.join(repo, 'node_modules', `node-linux-${process.arch}`, 'bin', 'node');
  return fs.existsSync(node) ? node : process.execPath;
}

function run(command, args, options) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** One tree resolved as on linux-<arch>: the lock's text, or why npm could not. */
async function resolveTree(tree, arch, npmCli, work) {
  const dir = path.join(work, `${tree.folder}-${arch}`);
  fs.mkdirSync(dir, { recursive: true });
  const manifest = `${JSON.stringify(tree.manifest(arch), null, 2)}\n`;
  fs.writeFileSync(path.join(dir, 'package.json'), manifest);
  const preload = path.join(work, 'arch.cjs');
  fs.writeFileSync(preload, "Object.defineProperty(process, 'arch', { value: process.env.LOCK_ARCH });\n");
  const { code, out } = await run(pinnedNode(), ['--require', preload, npmCli, 'install', '--package-lock-only', '--ignore-scripts', '--prefer-online', '--no-audit', '--no-fund', '--lockfile-version=3', '--omit-lockfile-registry-resolved=true'], {
    cwd: dir,
    env: { ...process.env, LOCK_ARCH: arch, npm_config_update_notifier: 'false', npm_config_loglevel: 'warn' },
  });
  if (code !== 0) {
    const missing = /\bE404\b|404 Not Found/.test(out);
    return { error: missing ? `not on the registry npm is configured with (npm: E404 for ${tree.pin.package}@${tree.pin.version})` : `npm exited ${code}: ${out.trim().split('\n').slice(-4).join(' | ')}`, missing };
  }
  return { manifest, lockText: fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8') };
}

/** Refuses a lock that is not what the install may use: every package pinned by integrity, from the configured registry, the pin at the top. */
function validate(tree, arch, manifestText, lock, registry) {
  const problems = [];
  const manifest = JSON.parse(manifestText);
  const root = lock.packages[''];
  if (JSON.stringify(root?.dependencies ?? {}) !== JSON.stringify(manifest.dependencies)) problems.push('the lock\'s root dependencies are not the manifest\'s');
  if (lock.packages[`node_modules/${tree.pin.package}`]?.version !== tree.pin.version) problems.push(`node_modules/${tree.pin.package} is not ${tree.pin.version}`);
  for (const [p, entry] of Object.entries(lock.packages)) {
    if (p === '' || entry.inBundle || entry.link) continue;
    if (!/^sha512-[A-Za-z0-9+/]+={0,2}$/.test(entry.integrity ?? '')) problems.push(`${p}: no sha512 integrity`);
    if (entry.resolved && !entry.resolved.startsWith(registry)) problems.push(`${p}: resolved outside the configured registry (${entry.resolved.split('/').slice(0, 3).join('/')}/...)`);
  }
  if (problems.length) throw new Error(`${tree.folder} (linux-${arch}): ${problems.slice(0, 10).join('; ')}`);
}

async function main() {
  const components = JSON.parse(fs.readFileSync(path.join(repo, 'templates', 'components.json'), 'utf8'));
  const { parseLock, diffLocks, describeChange } = await import(await bundleScript(repo, 'src/runtime/npm-lock.ts', 'refresh-locks-npm-lock.mjs'));
  const npmCli = pinnedNpm();
  const registry = execFileSync(process.execPath, [npmCli, 'config', 'get', 'registry'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'refresh-locks-'));
  const oldIndex = fs.existsSync(path.join(LOCKS, 'index.json')) ? JSON.parse(fs.readFileSync(path.join(LOCKS, 'index.json'), 'utf8')) : { trees: {} };
  const index = {
    $comment: 'Made by npm run locks (scripts/refresh-locks.mjs) from templates/components.json; reviewed as docs/components.md ("Locks") says. Do not edit by hand.',
    npm: NPM_VERSION,
    trees: {},
  };
  const writes = [];
  let differs = false;
  try {
    const nodeVersion = execFileSync(pinnedNode(), ['--version'], { encoding: 'utf8' }).trim();
    say(`resolving with npm ${NPM_VERSION} on Node ${nodeVersion}, as linux-x64 and as linux-arm64 (nothing installed, no install script run)`);
    const list = trees(components);
    const results = await Promise.all(list.flatMap((tree) => ARCHES.map(async (arch) => ({ tree, arch, ...(await resolveTree(tree, arch, npmCli, work)) }))));
    for (const tree of list) {
      const [x64, arm64] = ARCHES.map((arch) => results.find((r) => r.tree === tree && r.arch === arch));
      const entry = { package: tree.pin.package, version: tree.pin.version, omit: tree.omit };
      const before = oldIndex.trees[tree.key];
      if (x64.error || arm64.error) {
        const why = x64.error ?? arm64.error;
        if (!x64.missing && !arm64.missing) throw new Error(`${tree.folder}: ${why}`);
        index.trees[tree.key] = { ...entry, unavailable: why };
        say(`\n${tree.folder}: NOT LOCKED: ${why}`);
        if (before?.folders) say('  the lock committed before is removed: it would not be the pinned version');
        differs ||= JSON.stringify(before) !== JSON.stringify(index.trees[tree.key]);
        continue;
      }
      const same = x64.lockText === arm64.lockText && x64.manifest === arm64.manifest;
      const folders = same ? { x64: tree.folder, arm64: tree.folder } : { x64: `${tree.folder}-linux-x64`, arm64: `${tree.folder}-linux-arm64` };
      index.trees[tree.key] = { ...entry, folders };
      for (const [arch, made] of [['x64', x64], ['arm64', arm64]]) {
        if (same && arch === 'arm64') continue;
        const lock = parseLock(made.lockText, `${folders[arch]}/package-lock.json`);
        validate(tree, arch, made.manifest, lock, registry);
        const target = path.join(LOCKS, folders[arch]);
        const previousFolder = before?.folders?.[arch];
        const previousLock = previousFolder && fs.existsSync(path.join(LOCKS, previousFolder, 'package-lock.json')) ? fs.readFileSync(path.join(LOCKS, previousFolder, 'package-lock.json'), 'utf8') : undefined;
        const previousManifest = previousFolder && fs.existsSync(path.join(LOCKS, previousFolder, 'package.json')) ? fs.readFileSync(path.join(LOCKS, previousFolder, 'package.json'), 'utf8') : undefined;
        const label = `${folders[arch]} (${same ? 'linux-x64 and linux-arm64' : `linux-${arch}`}): ${Object.keys(lock.packages).length - 1} packages, ${tree.pin.package}@${tree.pin.version}`;
        if (previousLock === made.lockText && previousManifest === made.manifest && previousFolder === folders[arch]) {
          say(`\n${label}: unchanged`);
        } else {
          differs = true;
          const changes = previousLock ? diffLocks(parseLock(previousLock), lock) : [];
          const count = (kind) => changes.filter((c) => c.kind === kind).length;
          say(`\n${label}: ${previousLock ? `${count('added')} added, ${count('removed')} removed, ${count('version')} changed versions, ${count('integrity')} changed integrity at the same version, ${count('install-script')} install-script changes, ${count('platform')} platform changes` : 'new'}${previousManifest !== undefined && previousManifest !== made.manifest ? '; package.json changed' : ''}`);
          for (const change of changes) say(`  ${describeChange(change)}`);
          if (!previousLock) for (const [p, e] of Object.entries(lock.packages)) if (e.hasInstallScript) say(`  install script: ${p.replace(/^.*node_modules\//, '')}@${e.version}${e.optional ? ' (optional)' : ''}`);
        }
        writes.push({ target, manifest: made.manifest, lockText: made.lockText });
      }
    }
    const indexText = `${JSON.stringify(index, null, 2)}\n`;
    const oldIndexText = fs.existsSync(path.join(LOCKS, 'index.json')) ? fs.readFileSync(path.join(LOCKS, 'index.json'), 'utf8') : '';
    differs ||= indexText !== oldIndexText;
    if (check) {
      say(differs ? '\n--check: the locks differ from templates/locks/ (nothing written)' : '\n--check: templates/locks/ is what the pins resolve to today');
      return differs ? 1 : 0;
    }
    // Written through a temporary folder, then swapped in: a failed run leaves the old locks whole.
    const staged = path.join(work, 'locks');
    fs.mkdirSync(staged, { recursive: true });
    for (const w of writes) {
      fs.mkdirSync(path.join(staged, path.basename(w.target)), { recursive: true });
      fs.writeFileSync(path.join(staged, path.basename(w.target), 'package.json'), w.manifest);
      fs.writeFileSync(path.join(staged, path.basename(w.target), 'package-lock.json'), w.lockText);
    }
    fs.writeFileSync(path.join(staged, 'index.json'), indexText);
    const fresh = `${LOCKS}.new-${process.pid}`;
    const old = `${LOCKS}.old-${process.pid}`;
    fs.cpSync(staged, fresh, { recursive: true });
    if (fs.existsSync(LOCKS)) fs.renameSync(LOCKS, old);
    fs.renameSync(fresh, LOCKS);
    fs.rmSync(old, { recursive: true, force: true });
    say(`\n${differs ? 'written' : 'unchanged'}: templates/locks/ (review: docs/components.md, "Locks")`);
    return 0;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    say(`error: ${error.message}`);
    process.exit(2);
  },
);
