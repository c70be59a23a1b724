import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { shippedLock } from '../../src/runtime/locks.js';
import { runBinary } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { FIRST_INSTALL, OPENCLAW_VERSION, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

/**
 * Issue 29 item 2: OpenClaw runs from a project folder installed from the shipped lock
 * (npm ci), through the link openclaw-current; a server the earlier releases installed
 * (OpenClaw global in the Node prefix, the unit and wrapper naming it there) converges
 * on a re-run with its state untouched, and an upgrade from it rolls back to it.
 */

const rel = (p: string) => p.slice(1);
const GLOBAL_PACKAGE = `${LAYOUT.nodePrefix}/lib/node_modules/openclaw`;
const GLOBAL_ENTRY = `${GLOBAL_PACKAGE}/openclaw.mjs`;
const PROJECT_PACKAGE = `${LAYOUT.openclawProject}/node_modules/openclaw`;
/** The agent's state a migration must not touch: a session transcript, memory, a paired device. */
const STATE_FILES = ['root/.openclaw/agents/main/sessions/e2e-session.jsonl', 'root/.openclaw/workspace/MEMORY.md', 'root/.openclaw/devices/paired.json'];

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

const version = (sb: Sandbox, dir: string): string | undefined => {
  const text = sb.read(`${rel(dir)}/package.json`);
  return text ? (JSON.parse(text) as { version?: string }).version : undefined;
};
const hashes = (sb: Sandbox): string[] => STATE_FILES.map((f) => createHash('sha256').update(fs.readFileSync(path.join(sb.root, f))).digest('hex'));
const link = (sb: Sandbox): string | undefined => {
  try {
    return fs.readlinkSync(path.join(sb.root, rel(LAYOUT.openclawCurrent)));
  } catch {
    return undefined;
  }
};

/**
 * A server as the releases before the locks left it: OpenClaw `openclaw` global in the
 * Node prefix with npm's bin link, no project and no link, the unit and the wrapper
 * running the global entry; state of the agent's own.
 */
async function earlierLayout(openclaw = OPENCLAW_VERSION): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  const root = (p: string) => path.join(sb.root, rel(p));
  fs.mkdirSync(path.dirname(root(GLOBAL_PACKAGE)), { recursive: true });
  fs.renameSync(root(PROJECT_PACKAGE), root(GLOBAL_PACKAGE));
  fs.writeFileSync(root(`${GLOBAL_PACKAGE}/package.json`), `{"name":"openclaw","version":"${openclaw}"}\n`);
  fs.rmSync(root(LAYOUT.openclawProject), { recursive: true });
  fs.rmSync(root(LAYOUT.openclawCurrent));
  fs.rmSync(root(`${LAYOUT.nodePrefix}/bin/openclaw`), { force: true });
  fs.symlinkSync('../lib/node_modules/openclaw/openclaw.mjs', root(`${LAYOUT.nodePrefix}/bin/openclaw`));
  for (const file of [LAYOUT.gatewayUnitFile, LAYOUT.openclawWrapper]) {
    fs.writeFileSync(root(file), fs.readFileSync(root(file), 'utf8').replaceAll(LAYOUT.openclawBin, GLOBAL_ENTRY));
  }
  for (const [i, file] of STATE_FILES.entries()) {
    fs.mkdirSync(path.dirname(path.join(sb.root, file)), { recursive: true });
    fs.writeFileSync(path.join(sb.root, file), `state ${i} written on the earlier layout\n`);
  }
  sb.clearCalls();
  return sb;
}

async function doctor(sb: Sandbox, ...ids: string[]): Promise<Array<{ id: string; status: string; message?: string; detail?: string }>> {
  const result = await runBinary(['doctor', '--json', ...ids], { env: sb.env() });
  return JSON.parse(String(result.stdout)).checks;
}

describe('the locked layout', { timeout: budget(300_000) }, () => {
  it('a fresh install: npm ci of the shipped lock in a staged project, renamed in; the link, the unit and the wrapper run it; doctor finds the lock\'s tree', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const run = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const npm = sb.calls('npm').find((c) => c.args.includes(path.join(sb.root, LAYOUT.openclawNext)))!;
    expect(npm.args).toEqual(['ci', '--prefix', path.join(sb.root, LAYOUT.openclawNext), '--no-audit', '--no-fund', '--ignore-scripts']);
    // The install scripts npm install ran, named: npm ci alone would also build every binding.gyp.
    expect(sb.calls('npm').find((c) => c.args[0] === 'rebuild' && c.args.includes(path.join(sb.root, LAYOUT.openclawNext)))?.args.slice(3)).toEqual(['@google/genai', 'koffi', 'openclaw', 'protobufjs']);
    expect(sb.calls('npm').filter((c) => c.args.includes('--global'))).toEqual([]);
    const shipped = shippedLock('openclaw', process.arch === 'arm64' ? 'arm64' : 'x64')!;
    expect(sb.read(`${rel(LAYOUT.openclawProject)}/package-lock.json`)).toBe(shipped.lockText);
    expect(sb.read(`${rel(LAYOUT.openclawProject)}/package.json`)).toBe(shipped.manifestText);
    expect(fs.existsSync(path.join(sb.root, rel(LAYOUT.openclawNext)))).toBe(false);
    expect(link(sb)).toBe('openclaw/node_modules/openclaw');
    expect(version(sb, LAYOUT.openclawCurrent)).toBe(OPENCLAW_VERSION);
    expect(sb.read(rel(LAYOUT.gatewayUnitFile))).toContain(`ExecStart=${LAYOUT.nodePrefix}/bin/node ${LAYOUT.openclawBin} gateway`);
    expect(sb.read(rel(LAYOUT.openclawWrapper))).toContain(`"${LAYOUT.openclawBin}"`);
    expect(fs.existsSync(path.join(sb.root, rel(GLOBAL_PACKAGE)))).toBe(false);
    const checks = await doctor(sb, 'agent-runtime', 'runtime-trees');
    expect(checks.map((c) => [c.id, c.status])).toEqual([['agent-runtime', 'pass'], ['runtime-trees', 'pass']]);
    expect(JSON.stringify(checks[1])).toMatch(/OpenClaw [\d.]+: the lock's tree/);

    // A package of the tree changed by hand: the re-run installs the tree again from the lock.
    fs.writeFileSync(path.join(sb.root, rel(LAYOUT.openclawProject), 'node_modules/@anthropic-ai/sdk/package.json'), '{"name":"@anthropic-ai/sdk","version":"0.0.1-changed"}');
    sb.clearCalls();
    const again = await sb.install(['--non-interactive', '--json']);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(JSON.parse(String(again.stdout)).steps.find((s: { id: string }) => s.id === 'agent-runtime').status).toBe('changed');
    expect(sb.calls('npm').map((c) => c.args[0])).toEqual(['ci', 'rebuild']);
    expect((await doctor(sb, 'runtime-trees'))[0]!.status).toBe('pass');
  });

  it('a server of the earlier layout converges on a re-run: the project from the lock, the link, the unit; the global package gone; its state untouched; a second re-run changes nothing', async () => {
    const sb = await earlierLayout();
    const before = hashes(sb);
    const agentRuntime = (await doctor(sb, 'agent-runtime'))[0]!;
    expect(agentRuntime.status).toBe('fail');
    expect(JSON.stringify(agentRuntime)).toContain(`runs from the global install of an earlier release (${GLOBAL_PACKAGE})`);

    const plan = await sb.install(['--check']);
    expect(String(plan.stdout)).toContain(`OpenClaw ${OPENCLAW_VERSION}: from the global install to the shipped lock`);
    expect(fs.existsSync(path.join(sb.root, rel(GLOBAL_PACKAGE)))).toBe(true);

    const run = await sb.install(['--non-interactive', '--json']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(JSON.parse(String(run.stdout)).upgrade).toBeUndefined();
    expect(link(sb)).toBe('openclaw/node_modules/openclaw');
    expect(version(sb, PROJECT_PACKAGE)).toBe(OPENCLAW_VERSION);
    expect(fs.existsSync(path.join(sb.root, rel(GLOBAL_PACKAGE)))).toBe(false);
    expect(fs.existsSync(path.join(sb.root, rel(`${LAYOUT.nodePrefix}/bin/openclaw`)))).toBe(false);
    expect(sb.read(rel(LAYOUT.gatewayUnitFile))).not.toContain(GLOBAL_ENTRY);
    expect(sb.read(rel(LAYOUT.openclawWrapper))).not.toContain(GLOBAL_ENTRY);
    // The gateway was stopped before the global package went, and started on the project.
    const calls = sb.calls('systemctl').map((c) => c.args.join(' '));
    const stop = calls.findIndex((c) => c.includes('stop openclaw-gateway.service'));
    expect(stop).toBeGreaterThanOrEqual(0);
    expect(calls.slice(stop).some((c) => /(re)?start openclaw-gateway\.service/.test(c))).toBe(true);
    expect(fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active'))).toBe(true);
    expect(hashes(sb)).toEqual(before);
    expect((await doctor(sb, 'agent-runtime', 'runtime-trees')).map((c) => c.status)).toEqual(['pass', 'pass']);

    sb.clearCalls();
    const third = await sb.install(['--non-interactive', '--json']);
    expect(third.exitCode).toBe(0);
    expect(JSON.parse(String(third.stdout)).recap.changed).toBe(0);
    expect(sb.calls('npm')).toEqual([]);
  });

  it('an upgrade from the earlier layout keeps the global package as the previous release; rollback puts it back where it ran, the link on it; the next install upgrades again', async () => {
    const OLD = '2026.9.1';
    const sb = await earlierLayout(OLD);
    const up = await sb.install(['--non-interactive', '--json']);
    expect(up.exitCode, String(up.stderr)).toBe(0);
    expect(JSON.parse(String(up.stdout)).upgrade).toMatchObject({ from: OLD, to: OPENCLAW_VERSION });
    expect(version(sb, LAYOUT.openclawCurrent)).toBe(OPENCLAW_VERSION);
    expect(link(sb)).toBe('openclaw/node_modules/openclaw');
    expect(version(sb, LAYOUT.openclawPrevious)).toBe(OLD);
    expect(fs.existsSync(path.join(sb.root, rel(GLOBAL_PACKAGE)))).toBe(false);
    const status = JSON.parse(String((await runBinary(['status', '--json'], { env: sb.env() })).stdout));
    expect(status.components.openclaw).toMatchObject({ installed: OPENCLAW_VERSION, previous: OLD });

    const back = await runBinary(['rollback', '--yes', '--json'], { env: sb.env() });
    expect(back.exitCode, String(back.stderr)).toBe(0);
    expect(JSON.parse(String(back.stdout))).toMatchObject({ ok: true, from: OPENCLAW_VERSION, to: OLD });
    expect(version(sb, GLOBAL_PACKAGE)).toBe(OLD);
    expect(link(sb)).toBe('node/lib/node_modules/openclaw');
    expect(version(sb, LAYOUT.openclawCurrent)).toBe(OLD);
    expect(fs.existsSync(path.join(sb.root, rel(LAYOUT.openclawProject)))).toBe(false);
    expect(fs.existsSync(path.join(sb.root, rel(LAYOUT.openclawPrevious)))).toBe(false);
    expect(fs.existsSync(path.join(sb.state, 'user-openclaw-gateway.service.active'))).toBe(true);
    expect(JSON.stringify((await doctor(sb, 'agent-runtime'))[0])).toContain(`OpenClaw ${OLD} is installed, this service-deploy pins ${OPENCLAW_VERSION}`);

    const again = await sb.install(['--non-interactive', '--json']);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(JSON.parse(String(again.stdout)).upgrade).toMatchObject({ from: OLD, to: OPENCLAW_VERSION });
    expect(link(sb)).toBe('openclaw/node_modules/openclaw');
    expect(version(sb, LAYOUT.openclawPrevious)).toBe(OLD);
  });
});
