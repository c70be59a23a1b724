// What every run of booted containers on this machine shares (scripts/e2e.mjs and
// scripts/soak.mjs): the tools (installed with apt-get when missing), the machine-wide
// run lock (one run at a time, whichever checkout starts it) and the clean-up of what a
// killed run left (containers, their loop-mounted roots, network slots).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// E2E_CACHE_DIR: another cache folder (roots, download caches, reports); an empty one
// measures a cold CI machine. The run lock and the network slots are machine-wide
// (E2E_MACHINE_DIR, below): one run per machine, whichever checkout it comes from.
export const cache = process.env.E2E_CACHE_DIR ? path.resolve(process.env.E2E_CACHE_DIR) : path.join(repo, '.cache', 'e2e');
const runningDir = path.join(cache, 'running');
const legacyRunningFile = path.join(cache, 'running.json');
// Not under the checkout: the namespaces (sd-e2e-N) and veth names (sdeN) are the
// machine's, so two checkouts running at once must claim slots from one place (with
// .cache/e2e/net each claimed slot 0 and the second removed the first's network).
// /run is emptied at boot, like the namespaces themselves. test/e2e/netns.ts agrees.
const machineDir = process.env.E2E_MACHINE_DIR ?? '/run/service-deploy-e2e';
const slotsDir = path.join(machineDir, 'net');
// E2E_LOCK_DIR: another run lock for a run that may go beside the usual one (a bench on
// a machine with room for two); the network slots stay machine-wide either way.
const lockDir = process.env.E2E_LOCK_DIR ? path.resolve(process.env.E2E_LOCK_DIR) : path.join(machineDir, 'run.lock');

export const CONTAINER_TOOLS = { debootstrap: 'debootstrap', 'systemd-nspawn': 'systemd-container', gpg: 'gnupg', 'dpkg-deb': 'dpkg', nsenter: 'util-linux', ss: 'iproute2', ip: 'iproute2', openssl: 'openssl' };

const has = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;

export const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Why this machine cannot run booted containers (not Linux, not root, no cgroups or
 * namespaces, tools missing and not installable), or undefined when it can. Missing
 * tools are installed with apt-get; `say` reports it.
 */
export function containersUnavailable(tools, say) {
  if (process.platform !== 'linux') return `containers need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'systemd-nspawn needs root (run as root, e.g. in CI)';
  if (!fs.existsSync('/sys/fs/cgroup')) return 'no cgroup filesystem at /sys/fs/cgroup';
  if (spawnSync('unshare', ['--mount', '--pid', '--uts', '--ipc', '--net', '--fork', 'true'], { stdio: 'ignore' }).status !== 0) {
    return 'this machine does not allow new namespaces (unshare failed), so systemd-nspawn cannot work';
  }
  const missing = Object.entries(tools).filter(([tool]) => !has(tool));
  if (missing.length === 0) return undefined;
  if (!has('apt-get')) return `missing ${missing.map(([t]) => t).join(', ')} and no apt-get to install them`;
  const pkgs = [...new Set(missing.map(([, p]) => p))];
  say(`installing ${pkgs.join(' ')} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const ok = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env }).status === 0 ||
    (spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env }).status === 0 &&
      spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env }).status === 0);
  const still = Object.keys(tools).filter((tool) => !has(tool));
  if (!ok || still.length > 0) return `could not install ${still.join(', ') || pkgs.join(', ')}: systemd-nspawn is not possible here`;
  return undefined;
}

/**
 * Takes the machine-wide run lock, waiting for the run that holds it (or failing at once
 * with E2E_LOCK_WAIT=0). A lock whose holder died is taken over.
 */
export function takeRunLock(say, fail) {
  fs.mkdirSync(cache, { recursive: true });
  fs.mkdirSync(path.dirname(lockDir), { recursive: true });
  const lockWaitStarted = Date.now();
  for (let told = false; ; ) {
    try {
      fs.mkdirSync(lockDir);
      break;
    } catch {
      let holder = 0;
      try {
        holder = Number(fs.readFileSync(path.join(lockDir, 'pid'), 'utf8').trim());
      } catch {}
      if (!holder || !alive(holder)) {
        if (holder || Date.now() - fs.statSync(lockDir).mtimeMs > 30_000) fs.rmSync(lockDir, { recursive: true, force: true });
        else spawnSync('sleep', ['1']);
        continue;
      }
      if (process.env.E2E_LOCK_WAIT === '0') fail(`another e2e run or soak (pid ${holder}: ${cmdline(holder).split('\0').join(' ').slice(0, 120)}) is in progress; wait for it`);
      if (!told) say(`another e2e run or soak (pid ${holder}) is in progress; waiting for it (E2E_LOCK_WAIT=0: fail instead)`);
      told = true;
      spawnSync('sleep', ['5']);
    }
  }
  fs.writeFileSync(path.join(lockDir, 'pid'), `${process.pid}\n`);
  if (Date.now() - lockWaitStarted > 10_000) say(`waited ${((Date.now() - lockWaitStarted) / 1000).toFixed(0)} s for the run lock`);
}

export function releaseRunLock() {
  fs.rmSync(lockDir, { recursive: true, force: true });
}

export const cmdline = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
};

/**
 * A harness of this run still alive after its job ended (its vitest was stopped by a
 * signal and the worker is going down, or lingers): waits 15 s, then ends it (we started it).
 */
function endOwnHarness(record, runId, say) {
  if (!runId || record.runId !== runId || !record.harnessPid || record.harnessPid === process.pid) return;
  const until = Date.now() + 15_000;
  while (alive(record.harnessPid) && Date.now() < until) spawnSync('sleep', ['0.5']);
  if (alive(record.harnessPid)) {
    say(`ending this run's harness pid ${record.harnessPid} (its job is over)`);
    try {
      process.kill(record.harnessPid, 'SIGKILL');
    } catch {}
    spawnSync('sleep', ['0.5']);
  }
}

/**
 * Stops containers a killed run left behind (only the systemd-nspawn it started, by pid
 * and root) and frees its networks. A container kept with E2E_KEEP=1 names its
 * systemd-nspawn as its owner: left alone while it is up. Call it holding the run lock.
 */
export function cleanLeftovers(runId, say) {
  const records = [];
  for (const file of [legacyRunningFile, ...(fs.existsSync(runningDir) ? fs.readdirSync(runningDir).map((f) => path.join(runningDir, f)) : [])]) {
    try {
      records.push({ file, ...JSON.parse(fs.readFileSync(file, 'utf8')) });
    } catch {
      fs.rmSync(file, { force: true });
    }
  }
  for (const state of records) {
    endOwnHarness(state, runId, say);
    // We hold the run lock: whoever wrote this is gone, unless its harness still lives.
    if (state.harnessPid && state.harnessPid !== process.pid && alive(state.harnessPid)) continue;
    if (state.nspawnPid && cmdline(state.nspawnPid).includes('systemd-nspawn') && cmdline(state.nspawnPid).includes(state.root)) {
      say(`stopping a container left by an earlier run (systemd-nspawn pid ${state.nspawnPid})`);
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
    if (base && path.dirname(base) === os.tmpdir() && path.basename(base).startsWith('sd-e2e-')) {
      // The root is a loop-mounted image (test/e2e/container.ts): unmount, then remove.
      if (spawnSync('mountpoint', ['-q', state.root]).status === 0 && spawnSync('umount', [state.root]).status !== 0) spawnSync('umount', ['-l', state.root]);
      fs.rmSync(base, { recursive: true, force: true });
    }
    // Its cgroups (test/e2e/cgroups.ts), deepest first; only folders the harness names so.
    for (const dir of Array.isArray(state.cgroups) ? state.cgroups : []) {
      if (typeof dir === 'string' && dir.startsWith('/sys/fs/cgroup/') && /^sd-(e2e|soak)-/.test(path.basename(dir)) && fs.existsSync(dir)) spawnSync('find', [dir, '-depth', '-type', 'd', '-exec', 'rmdir', '{}', '+'], { stdio: 'ignore' });
    }
    fs.rmSync(state.file, { force: true });
  }
  // Network slots (test/e2e/netns.ts) whose owner is gone: veth pair and namespace.
  if (fs.existsSync(slotsDir)) {
    for (const f of fs.readdirSync(slotsDir)) {
      let slot;
      try {
        slot = JSON.parse(fs.readFileSync(path.join(slotsDir, f), 'utf8'));
      } catch {
        continue;
      }
      endOwnHarness({ runId: slot.runId, harnessPid: slot.pid }, runId, say);
      if (slot.pid && alive(slot.pid)) continue;
      if (/^sde\d+$/.test(slot.hostIf ?? '')) spawnSync('ip', ['link', 'del', slot.hostIf], { stdio: 'ignore' });
      if (/^sd-e2e-\d+$/.test(slot.netns ?? '') && fs.existsSync(`/run/netns/${slot.netns}`)) spawnSync('ip', ['netns', 'del', slot.netns], { stdio: 'ignore' });
      fs.rmSync(path.join(slotsDir, f), { force: true });
    }
  }
}

/** The signed release the runs serve (docs/release.md): built with `npm run build` when incomplete (a --native build has no .xz). */
export function releaseMissing() {
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  return !process.env.E2E_DIST && !['install.sh', 'SHA256SUMS.sig', `service-deploy-linux-${arch}.xz`].every((f) => fs.existsSync(path.join(repo, 'dist', f)));
}

/**
 * Builds dist/ when it has no complete release (unless `build` is false), bundles
 * `entry` (a TypeScript file of test/e2e) with esbuild as `name`, and runs it with this
 * Node, Ctrl-C and SIGTERM passed on; resolves to its exit status. For the benches
 * (npm run soak, npm run bench:install).
 */
export async function runBundled(entry, name, say, { build = true } = {}) {
  const env = { ...process.env, PATH: `${path.join(repo, 'node_modules', '.bin')}:${process.env.PATH}` };
  if (build && releaseMissing()) {
    say('dist/ has no complete release: npm run build');
    execFileSync('npm', ['run', 'build'], { cwd: repo, stdio: 'inherit', env });
  }
  const { bundleScript } = await import('./bundle-script.mjs');
  const bundle = await bundleScript(repo, entry, name);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bundle], { cwd: repo, env, stdio: 'inherit' });
    const forward = (sig) => child.kill(sig);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('exit', (status, sig) => resolve(status ?? (sig ? 1 : 0)));
  });
}
