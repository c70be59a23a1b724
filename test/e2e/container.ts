// A booted Debian container for the e2e: a debootstrap root (cached as a tarball keyed
// by suite and package list), copied fresh for every container, booted with
// `systemd-nspawn -b` (real systemd as PID 1, user managers, cron), entered with
// nsenter. Each container has a network namespace of its own (netns.ts) unless asked
// to share the host's, so several run at once although the deployment's ports are fixed.
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { E2E_CACHE } from './artifacts.js';
import { containerCgroups, execCgroups, foreignProcesses, pidNamespace, removeCgroups, unifiedCgroupOf } from './cgroups.js';
import type { NetSlot } from './netns.js';

/**
 * The Debian releases the e2e runs on. They bracket the supported Ubuntus (docs/e2e.md):
 * bullseye is older than 22.04 on every axis (nginx 1.18, OpenSSL 1.1.1, systemd 247,
 * glibc 2.31), trixie newer than 24.04 (nginx 1.26, OpenSSL 3.5, systemd 257, glibc 2.41).
 */
export const SUITES = ['bullseye', 'bookworm', 'trixie'] as const;
export type Suite = (typeof SUITES)[number];
export const DEFAULT_SUITE: Suite = 'bookworm';
const RELEASE: Record<Suite, string> = { bullseye: 'Debian 11', bookworm: 'Debian 12', trixie: 'Debian 13' };

/** The suite this e2e process runs on: E2E_SUITE (scripts/e2e.mjs sets it per suite), default bookworm. */
export function suiteFromEnv(env: NodeJS.ProcessEnv = process.env): Suite {
  const name = env.E2E_SUITE ?? DEFAULT_SUITE;
  if (!(SUITES as readonly string[]).includes(name)) throw new Error(`E2E_SUITE=${name}: use one of ${SUITES.join(', ')}`);
  return name as Suite;
}

export function releaseName(suite: Suite): string {
  return `${RELEASE[suite]} (${suite})`;
}

/** What a cloud image of a server has before the install: systemd, a user bus, curl. */
export const BASE_PACKAGES = ['systemd', 'systemd-sysv', 'dbus', 'libpam-systemd', 'dbus-user-session', 'curl', 'ca-certificates'];
/** Containers running now, one file each, so scripts/e2e.mjs can clean up after a killed run. */
export const RUNNING_DIR = path.join(E2E_CACHE, 'running');

export interface RootfsSpec {
  suite: Suite;
  /** Packages on top of debootstrap's minbase (default BASE_PACKAGES). */
  packages?: readonly string[];
  /** Packages apt-get installs on top of that (cloud-init, openssh-server): a tarball of its own. */
  extra?: readonly string[];
}

const BASE_ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/root',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
};

export interface ShResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * The Debian mirror this machine's apt uses (deb822 .sources or sources.list: the first
 * `deb` source whose suites are not a -security one), read at run time so no host name
 * is written into the repository. The mirror serves every suite. Undefined: debootstrap's default.
 */
export function hostDebianMirror(): string | undefined {
  const dir = '/etc/apt/sources.list.d';
  const files = [...(fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.sources') || f.endsWith('.list')).map((f) => path.join(dir, f)) : []), '/etc/apt/sources.list'];
  const plain = (suite: string) => suite && !suite.includes('security') && !suite.includes('/');
  for (const file of files) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim();
        const suites = (field('Suites') ?? '').split(/\s+/);
        const uri = field('URIs')?.split(/\s+/)[0];
        if (uri && suites.some(plain) && /^deb\b/.test(field('Types') ?? '') && !/^\s*Enabled:\s*no/mi.test(stanza)) return uri;
      }
    } else {
      for (const line of text.split('\n')) {
        const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
        if (m && plain(m[2]!)) return m[1];
      }
    }
  }
  return undefined;
}

/**
 * The cached root tarball for a suite and package list, made when missing: debootstrap
 * (minbase + `packages`, about a minute), then, for `extra`, apt-get install on top of that
 * base in a plain (not booted) systemd-nspawn, which resolves dependencies better than
 * debootstrap's --include (trixie's cloud-init fails there). Concurrent runs needing the
 * same tarball build it once: the others wait for the builder (a lock directory holding its pid).
 */
export async function ensureRootfs(spec: RootfsSpec, log: (line: string) => void): Promise<{ tarball: string; cached: boolean; ms: number }> {
  const started = Date.now();
  const packages = [...(spec.packages ?? BASE_PACKAGES)];
  const baseKey = createHash('sha256').update(JSON.stringify({ suite: spec.suite, variant: 'minbase', arch: process.arch, packages })).digest('hex').slice(0, 16);
  const base = path.join(E2E_CACHE, `rootfs-${spec.suite}-${baseKey}.tar`);
  const baseMade = await buildOnce(base, async (build) => {
    const mirror = hostDebianMirror();
    log(`debootstrap ${spec.suite} (minbase + ${packages.length} packages) into the cache; this happens once per suite and package list`);
    const args = ['--variant=minbase', `--include=${packages.join(',')}`, spec.suite, build, ...(mirror ? [mirror] : [])];
    const result = await execa('debootstrap', args, { reject: false, timeout: 15 * 60_000, all: true });
    if (result.exitCode !== 0) throw new Error(`debootstrap ${spec.suite} failed (exit ${result.exitCode}):\n${String(result.all).slice(-3000)}`);
  });
  if (!spec.extra?.length) return { tarball: base, cached: !baseMade, ms: baseMade ? Date.now() - started : 0 };
  const extra = [...spec.extra];
  const key = createHash('sha256').update(JSON.stringify({ base: baseKey, extra })).digest('hex').slice(0, 16);
  const tarball = path.join(E2E_CACHE, `rootfs-${spec.suite}-${key}.tar`);
  const made = await buildOnce(tarball, async (build) => {
    log(`${spec.suite}: apt-get install ${extra.join(' ')} on the cached base`);
    await execa('tar', ['-C', build, '--numeric-owner', '-xf', base], { timeout: 10 * 60_000 });
    const script = `set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; apt-get install -y -qq --no-install-recommends ${extra.join(' ')} >/dev/null; apt-get clean; rm -rf /var/lib/apt/lists/*`;
    const result = await execa('systemd-nspawn', ['-q', '--register=no', '--keep-unit', '--pipe', '-D', build, '/bin/sh', '-c', script], { reject: false, timeout: 15 * 60_000, all: true });
    if (result.exitCode !== 0) throw new Error(`apt-get install ${extra.join(' ')} on ${spec.suite} failed (exit ${result.exitCode}):\n${String(result.all).slice(-3000)}`);
  });
  return { tarball, cached: !made && !baseMade, ms: made || baseMade ? Date.now() - started : 0 };
}

/** Makes `tarball` with `fill(dir)` unless it exists (true if this call made it), once across concurrent runs. */
async function buildOnce(tarball: string, fill: (dir: string) => Promise<void>): Promise<boolean> {
  if (fs.existsSync(tarball)) return false;
  const started = Date.now();
  fs.mkdirSync(E2E_CACHE, { recursive: true });
  const lock = `${tarball}.lock`;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(path.join(lock, 'pid'), `${process.pid}\n`);
      break;
    } catch {
      const holder = Number(fs.readFileSync(path.join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }).trim());
      if (holder && !alive(holder)) fs.rmSync(lock, { recursive: true, force: true });
      else if (!holder && Date.now() - statMtime(lock) > 60_000) fs.rmSync(lock, { recursive: true, force: true });
      else {
        await sleep(1000);
        if (fs.existsSync(tarball)) return true;
        if (Date.now() - started > 20 * 60_000) throw new Error(`waited 20 minutes for another run building ${path.basename(tarball)} (pid ${holder})`);
      }
    }
  }
  const build = `${tarball}.build-${process.pid}`;
  try {
    if (fs.existsSync(tarball)) return false;
    fs.rmSync(build, { recursive: true, force: true });
    fs.mkdirSync(build);
    await fill(build);
    // Per-run identity is set at boot; the cache holds no machine id of its own.
    fs.writeFileSync(path.join(build, 'etc', 'machine-id'), '');
    const partial = `${tarball}.partial-${process.pid}`;
    await execa('tar', ['-C', build, '--numeric-owner', '-cf', partial, '.'], { timeout: 10 * 60_000 });
    fs.renameSync(partial, tarball);
    return true;
  } finally {
    fs.rmSync(build, { recursive: true, force: true });
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

function statMtime(p: string): number {
  try {
    return fs.statSync(p).mtimeMs;
  } catch {
    return Date.now();
  }
}

export type ContainerFile = { path: string; content: string | Buffer; mode: number } | { path: string; symlink: string };

export interface ContainerOptions {
  tarball: string;
  hostname: string;
  /** The container's own network namespace; without it the container shares the host's network. */
  net?: NetSlot;
  /**
   * What boot() waits for: "running" (default: systemd finished starting, every unit
   * up) or "manager" (systemd answers; for a boot whose start-up runs a long job, such
   * as cloud-init's final stage with the install in it).
   */
  waitFor?: 'running' | 'manager';
  /** host dir -> container dir bind mounts (download caches). */
  binds?: Array<[string, string]>;
  /** Files to place before boot: container path -> content and mode, or a symbolic link (enabling a unit). */
  files?: ContainerFile[];
  /**
   * A cgroup folder of the host that systemd-nspawn starts in, so that the whole
   * container is in it from its first process (the soak's memory limit: test/e2e/soak-host.ts).
   * Every container also gets cgroups of its own in the hierarchies nspawn uses (cgroups.ts).
   */
  cgroup?: string;
  log: (line: string) => void;
}

export class Container {
  readonly root: string;
  private nspawnPidValue = 0;
  initPid = 0;
  /** Where sh() runs its commands (cgroups.ts, EXEC_CGROUP), once the init is in its init.scope. */
  private execDirs: string[] = [];
  /** The host cgroup folders this container runs in (cgroups.ts), removed with it. */
  private cgroups: string[] = [];
  private exited: Promise<void> = Promise.resolve();
  private nspawnLog: string;

  private constructor(root: string, private readonly options: ContainerOptions) {
    this.root = root;
    this.nspawnLog = path.join(path.dirname(root), 'nspawn.log');
  }

  get hostname(): string {
    return this.options.hostname;
  }

  /** The container's network (undefined: it shares the host's). */
  get net(): NetSlot | undefined {
    return this.options.net;
  }

  /** systemd-nspawn's pid: SIGTERM to it powers the container off in order (SIGTERM to the init re-executes systemd). */
  get nspawnPid(): number {
    return this.nspawnPidValue;
  }

  /** The folder holding the root's image (root.img), its mount point (root/) and nspawn.log. */
  get baseDir(): string {
    return path.dirname(this.root);
  }

  /** This container's record for scripts/e2e.mjs's clean-up after a killed run. */
  get runningFile(): string {
    return path.join(RUNNING_DIR, `${path.basename(path.dirname(this.root))}.json`);
  }

  /**
   * Shell lines (as root) that stop this container and remove what it took on the host:
   * the container powered off through systemd-nspawn (SIGTERM to nspawn: an orderly
   * poweroff; SIGTERM to the container's init would only make systemd re-execute itself),
   * waited for, then the loop-mounted root image unmounted and its folder removed, and
   * its cgroups (cgroups.ts) removed.
   */
  stopCommands(): string[] {
    const base = this.baseDir;
    return [
      `kill -TERM ${this.nspawnPidValue}; while kill -0 ${this.nspawnPidValue} 2>/dev/null; do sleep 1; done`,
      `umount ${this.root} 2>/dev/null || umount -l ${this.root}; rm -rf ${base} ${this.runningFile}`,
      ...(this.cgroups.length > 0 ? [`find ${this.cgroups.join(' ')} -depth -type d -exec rmdir {} +`] : []),
    ];
  }

  private record(owner: { harnessPid: number; runId?: string } = { harnessPid: process.pid, runId: process.env.E2E_RUN_ID }): void {
    fs.mkdirSync(RUNNING_DIR, { recursive: true });
    fs.writeFileSync(this.runningFile, JSON.stringify({ nspawnPid: this.nspawnPidValue, initPid: this.initPid || undefined, root: this.root, cgroups: this.cgroups, ...owner }) + '\n');
  }

  /**
   * E2E_KEEP=1: the container outlives the harness. Its record names systemd-nspawn as
   * its owner (and no run), so a later run's clean-up (scripts/e2e.mjs) leaves it alone
   * while it is up, and removes what is left once it was stopped.
   */
  keep(): void {
    this.record({ harnessPid: this.nspawnPidValue });
  }

  /** Unpacks a fresh copy of the root, places the files and boots it; waits for systemd. */
  static async boot(options: ContainerOptions): Promise<Container> {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-e2e-'));
    const root = path.join(base, 'root');
    fs.mkdirSync(root);
    const container = new Container(root, options);
    try {
      await mountScratch(base, root);
      await execa('tar', ['-C', root, '--numeric-owner', '-xf', options.tarball], { timeout: 5 * 60_000 });
      fs.writeFileSync(path.join(root, 'etc', 'hostname'), `${options.hostname}\n`);
      for (const file of options.files ?? []) {
        const real = path.join(root, file.path);
        fs.mkdirSync(path.dirname(real), { recursive: true, mode: 0o700 });
        if ('symlink' in file) {
          fs.rmSync(real, { force: true });
          fs.symlinkSync(file.symlink, real);
          continue;
        }
        fs.writeFileSync(real, file.content, { mode: file.mode });
        fs.chmodSync(real, file.mode);
      }
      await container.start();
      return container;
    } catch (error) {
      await container.destroy();
      throw error;
    }
  }

  private async start(): Promise<void> {
    const binds = (this.options.binds ?? []).map(([from, to]) => `--bind=${from}:${to}`);
    const network = this.options.net ? [`--network-namespace-path=${this.options.net.path}`] : [];
    const out = fs.openSync(this.nspawnLog, 'a');
    // read-only: nspawn copies the container's console into its log. With passive nobody
    // reads the console's pseudo-TTY; once its buffer is full, every write to /dev/console
    // blocks, PID 1's own included (cloud-final's output goes to journal+console), and the
    // whole container stops answering.
    const nspawn = ['systemd-nspawn', '--register=no', '--keep-unit', '--console=read-only', `--machine=${this.options.hostname}`, ...network, ...binds, '-D', this.root, '-b'];
    // In cgroups of its own (cgroups.ts): the shell moves itself into each, then becomes systemd-nspawn.
    this.cgroups = containerCgroups(`sd-e2e-${this.options.hostname}-${path.basename(this.baseDir).replace(/^sd-e2e-/, '')}`, this.options.cgroup);
    this.record();
    const enter = 'n=$0; while [ "$n" -gt 0 ]; do echo $$ >"$1/cgroup.procs" || exit 1; shift; n=$((n - 1)); done; exec "$@"';
    const child = spawn('/bin/sh', ['-c', enter, String(this.cgroups.length), ...this.cgroups, ...nspawn], {
      stdio: ['ignore', out, out],
      detached: true,
    });
    fs.closeSync(out);
    this.nspawnPidValue = child.pid ?? 0;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.unref();
    this.record();

    // The container's init is the child of systemd-nspawn named systemd.
    const deadline = Date.now() + 30_000;
    while (!this.initPid) {
      if (child.exitCode !== null) throw new Error(`systemd-nspawn exited (${child.exitCode}):\n${this.bootLog()}`);
      if (Date.now() > deadline) throw new Error(`no systemd under systemd-nspawn after 30 s:\n${this.bootLog()}`);
      this.initPid = findChild(this.nspawnPidValue, 'systemd') ?? 0;
      if (!this.initPid) await sleep(100);
    }
    this.record();
    this.assertOwnCgroup();
    if (this.options.waitFor === 'manager') {
      await this.waitForManager();
      return;
    }
    // The system bus comes up a moment after init; until then systemctl cannot connect.
    let state = await this.sh('systemctl is-system-running --wait', { timeoutMs: 120_000 });
    const bootDeadline = Date.now() + 120_000;
    // Until the bus is up, systemctl prints nothing, or "offline" (systemd 247).
    while ((!state.stdout.trim() || state.stdout.trim() === 'offline') && Date.now() < bootDeadline) {
      await sleep(250);
      state = await this.sh('systemctl is-system-running --wait', { timeoutMs: 120_000 });
    }
    const status = state.stdout.trim();
    if (status !== 'running' && status !== 'degraded') throw new Error(`the container's systemd is "${status}" after boot:\n${state.stderr}\n${this.bootLog()}`);
    if (status === 'degraded') {
      const failed = await this.sh('systemctl --failed --no-legend --plain');
      this.options.log(`container booted degraded; failed units: ${failed.stdout.trim() || '(none listed)'}`);
    }
  }

  /** Until the container's systemd answers on its bus (is-system-running prints a state). */
  private async waitForManager(): Promise<void> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const state = await this.sh('systemctl is-system-running', { timeoutMs: 30_000 });
      if (state.stdout.trim() && state.stdout.trim() !== 'offline') return;
      if (Date.now() > deadline) throw new Error(`the container's systemd did not answer within 120 s:\n${state.stderr}\n${this.bootLog()}`);
      await sleep(250);
    }
  }

  /**
   * The container's init shares its cgroup with no other container's processes (the
   * soak counted other e2e jobs' gateways as its own before each container had
   * cgroups of its own: cgroups.ts).
   */
  private assertOwnCgroup(): void {
    const dir = unifiedCgroupOf(this.initPid);
    if (!dir) return;
    const procs = path.join(dir, 'cgroup.procs');
    const pids = fs.readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number);
    const foreign = foreignProcesses(pids, pidNamespace(this.initPid) ?? '');
    if (foreign.length > 0) throw new Error(`the container's init shares its cgroup (${procs}) with ${foreign.length} processes of another container (pids ${foreign.join(', ')}): counts of its processes and memory would include theirs`);
  }

  bootLog(): string {
    try {
      return fs.readFileSync(this.nspawnLog, 'utf8').slice(-4000);
    } catch {
      return '';
    }
  }

  /** Runs a bash script inside the container as root (environment: BASE_ENV + env; no secrets here: they would be in our own environment only, never argv). */
  async sh(script: string, options: { timeoutMs?: number; env?: Record<string, string>; input?: string } = {}): Promise<ShResult> {
    const started = Date.now();
    // Without CAP_NET_ADMIN: the container shares this machine's network namespace, so
    // nothing run inside may change its firewall or network (as in a container VPS).
    // In the container's own cgroup (cgroups.ts, EXEC_CGROUP), as a command on a server runs.
    if (this.execDirs.length === 0) this.execDirs = execCgroups(this.initPid);
    const enter = this.execDirs.map((dir) => `echo $$ > ${dir}/cgroup.procs; `).join('');
    const command = ['setpriv', '--bounding-set', '-net_admin', 'nsenter', '-t', String(this.initPid), '-a', '/bin/bash', '-c', `cd /root && ${script}`];
    const result = await execa('sh', ['-c', `set -e; ${enter}exec "$@"`, 'sh', ...command], {
      env: { ...BASE_ENV, ...options.env },
      extendEnv: false,
      reject: false,
      timeout: options.timeoutMs ?? 120_000,
      input: options.input,
      stripFinalNewline: false,
    });
    return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? '') + (result.timedOut ? `\n[timed out after ${options.timeoutMs ?? 120_000} ms]` : ''), ms: Date.now() - started };
  }

  /** Like sh, but throws with both outputs on a non-zero exit. */
  async ok(script: string, options: { timeoutMs?: number; env?: Record<string, string>; input?: string } = {}): Promise<string> {
    const result = await this.sh(script, options);
    if (result.exitCode !== 0) throw new Error(`in the container: ${script}\nexit ${result.exitCode}\nstdout: ${result.stdout.slice(-3000)}\nstderr: ${result.stderr.slice(-3000)}`);
    return result.stdout;
  }

  /** A path of the container's root directory as the host sees it (not for tmpfs mounts such as /tmp, /run). */
  hostPath(p: string): string {
    return path.join(this.root, p);
  }

  /** Powers the container off (SIGTERM to nspawn = orderly shutdown), kills what is left, removes the root copy. */
  async destroy(): Promise<void> {
    if (this.nspawnPidValue && alive(this.nspawnPidValue)) {
      signal(this.nspawnPidValue, 'SIGTERM');
      await Promise.race([this.exited, sleep(20_000)]);
      if (alive(this.nspawnPidValue)) {
        this.options.log('systemd-nspawn did not stop within 20 s; killing it');
        if (this.initPid) signal(this.initPid, 'SIGKILL'); // ends every process of the container's PID namespace
        signal(this.nspawnPidValue, 'SIGKILL');
        await Promise.race([this.exited, sleep(10_000)]);
      }
    }
    await removeCgroups(this.cgroups).catch((error: Error) => this.options.log(error.message));
    await unmountScratch(this.root);
    // What the host's disk gave this server, read after the unmount wrote the image out
    // (scripts/e2e.mjs plans the jobs' disk by it).
    const image = path.join(path.dirname(this.root), 'root.img');
    const used = fs.existsSync(image) ? fs.statSync(image).blocks * 512 : 0;
    if (used > 0) this.options.log(`${this.options.hostname}: its root image took ${(used / 2 ** 30).toFixed(1)} GiB of the host's disk`);
    await fs.promises.rm(path.dirname(this.root), { recursive: true, force: true });
    fs.rmSync(this.runningFile, { force: true });
  }
}

/**
 * The container's root lives in a file system of its own: a sparse image next to it,
 * ext4 without discard, loop-mounted. Removing a deployed root (a hundred thousand files)
 * from a host file system mounted with `discard` takes minutes (a discard per file); the
 * image goes with one unmount and the removal of one file.
 */
async function mountScratch(base: string, root: string): Promise<void> {
  const image = path.join(base, 'root.img');
  await execa('truncate', ['-s', '24G', image]);
  await execa('mkfs.ext4', ['-q', '-F', '-m', '0', '-O', '^has_journal', '-E', 'nodiscard,lazy_itable_init=1', image], { timeout: 120_000 });
  await execa('mount', ['-o', 'loop,nodiscard,noatime', image, root], { timeout: 60_000 });
}

async function unmountScratch(root: string): Promise<void> {
  if ((await execa('mountpoint', ['-q', root], { reject: false })).exitCode !== 0) return;
  const r = await execa('umount', [root], { reject: false, timeout: 60_000 });
  // Busy (a process of the container not reaped yet): detach now, freed when unused.
  if (r.exitCode !== 0) await execa('umount', ['-l', root], { reject: false, timeout: 60_000 });
}

function findChild(parent: number, comm: string): number | undefined {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...
      const close = stat.lastIndexOf(')');
      const name = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      if (ppid === parent && name === comm) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Ports the container's services will bind on the shared loopback; a holder on the host breaks the run. */
export function hostPortHolders(ports: number[]): string[] {
  const out = execFileSync('ss', ['-Hltn'], { encoding: 'utf8' });
  return ports.filter((p) => out.split('\n').some((line) => new RegExp(`:${p}\\s`).test(line))).map(String);
}
