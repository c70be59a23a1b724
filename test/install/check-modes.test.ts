import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINARY } from '../helpers/binary.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';
import { snapshotDiff, snapshotTree } from '../hostile/harness.js';

/**
 * Every command that has --check / --diff, with every other flag it takes, leaves the
 * server byte-identical (issue 12): the sandbox root and the stand-ins' state (service
 * states, packages, the journal), with modes, sizes and mtimes of files and folders.
 */

function serverState(sb: Sandbox): Map<string, string> {
  return new Map([
    ...[...snapshotTree(sb.root)].map(([k, v]) => [`root:${k}`, v] as const),
    ...[...snapshotTree(sb.state, ['calls.log', 'environ'])].map(([k, v]) => [`state:${k}`, v] as const),
  ]);
}

const CHECK_FLAGS = [['--check'], ['--diff'], ['--check', '--diff']];
const INSTALL_MODIFIERS = [
  [],
  ['--reset-clean'],
  ['--reset-clean', '--yes'],
  ['--reset-clean', '--yes', '--json'],
  ['--rotate-channel-secrets'],
  ['--channel'],
  ['--channel', '--rotate-channel-secrets'],
  ['--catalog'],
  ['--model', 'another-model', '--json'],
];
const RENDER = ['runtime-config', 'unit', 'guard-script', 'cron', 'channel-env', 'nginx', 'dropin'];

function combinations(archive: string, deployed: boolean): Array<{ args: string[]; expect: RegExp; code?: number }> {
  const out: Array<{ args: string[]; expect: RegExp; code?: number }> = [];
  for (const check of CHECK_FLAGS) {
    for (const mod of INSTALL_MODIFIERS) {
      const reset = mod.includes('--reset-clean');
      out.push({ args: ['install', ...check, ...mod], expect: reset ? /would (back up|remove)|"mode": ?"check"/ : /plan:|"mode": ?"check"/ });
    }
    for (const mod of [[], ['--channel'], ['--rotate-channel-secrets'], ['--json']]) {
      out.push({ args: ['restore', archive, ...check, ...mod], expect: /would restore|"mode": ?"check"/ });
    }
  }
  // Nothing deployed: the guard refuses (exit 2), and still writes nothing.
  out.push(deployed ? { args: ['guard', '--check'], expect: /would restore|nothing to restore/ } : { args: ['guard', '--check'], expect: /no stored answers/, code: 2 });
  if (deployed) out.push({ args: ['guard', '--check', '--json'], expect: /"check": ?true/ });
  for (const file of RENDER) out.push({ args: ['render', file, '--channel'], expect: /\S/ });
  return out;
}

let backup = '';
const sandboxes: Sandbox[] = [];

beforeAll(async () => {
  // A real backup, made by --reset-clean on its own sandbox.
  const source = await makeSandbox();
  sandboxes.push(source);
  expect((await source.install([...FIRST_INSTALL.args, '--channel'], FIRST_INSTALL.env)).exitCode).toBe(0);
  const reset = await source.install(['--reset-clean', '--yes', '--json']);
  expect(reset.exitCode, String(reset.stderr)).toBe(0);
  const dir = tempDir('sd-check-archive-');
  backup = path.join(dir, 'backup.tar.gz');
  fs.copyFileSync(path.join(source.root, JSON.parse(String(reset.stdout)).backup), backup);
}, 120_000);
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

async function runAll(sb: Sandbox, env: Record<string, string>, deployed: boolean): Promise<number> {
  let runs = 0;
  // A relative archive path is read from the working folder (an absolute one maps into the sandbox).
  for (const c of combinations(path.basename(backup), deployed)) {
    const before = serverState(sb);
    const result = await execa(BINARY, c.args, { env: sb.env(env), extendEnv: false, reject: false, timeout: 60_000, input: '', cwd: path.dirname(backup) });
    const output = `${String(result.stdout)}\n${String(result.stderr)}`;
    expect(output, c.args.join(' ')).not.toContain('Internal error');
    expect(result.exitCode, `${c.args.join(' ')}:\n${output}`).toBe(c.code ?? 0);
    expect(output, c.args.join(' ')).toMatch(c.expect);
    expect(snapshotDiff(before, serverState(sb)), `${c.args.join(' ')} changed the server`).toEqual([]);
    runs++;
  }
  return runs;
}

describe('check and diff modes write nothing, whatever the other flags', () => {
  it('on an installed server with drift (a direct provider added by hand)', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    expect((await sb.install([...FIRST_INSTALL.args, '--channel'], FIRST_INSTALL.env)).exitCode).toBe(0);
    const config = path.join(sb.root, 'root/.openclaw/openclaw.json');
    const cfg = JSON.parse(fs.readFileSync(config, 'utf8'));
    cfg.models.providers.vendor = { baseUrl: 'https://vendor.example/v1', apiKey: 'sk-vendor-direct', models: [] };
    fs.writeFileSync(config, JSON.stringify(cfg), { mode: 0o644 });
    const runs = await runAll(sb, { SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }, true);
    process.stdout.write(`check/diff combinations on an installed server: ${runs}, all byte-identical\n`);
  }, 600_000);

  it('on a fresh server (nothing deployed)', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const runs = await runAll(sb, { ...FIRST_INSTALL.env, SERVICE_CUSTOMER_NAME: 'Fresh Co' }, false);
    process.stdout.write(`check/diff combinations on a fresh server: ${runs}, all byte-identical\n`);
  }, 600_000);
});
