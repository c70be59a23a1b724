import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBinary } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL, NODE_VERSION, OPENCLAW_VERSION, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

/**
 * Issue 19 item 3 for Node: a change of the pinned Node (templates/components.json
 * node.version vs the installed /opt/service-deploy/node) is an upgrade like one of
 * OpenClaw: verified backup, the new release unpacked beside the old prefix with the
 * global packages carried over, switched by rename (the old prefix kept whole), the
 * gateway started and checked; on a failure at any point the old prefix and the
 * pre-upgrade state come back, the gateway running, exit 1 and a report.
 */

/** The previous pin: every customer server deployed before the Node 26 release runs it. */
const OLD_NODE = '24.21.0';
const OLD_OPENCLAW = '2026.9.1';
const NODE_BIN = 'opt/service-deploy/node/bin/node';
/** The OpenClaw that runs (its project lies apart from the Node prefix: issue 29). */
const PKG = 'opt/service-deploy/openclaw-current/package.json';
/** A file only the old prefix has (what an earlier service-deploy unpacked). */
const MARK = 'opt/service-deploy/node/OLD-PREFIX';
const PREVIOUS = 'opt/service-deploy/node-previous';
const NEXT = 'opt/service-deploy/node-next';
const MIGRATED = 'root/.openclaw/migrated-by-doctor';
const GATEWAY = 'openclaw-gateway.service';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

const nodeVersion = (sb: Sandbox, bin = NODE_BIN): string => execFileSync(path.join(sb.root, bin), ['--version'], { env: { PATH: process.env.PATH, STANDIN_LOG: '/dev/null' } }).toString().trim().replace(/^v/, '');
const openclawVersion = (sb: Sandbox): string | undefined => {
  const text = sb.read(PKG);
  return text ? (JSON.parse(text) as { version: string }).version : undefined;
};
const exists = (sb: Sandbox, p: string): boolean => fs.existsSync(path.join(sb.root, p));
const gatewayActive = (sb: Sandbox): boolean => fs.existsSync(path.join(sb.state, `user-${GATEWAY}.active`));

/** A deployment on an earlier Node (and, with `openclaw`, an earlier OpenClaw), as an earlier service-deploy left it. */
async function deployedOnOldNode(options: { openclaw?: string } = {}): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  fs.writeFileSync(path.join(sb.root, NODE_BIN), `#!/bin/sh\n[ "$1" = --version ] && echo v${OLD_NODE}\nexit 0\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(sb.root, MARK), 'unpacked by an earlier service-deploy\n');
  if (options.openclaw) fs.writeFileSync(path.join(sb.root, PKG), `{"name":"openclaw","version":"${options.openclaw}"}\n`);
  fs.writeFileSync(path.join(sb.root, 'root/.openclaw/workspace/MEMORY.md'), '# Memory\nbefore the upgrade\n');
  sb.clearCalls();
  return sb;
}

/** After a failed upgrade: the old prefix (and its OpenClaw), the old state, the gateway running, exit 1 naming the stage. */
function expectRolledBack(sb: Sandbox, result: { exitCode?: number; stdout: unknown; stderr: unknown }, stage: string, openclaw = OPENCLAW_VERSION): void {
  expect(result.exitCode, `${String(result.stdout)}\n${String(result.stderr)}`).toBe(1);
  expect(String(result.stdout)).toContain(`Node ${OLD_NODE} -> ${NODE_VERSION} FAILED at ${stage}`);
  expect(String(result.stdout)).toMatch(/pre-upgrade backup: \/var\/backups\/service-deploy\/openclaw-pre-upgrade-\d{8}-\d{6}\.tar\.gz/);
  expect(nodeVersion(sb)).toBe(OLD_NODE);
  expect(exists(sb, MARK)).toBe(true);
  expect(openclawVersion(sb)).toBe(openclaw);
  expect(exists(sb, PREVIOUS)).toBe(false);
  expect(exists(sb, NEXT)).toBe(false);
  expect(exists(sb, 'opt/service-deploy/openclaw-previous')).toBe(false);
  expect(sb.read(MIGRATED)).toBeUndefined();
  expect(sb.read('root/.openclaw/workspace/MEMORY.md')).toContain('before the upgrade');
  expect(gatewayActive(sb)).toBe(true);
  const record = JSON.parse(sb.read('opt/service-deploy/upgrade.json')!);
  expect(record).toMatchObject({ from: openclaw, to: OPENCLAW_VERSION, node: { from: OLD_NODE, to: NODE_VERSION }, outcome: 'rolled-back', failed: { stage } });
}

describe('Node upgrades that roll back by themselves', { timeout: budget(300_000) }, () => {
  it('upgrades Node: backup (writers stopped) -> unpack beside with the global packages -> switch -> start -> health; status and rollback', async () => {
    const sb = await deployedOnOldNode();
    const plan = await sb.install(['--check']);
    expect(String(plan.stdout)).toContain(`Node ${OLD_NODE} -> ${NODE_VERSION} (upgrade: verified backup first`);
    expect(nodeVersion(sb)).toBe(OLD_NODE);

    const result = await sb.install(['--non-interactive', '--json']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const recap = jsonOutput('install', result.stdout);
    expect(recap).toMatchObject({ ok: true, upgrade: { from: OPENCLAW_VERSION, to: OPENCLAW_VERSION, node: { from: OLD_NODE, to: NODE_VERSION } } });
    expect(recap.upgrade.backup).toMatch(/^\/var\/backups\/service-deploy\/openclaw-pre-upgrade-\d{8}-\d{6}\.tar\.gz$/);
    expect(nodeVersion(sb)).toBe(NODE_VERSION);
    // The old prefix is kept whole; OpenClaw's project lies apart from it and was neither copied nor reinstalled.
    expect(exists(sb, MARK)).toBe(false);
    expect(exists(sb, `${PREVIOUS}/OLD-PREFIX`)).toBe(true);
    expect(nodeVersion(sb, `${PREVIOUS}/bin/node`)).toBe(OLD_NODE);
    expect(openclawVersion(sb)).toBe(OPENCLAW_VERSION);
    expect(exists(sb, `${PREVIOUS}/lib/node_modules/openclaw`)).toBe(false);
    expect(exists(sb, 'opt/service-deploy/node/lib/node_modules/openclaw')).toBe(false);
    expect(exists(sb, NEXT)).toBe(false);
    const calls = sb.calls();
    expect(calls.filter((c) => c.command === 'npm'), 'OpenClaw was not installed again').toEqual([]);
    const stop = calls.findIndex((c) => c.command === 'systemctl' && c.args.includes('stop') && c.args.includes(GATEWAY));
    const start = calls.findIndex((c) => c.command === 'systemctl' && (c.args.includes('restart') || c.args.includes('start')) && c.args.includes(GATEWAY));
    expect(stop).toBeGreaterThanOrEqual(0);
    expect(start).toBeGreaterThan(stop);
    expect(gatewayActive(sb)).toBe(true);
    expect(JSON.parse(sb.read('opt/service-deploy/upgrade.json')!)).toMatchObject({ node: { from: OLD_NODE, to: NODE_VERSION }, outcome: 'upgraded' });

    const status = JSON.parse(String((await runBinary(['status', '--json'], { env: sb.env() })).stdout));
    expect(status.components.node).toMatchObject({ installed: NODE_VERSION, pinned: NODE_VERSION, previous: OLD_NODE });
    expect(status.components.openclaw.previous).toBeUndefined();

    // A re-run is a no-op: no second upgrade, no backup.
    expect((await sb.install(['--non-interactive'])).exitCode).toBe(0);
    expect(fs.readdirSync(path.join(sb.root, 'var/backups/service-deploy'))).toHaveLength(1);

    // By hand: the old prefix and the pre-upgrade state back.
    fs.writeFileSync(path.join(sb.root, 'root/.openclaw/workspace/after.md'), 'written after the upgrade\n');
    const check = await runBinary(['rollback', '--check', '--json'], { env: sb.env() });
    expect(check.exitCode, String(check.stderr)).toBe(0);
    expect(jsonOutput('rollback', check.stdout)).toEqual({ schemaVersion: 1, ok: true, mode: 'check', from: OPENCLAW_VERSION, to: OPENCLAW_VERSION, node: { from: NODE_VERSION, to: OLD_NODE }, backup: recap.upgrade.backup });
    const text = await runBinary(['rollback', '--check'], { env: sb.env() });
    expect(String(text.stdout)).toContain(`would roll back: Node ${NODE_VERSION} -> ${OLD_NODE}, and the state from`);
    const back = await runBinary(['rollback', '--yes', '--json'], { env: sb.env() });
    expect(back.exitCode, String(back.stderr)).toBe(0);
    expect(jsonOutput('rollback', back.stdout)).toMatchObject({ ok: true, mode: 'apply', node: { from: NODE_VERSION, to: OLD_NODE } });
    expect(nodeVersion(sb)).toBe(OLD_NODE);
    expect(exists(sb, MARK)).toBe(true);
    expect(exists(sb, PREVIOUS)).toBe(false);
    expect(sb.read('root/.openclaw/workspace/after.md')).toBeUndefined();
    expect(gatewayActive(sb)).toBe(true);
    // The install manifest follows the prefix that is in place: doctor finds the Node binary as recorded.
    const doctor = JSON.parse(String((await runBinary(['doctor', '--json', 'files'], { env: sb.env() })).stdout));
    expect(doctor.checks[0].status, JSON.stringify(doctor.checks[0])).toBe('pass');
  });

  it('Node and OpenClaw together: both upgraded, both kept (the old prefix and the old project), one rollback', async () => {
    const sb = await deployedOnOldNode({ openclaw: OLD_OPENCLAW });
    const result = await sb.install(['--non-interactive']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    expect(String(result.stdout)).toContain(`upgraded OpenClaw ${OLD_OPENCLAW} -> ${OPENCLAW_VERSION} and Node ${OLD_NODE} -> ${NODE_VERSION}`);
    expect(nodeVersion(sb)).toBe(NODE_VERSION);
    expect(openclawVersion(sb)).toBe(OPENCLAW_VERSION);
    expect(sb.read(MIGRATED)).toBeDefined();
    // The new OpenClaw went into the side prefix, not over the live one.
    expect(sb.calls('npm').filter((c) => c.args.some((a) => a.endsWith('/opt/service-deploy/node')))).toEqual([]);
    const status = JSON.parse(String((await runBinary(['status', '--json'], { env: sb.env() })).stdout));
    expect(status.components).toMatchObject({ node: { previous: OLD_NODE }, openclaw: { installed: OPENCLAW_VERSION, previous: OLD_OPENCLAW } });
    const back = await runBinary(['rollback', '--yes'], { env: sb.env() });
    expect(back.exitCode, String(back.stderr)).toBe(0);
    expect(String(back.stdout)).toContain(`rolled back: OpenClaw ${OPENCLAW_VERSION} -> ${OLD_OPENCLAW} and Node ${NODE_VERSION} -> ${OLD_NODE}`);
    expect(nodeVersion(sb)).toBe(OLD_NODE);
    expect(openclawVersion(sb)).toBe(OLD_OPENCLAW);
    expect(exists(sb, 'opt/service-deploy/openclaw-previous')).toBe(false);
    expect(sb.read(MIGRATED)).toBeUndefined();
  });

  it('download fails: nothing switched, the old Node keeps running', async () => {
    const sb = await deployedOnOldNode();
    expectRolledBack(sb, await sb.install(['--non-interactive'], { SERVICE_NODE_DIST_URL: `${sb.env().SERVICE_NODE_DIST_URL}/not-there` }), 'download');
  });

  it('the new Node does not run as the pinned version (install): nothing switched', async () => {
    const sb = await deployedOnOldNode();
    const result = await sb.install(['--non-interactive'], { STANDIN_NODE_VERSION: '24.99.0' });
    expectRolledBack(sb, result, 'install');
    expect(String(result.stdout)).toContain('node --version says 24.99.0');
  });

  it('the gateway exits at start on the new Node: the old prefix back, the gateway started on it', async () => {
    const sb = await deployedOnOldNode();
    fs.writeFileSync(path.join(sb.state, 'crash-node-version'), NODE_VERSION);
    expectRolledBack(sb, await sb.install(['--non-interactive']), 'start');
  });

  it('the gateway does not answer /healthz on the new Node: rolled back within the health budget, one JSON report', async () => {
    const sb = await deployedOnOldNode();
    fs.writeFileSync(path.join(sb.state, 'unhealthy-node-version'), NODE_VERSION);
    const result = await sb.install(['--non-interactive', '--json'], { SERVICE_HEALTH_TIMEOUT_MS: String(budget(5000)) });
    expect(result.exitCode).toBe(1);
    const report = jsonOutput('upgrade-failed', result.stdout);
    expect(report).toMatchObject({ ok: false, upgrade: { from: OPENCLAW_VERSION, to: OPENCLAW_VERSION, node: { from: OLD_NODE, to: NODE_VERSION }, failedAt: 'health', rolledBack: true }, error: { code: 'upgrade-failed', exitCode: 1 } });
    expect(report.error.message).toContain(`upgrade Node ${OLD_NODE} -> ${NODE_VERSION} failed at health`);
    expect(report.error.hint).toContain(`OpenClaw ${OPENCLAW_VERSION} on Node ${OLD_NODE} and the state from before the upgrade are back`);
    expect(nodeVersion(sb)).toBe(OLD_NODE);
    expect(exists(sb, MARK)).toBe(true);
    expect(gatewayActive(sb)).toBe(true);
  });

  it('Node and OpenClaw together, the migrations fail: the old prefix with the old OpenClaw and the pre-upgrade state back', async () => {
    const sb = await deployedOnOldNode({ openclaw: OLD_OPENCLAW });
    fs.writeFileSync(path.join(sb.state, 'fail-openclaw-doctor'), 'Doctor: cannot migrate state/openclaw.sqlite (schema 41 > 40)\n');
    const result = await sb.install(['--non-interactive']);
    expect(String(result.stdout)).toContain(`upgrade: OpenClaw ${OLD_OPENCLAW} -> ${OPENCLAW_VERSION} and Node ${OLD_NODE} -> ${NODE_VERSION} FAILED at migration`);
    expectRolledBack(sb, result, 'migration', OLD_OPENCLAW);
  });
});
