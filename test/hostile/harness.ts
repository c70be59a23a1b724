import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BINARY } from '../helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The hostile-input suite (issue 12): one kind of bad input per case, run against an
 * installed sandbox server. Each case asserts the exit code (2 unless it says
 * otherwise), a message naming the field, variable, flag or archive entry, no
 * "Internal error", and a byte-identical server: every path under the sandbox root
 * and the stand-ins' state, with type, mode, size, mtime (folders too, so a temp file
 * made and removed again shows) and link target.
 */
export interface HostileCase {
  /** What kind of bad input (unique across the suite). */
  kind: string;
  args: string[];
  env?: Record<string, string | undefined>;
  /** Exit code expected (default 2: refused). */
  code?: number;
  /** The message must match: it names the field / variable / flag / entry. */
  mention: RegExp;
  /** Files for the case, written outside the sandbox (path relative to the inputs folder -> content). */
  inputs?: Record<string, string | Buffer>;
  /** Makes special inputs (a FIFO) in the inputs folder. */
  setup?: (inputs: string) => void;
  /** Changes the server before the case (a hand-edited file); returns how to undo it. */
  tamper?: (sb: Sandbox) => () => void;
  stdin?: string;
}

export interface HostileWorld {
  sb: Sandbox;
  inputs: string;
}

/**
 * path -> "type mode size mtime [target]" of everything under `dir`, except the
 * stand-ins' call log and their journal (`syslog`): a refused hourly guard run still
 * says so in the journal, where doctor looks for the guard's last run.
 */
export function snapshotTree(dir: string, skip: readonly string[] = []): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d)) {
      const full = path.join(d, name);
      if (skip.includes(path.relative(dir, full))) continue;
      const st = fs.lstatSync(full);
      const type = st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : st.isFile() ? 'f' : 'o';
      out.set(path.relative(dir, full), `${type} ${(st.mode & 0o7777).toString(8)} ${type === 'd' ? '-' : st.size} ${st.mtimeMs}${type === 'l' ? ` -> ${fs.readlinkSync(full)}` : ''}`);
      if (type === 'd') walk(full);
    }
  };
  walk(dir);
  out.set('.', `d ${(fs.statSync(dir).mode & 0o7777).toString(8)} - ${fs.statSync(dir).mtimeMs}`);
  return out;
}

export function serverSnapshot(sb: Sandbox): Map<string, string> {
  const root = snapshotTree(sb.root);
  const state = snapshotTree(sb.state, ['calls.log', 'syslog', 'environ']);
  return new Map([...[...root].map(([k, v]) => [`root:${k}`, v] as const), ...[...state].map(([k, v]) => [`state:${k}`, v] as const)]);
}

/** What changed between two snapshots, in words (empty when identical). */
export function snapshotDiff(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of before) if (after.get(k) !== v) out.push(`${k}: ${v} -> ${after.get(k) ?? '(gone)'}`);
  for (const [k, v] of after) if (!before.has(k)) out.push(`${k}: new ${v}`);
  return out;
}

/** An installed sandbox (with the channel) for a hostile file; closed after it. */
export function hostileWorld(): HostileWorld {
  const world = {} as HostileWorld;
  beforeAll(async () => {
    world.sb = await makeSandbox();
    world.inputs = tempDir('sd-hostile-');
    const first = await world.sb.install([...FIRST_INSTALL.args, '--channel'], FIRST_INSTALL.env);
    if (first.exitCode !== 0) throw new Error(`the install for the hostile suite failed:\n${first.stderr}`);
    // One guard run, as cron makes it: the journal exists from then on, like on a server.
    const guard = await execa(BINARY, ['guard'], { env: world.sb.env(), extendEnv: false, reject: false });
    if (guard.exitCode !== 0) throw new Error(`the guard for the hostile suite failed:\n${guard.stderr}`);
  }, 120_000);
  afterAll(async () => world.sb?.close());
  return world;
}

export async function runCase(world: HostileWorld, c: HostileCase): Promise<{ exitCode: number; output: string }> {
  for (const [name, content] of Object.entries(c.inputs ?? {})) {
    fs.mkdirSync(path.dirname(path.join(world.inputs, name)), { recursive: true });
    fs.writeFileSync(path.join(world.inputs, name), content, { mode: 0o600 });
  }
  c.setup?.(world.inputs);
  const undo = c.tamper?.(world.sb);
  try {
    const before = serverSnapshot(world.sb);
    const env = world.sb.env();
    for (const [k, v] of Object.entries(c.env ?? {})) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    const result = await execa(BINARY, c.args, {
      env,
      extendEnv: false,
      reject: false,
      cwd: world.inputs,
      timeout: 60_000,
      input: c.stdin ?? '',
    });
    const output = `${String(result.stdout)}\n${String(result.stderr)}`;
    const changed = snapshotDiff(before, serverSnapshot(world.sb));
    expect(changed, `the server changed (${c.kind}):\n${output}`).toEqual([]);
    return { exitCode: result.exitCode ?? -1, output };
  } finally {
    undo?.();
  }
}

/** One `it` per case; prints how many kinds this file ran. */
export function hostileCases(world: HostileWorld, title: string, cases: readonly HostileCase[]): void {
  for (const c of cases) {
    it(c.kind, async () => {
      const { exitCode, output } = await runCase(world, c);
      expect(output, c.kind).not.toContain('Internal error');
      expect(exitCode, `${c.kind}:\n${output}`).toBe(c.code ?? 2);
      expect(output, c.kind).toMatch(c.mention);
      // A refusal (exit 2) says that nothing was changed (or sent, or run): README "Exit codes".
      if (exitCode === 2) expect(output, c.kind).toMatch(/nothing (was|is) (changed|sent|run|written|removed|put back)|nothing changed/i);
    });
  }
  afterAll(() => {
    process.stdout.write(`hostile inputs (${title}): ${cases.length} kinds\n`);
  });
}
