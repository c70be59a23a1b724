// A booted Debian 12 container for the e2e: a debootstrap root (cached as a tarball
// keyed by its package list), copied fresh for every run, booted with
// `systemd-nspawn -b` (real systemd as PID 1, user managers, cron), entered with
// nsenter. The container shares the host's network namespace, so loopback stand-ins on
// the host are reachable from inside, and the container's own services bind the host's
// loopback too.
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { E2E_CACHE } from './artifacts.js';

export const SUITE = 'bookworm';
/** What a cloud image of a server has before the install: systemd, a user bus, curl. */
export const BASE_PACKAGES = ['systemd', 'systemd-sysv', 'dbus', 'libpam-systemd', 'dbus-user-session', 'curl', 'ca-certificates'];
/** Written while a container runs, so scripts/e2e.mjs can clean up after a killed run. */
export const RUNNING_FILE = path.join(E2E_CACHE, 'running.json');

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
 * The Debian mirror this machine's apt uses (deb822 .sources or sources.list), read at
 * run time so no host name is written into the repository. Undefined: debootstrap's default.
 */
export function hostDebianMirror(): string | undefined {
  const dir = '/etc/apt/sources.list.d';
  const files = [...(fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.sources') || f.endsWith('.list')).map((f) => path.join(dir, f)) : []), '/etc/apt/sources.list'];
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
        if (uri && suites.includes(SUITE) && /^deb\b/.test(field('Types') ?? '') && !/^\s*Enabled:\s*no/mi.test(stanza)) return uri;
      }
    } else {
      for (const line of text.split('\n')) {
        const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
        if (m && m[2] === SUITE) return m[1];
      }
    }
  }
  return undefined;
}

/** The cached root tarball for BASE_PACKAGES, made with debootstrap when missing (~1 min). */
export async function ensureRootfs(log: (line: string) => void): Promise<{ tarball: string; cached: boolean; ms: number }> {
  const key = createHash('sha256').update(JSON.stringify({ suite: SUITE, variant: 'minbase', arch: process.arch, packages: BASE_PACKAGES })).digest('hex').slice(0, 16);
  const tarball = path.join(E2E_CACHE, `rootfs-${SUITE}-${key}.tar`);
  if (fs.existsSync(tarball)) return { tarball, cached: true, ms: 0 };
  const started = Date.now();
  fs.mkdirSync(E2E_CACHE, { recursive: true });
  const build = path.join(E2E_CACHE, `rootfs-build-${process.pid}`);
  fs.rmSync(build, { recursive: true, force: true });
  const mirror = hostDebianMirror();
  log(`debootstrap ${SUITE} (minbase + ${BASE_PACKAGES.length} packages) into the cache; this happens once per package list`);
  try {
    const args = ['--variant=minbase', `--include=${BASE_PACKAGES.join(',')}`, SUITE, build, ...(mirror ? [mirror] : [])];
    const result = await execa('debootstrap', args, { reject: false, timeout: 15 * 60_000, all: true });
    if (result.exitCode !== 0) throw new Error(`debootstrap failed (exit ${result.exitCode}):\n${String(result.all).slice(-3000)}`);
    // Per-run identity is set at boot; the cache holds no machine id of its own.
    fs.writeFileSync(path.join(build, 'etc', 'machine-id'), '');
    const partial = `${tarball}.partial-${process.pid}`;
    await execa('tar', ['-C', build, '--numeric-owner', '-cf', partial, '.'], { timeout: 10 * 60_000 });
    fs.renameSync(partial, tarball);
  } finally {
    fs.rmSync(build, { recursive: true, force: true });
  }
  return { tarball, cached: false, ms: Date.now() - started };
}

export interface ContainerOptions {
  tarball: string;
  hostname: string;
  /** host dir -> container dir bind mounts (download caches). */
  binds?: Array<[string, string]>;
  /** Files to place before boot: container path -> content and mode. */
  files?: Array<{ path: string; content: string | Buffer; mode: number }>;
  log: (line: string) => void;
}

export class Container {
  readonly root: string;
  private nspawnPid = 0;
  initPid = 0;
  private exited: Promise<void> = Promise.resolve();
  private nspawnLog: string;

  private constructor(root: string, private readonly options: ContainerOptions) {
    this.root = root;
    this.nspawnLog = path.join(path.dirname(root), 'nspawn.log');
  }

  /** Unpacks a fresh copy of the root, places the files and boots it; waits for systemd. */
  static async boot(options: ContainerOptions): Promise<Container> {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-e2e-'));
    const root = path.join(base, 'root');
    fs.mkdirSync(root);
    const container = new Container(root, options);
    try {
      await execa('tar', ['-C', root, '--numeric-owner', '-xf', options.tarball], { timeout: 5 * 60_000 });
      fs.writeFileSync(path.join(root, 'etc', 'hostname'), `${options.hostname}\n`);
      for (const file of options.files ?? []) {
        const real = path.join(root, file.path);
        fs.mkdirSync(path.dirname(real), { recursive: true, mode: 0o700 });
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
    const out = fs.openSync(this.nspawnLog, 'a');
    const child = spawn('systemd-nspawn', ['--register=no', '--keep-unit', '--console=passive', `--machine=${this.options.hostname}`, ...binds, '-D', this.root, '-b'], {
      stdio: ['ignore', out, out],
      detached: true,
    });
    fs.closeSync(out);
    this.nspawnPid = child.pid ?? 0;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.unref();
    fs.writeFileSync(RUNNING_FILE, JSON.stringify({ nspawnPid: this.nspawnPid, root: this.root, harnessPid: process.pid }) + '\n');

    // The container's init is the child of systemd-nspawn named systemd.
    const deadline = Date.now() + 30_000;
    while (!this.initPid) {
      if (child.exitCode !== null) throw new Error(`systemd-nspawn exited (${child.exitCode}):\n${this.bootLog()}`);
      if (Date.now() > deadline) throw new Error(`no systemd under systemd-nspawn after 30 s:\n${this.bootLog()}`);
      this.initPid = findChild(this.nspawnPid, 'systemd') ?? 0;
      if (!this.initPid) await sleep(100);
    }
    fs.writeFileSync(RUNNING_FILE, JSON.stringify({ nspawnPid: this.nspawnPid, initPid: this.initPid, root: this.root, harnessPid: process.pid }) + '\n');
    // The system bus comes up a moment after init; until then systemctl cannot connect.
    let state = await this.sh('systemctl is-system-running --wait', { timeoutMs: 120_000 });
    const bootDeadline = Date.now() + 120_000;
    while (!state.stdout.trim() && Date.now() < bootDeadline) {
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
    const result = await execa('setpriv', ['--bounding-set', '-net_admin', 'nsenter', '-t', String(this.initPid), '-a', '/bin/bash', '-c', `cd /root && ${script}`], {
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
    if (this.nspawnPid && alive(this.nspawnPid)) {
      signal(this.nspawnPid, 'SIGTERM');
      await Promise.race([this.exited, sleep(20_000)]);
      if (alive(this.nspawnPid)) {
        this.options.log('systemd-nspawn did not stop within 20 s; killing it');
        if (this.initPid) signal(this.initPid, 'SIGKILL'); // ends every process of the container's PID namespace
        signal(this.nspawnPid, 'SIGKILL');
        await Promise.race([this.exited, sleep(10_000)]);
      }
    }
    fs.rmSync(path.dirname(this.root), { recursive: true, force: true });
    fs.rmSync(RUNNING_FILE, { force: true });
  }
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
