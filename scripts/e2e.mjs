#!/usr/bin/env node
// npm run test:e2e: the real-server end to end (test/e2e/server.e2e.ts, docs/e2e.md).
// Prepares the machine (debootstrap, systemd-nspawn, gpg from apt if missing), builds
// dist/ if it is missing, runs the scenario with its own vitest config, prints the
// timings, and cleans up a container left by a killed run. Exit 0 with "skipped: ..."
// only when this machine cannot run containers at all; any other problem fails.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cache = path.join(repo, '.cache', 'e2e');
const runningFile = path.join(cache, 'running.json');
const lockDir = path.join(cache, 'run.lock');
const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
const BUDGET_MS = Number(process.env.E2E_BUDGET_MS ?? 20 * 60_000);
const TOOLS = { debootstrap: 'debootstrap', 'systemd-nspawn': 'systemd-container', gpg: 'gnupg', 'dpkg-deb': 'dpkg', nsenter: 'util-linux', ss: 'iproute2', openssl: 'openssl' };

const say = (line) => process.stdout.write(`[e2e] ${line}\n`);
function skip(reason) {
  say(`skipped: ${reason}`);
  process.exit(0);
}
const has = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;

// --- can this machine run a booted container at all?
if (process.platform !== 'linux') skip(`containers need Linux (this is ${process.platform})`);
if (process.getuid?.() !== 0) skip('systemd-nspawn needs root (run as root, e.g. in CI)');
if (!fs.existsSync('/sys/fs/cgroup')) skip('no cgroup filesystem at /sys/fs/cgroup');
if (spawnSync('unshare', ['--mount', '--pid', '--uts', '--ipc', '--fork', 'true'], { stdio: 'ignore' }).status !== 0) {
  skip('this machine does not allow new namespaces (unshare failed), so systemd-nspawn cannot work');
}
const missing = Object.entries(TOOLS).filter(([tool]) => !has(tool));
if (missing.length > 0) {
  if (!has('apt-get')) skip(`missing ${missing.map(([t]) => t).join(', ')} and no apt-get to install them`);
  const pkgs = [...new Set(missing.map(([, p]) => p))];
  say(`installing ${pkgs.join(' ')} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const ok = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env }).status === 0 ||
    (spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env }).status === 0 &&
      spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env }).status === 0);
  const still = Object.keys(TOOLS).filter((tool) => !has(tool));
  if (!ok || still.length > 0) skip(`could not install ${still.join(', ') || pkgs.join(', ')}: systemd-nspawn is not possible here`);
}

// --- one run at a time (the container's services use the fixed ports 18789/18790)
fs.mkdirSync(cache, { recursive: true });
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
try {
  fs.mkdirSync(lockDir);
} catch {
  let holder = 0;
  try {
    holder = Number(fs.readFileSync(path.join(lockDir, 'pid'), 'utf8').trim());
  } catch {}
  if (holder && alive(holder)) {
    say(`another e2e run (pid ${holder}) is in progress; wait for it`);
    process.exit(1);
  }
}
fs.writeFileSync(path.join(lockDir, 'pid'), `${process.pid}\n`);

/** Stops a container a killed run left behind (only the systemd-nspawn we started, by its pid and root). */
function cleanLeftovers() {
  let state;
  try {
    state = JSON.parse(fs.readFileSync(runningFile, 'utf8'));
  } catch {
    return;
  }
  // We hold the run lock, so whoever wrote this file is gone (or is our own vitest, finished or stopped).
  const cmdline = (pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  if (state.nspawnPid && cmdline(state.nspawnPid).includes('systemd-nspawn') && cmdline(state.nspawnPid).includes(state.root)) {
    say(`stopping the container left by an earlier run (systemd-nspawn pid ${state.nspawnPid})`);
    try {
      process.kill(state.nspawnPid, 'SIGTERM');
    } catch {}
    const until = Date.now() + 20_000;
    while (alive(state.nspawnPid) && Date.now() < until) spawnSync('sleep', ['0.5']);
    for (const pid of [state.initPid, state.nspawnPid]) {
      if (pid && alive(pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
    }
    spawnSync('sleep', ['1']);
  }
  const base = state.root ? path.dirname(state.root) : '';
  if (base && path.dirname(base) === os.tmpdir() && path.basename(base).startsWith('sd-e2e-')) fs.rmSync(base, { recursive: true, force: true });
  fs.rmSync(runningFile, { force: true });
}

let exitCode = 1;
const started = Date.now();
try {
  cleanLeftovers();
  const env = { ...process.env, PATH: `${path.join(repo, 'node_modules', '.bin')}:${process.env.PATH}` };
  if (!fs.existsSync(path.join(repo, 'dist', `service-deploy-linux-${arch}`))) {
    say('dist/ is missing: npm run build');
    execFileSync('npm', ['run', 'build'], { cwd: repo, stdio: 'inherit', env });
  }
  fs.rmSync(path.join(cache, 'last-run.json'), { force: true });
  const vitest = spawn(path.join(repo, 'node_modules', '.bin', 'vitest'), ['run', '--config', 'test/e2e/vitest.config.ts'], { cwd: repo, stdio: 'inherit', env });
  const forward = (sig) => vitest.kill(sig);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const budget = setTimeout(() => {
    say(`the e2e exceeded its budget of ${BUDGET_MS / 60_000} minutes; stopping it`);
    vitest.kill('SIGTERM');
    setTimeout(() => vitest.kill('SIGKILL'), 60_000).unref();
  }, BUDGET_MS);
  exitCode = await new Promise((resolve) => vitest.on('exit', (code, sig) => resolve(code ?? (sig ? 1 : 0))));
  clearTimeout(budget);
  summary();
} finally {
  cleanLeftovers();
  fs.rmSync(lockDir, { recursive: true, force: true });
}
say(`${exitCode === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
process.exit(exitCode);

function summary() {
  let r;
  try {
    r = JSON.parse(fs.readFileSync(path.join(cache, 'last-run.json'), 'utf8'));
  } catch {
    return;
  }
  const s = (ms) => (typeof ms === 'number' ? `${(ms / 1000).toFixed(1)} s` : '-');
  say('----- timings');
  if (r.timings) say(`setup: debootstrap ${r.timings.rootfsMs ? s(r.timings.rootfsMs) : 'cached'}, artifacts ${s(r.timings.artifactsMs)}, boot ${s(r.timings.bootMs)}`);
  if (r.freshInstall) {
    const f = r.freshInstall;
    say(`fresh install: ${s(f.wallMs)} = our own work ${s(f.oursMs)} + apt/npm downloads ${s(f.downloadsMs)} + install.sh and binary download ${s(f.bootstrapMs)}`);
    say(`  ${f.detail}`);
  }
  if (r.rerun) say(`re-run (nothing to do): ${s(r.rerun.wallMs)} (the binary: ${s(r.rerun.binaryMs)})`);
  if (r.modelChange) say(`re-run with a new model: ${s(r.modelChange.wallMs)}`);
  if (r.reset) say(`reset-clean: ${s(r.reset.wallMs)}; restore: ${s(r.restore?.wallMs)}`);
  for (const note of r.notes ?? []) say(note);
  say(`whole scenario: ${s(r.totalMs)}${r.failedStep ? `; failed at: ${r.failedStep}` : ''}`);
}
