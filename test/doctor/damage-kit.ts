import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { BINARY } from '../helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A deployed server in a sandbox, made by the real install (with the channel), that
 * doctor passes whole; and a way back to exactly that state after each damage (a
 * pristine copy of the root and the stand-ins' state, synced back by a quick check
 * on type, size, mtime, mode, owner and link target).
 */
export interface DamageSandbox {
  sb: Sandbox;
  env(): Record<string, string>;
  /** The sandbox path of a server path. */
  real(p: string): string;
  doctor(args: string[]): Promise<{ exitCode: number; json: DoctorJson; stdout: string }>;
  systemctl(...args: string[]): Promise<void>;
  state(name: string, content?: string): void;
  /** Puts everything back as it was after the install, gateway process included. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export interface CheckJson {
  id: string;
  status: 'pass' | 'warn' | 'fail' | 'skip' | 'crashed';
  message: string;
  fix?: string;
  commands?: string[];
  fixable: boolean;
  action?: string;
}

export interface DoctorJson {
  ok: boolean;
  checks: CheckJson[];
  fixes?: Array<{ id: string; ok: boolean; error?: string }>;
  before?: CheckJson[];
}

const USER_ENV = { XDG_RUNTIME_DIR: '/run/user/0' };
/** Stand-in state that only grows (call log, recorded environments): never synced back. */
const STATE_KEEP = new Set(['calls.log', 'environ']);

export async function makeDamageSandbox(): Promise<DamageSandbox> {
  const sb = await makeSandbox();
  const state = (name: string, content = '') => fs.writeFileSync(path.join(sb.state, name), content);
  // The stand-ins behave like a live server: a real gateway process started with its
  // drop-in's variables, nginx listening while it runs.
  state('gateway-process');
  state('nginx-listens');
  state('ss-output', 'LISTEN 0 511 127.0.0.1:18789 0.0.0.0:* users:(("openclaw-gatewa",pid=4242,fd=22))\n');
  const env = () => sb.env({ SERVICE_HEALTH_TIMEOUT_MS: '2000' });
  const install = await sb.install([...FIRST_INSTALL.args, '--channel'], FIRST_INSTALL.env);
  if (install.exitCode !== 0) throw new Error(`install failed: ${String(install.stderr).slice(-2000)}`);
  state('syslog', `${Date.now() * 1000 - 600_000_000}\x1fservice-guard\x1fok: nothing to restore\n`);

  const pristine = { root: tempDir('sd-pristine-root-'), state: tempDir('sd-pristine-state-') };
  await execa('cp', ['-a', `${sb.root}/.`, pristine.root]);
  await execa('cp', ['-a', `${sb.state}/.`, pristine.state]);

  const systemctl = async (...args: string[]) => {
    await execa('systemctl', args, { env: { ...env(), ...USER_ENV }, extendEnv: false });
  };
  const realpidFile = path.join(sb.state, 'user-openclaw-gateway.service.realpid');
  const killGateway = () => {
    if (!fs.existsSync(realpidFile)) return;
    try {
      process.kill(Number(fs.readFileSync(realpidFile, 'utf8')));
    } catch {
      // already gone
    }
  };

  const kit: DamageSandbox = {
    sb,
    env,
    real: (p) => path.join(sb.root, p),
    doctor: async (args) => {
      const run = await execa(BINARY, ['doctor', '--json', ...args], { env: env(), extendEnv: false, reject: false, timeout: 120_000 });
      let json: DoctorJson;
      try {
        json = JSON.parse(String(run.stdout));
      } catch {
        throw new Error(`doctor printed no JSON (exit ${run.exitCode}): ${String(run.stdout).slice(0, 500)} ${String(run.stderr).slice(-1000)}`);
      }
      return { exitCode: run.exitCode ?? -1, json, stdout: String(run.stdout) };
    },
    systemctl,
    state,
    restore: async () => {
      killGateway();
      syncTree(pristine.root, sb.root, new Set());
      syncTree(pristine.state, sb.state, STATE_KEEP);
      await systemctl('--user', 'restart', 'openclaw-gateway.service');
    },
    close: async () => {
      killGateway();
      await sb.close();
    },
  };
  return kit;
}

/**
 * Makes `dst` like `src`: entries whose type, size, mtime, mode, owner or link target
 * differ are copied again (with their times, mode and owner), extra ones removed.
 */
export function syncTree(src: string, dst: string, keep: ReadonlySet<string>): void {
  const names = new Set(fs.readdirSync(src));
  for (const name of fs.readdirSync(dst)) {
    if (!names.has(name) && !keep.has(name)) fs.rmSync(path.join(dst, name), { recursive: true, force: true });
  }
  for (const name of names) {
    if (keep.has(name)) continue;
    const from = path.join(src, name);
    const to = path.join(dst, name);
    const a = fs.lstatSync(from);
    let b: fs.Stats | undefined;
    try {
      b = fs.lstatSync(to);
    } catch {
      b = undefined;
    }
    const sameType = b && a.isDirectory() === b.isDirectory() && a.isSymbolicLink() === b.isSymbolicLink() && a.isFile() === b.isFile();
    if (a.isDirectory()) {
      if (!sameType) {
        fs.rmSync(to, { recursive: true, force: true });
        fs.mkdirSync(to);
      }
      syncTree(from, to, new Set());
      fs.chownSync(to, a.uid, a.gid);
      fs.chmodSync(to, a.mode & 0o7777);
      continue;
    }
    const same =
      sameType &&
      (a.isSymbolicLink()
        ? fs.readlinkSync(from) === fs.readlinkSync(to)
        : a.size === b!.size && Math.abs(a.mtimeMs - b!.mtimeMs) < 1 && (a.mode & 0o7777) === (b!.mode & 0o7777) && a.uid === b!.uid && a.gid === b!.gid);
    if (same) continue;
    fs.rmSync(to, { recursive: true, force: true });
    if (a.isSymbolicLink()) {
      fs.symlinkSync(fs.readlinkSync(from), to);
      continue;
    }
    fs.copyFileSync(from, to);
    fs.chownSync(to, a.uid, a.gid);
    fs.chmodSync(to, a.mode & 0o7777);
    fs.utimesSync(to, a.atimeMs / 1000, a.mtimeMs / 1000);
  }
}
