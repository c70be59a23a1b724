import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBinary } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL, OPENCLAW_VERSION, makeSandbox, type Call, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Issue 19 item 3: an upgrade of the pinned OpenClaw (here from 2026.9.1 to the pin)
 * takes a verified backup, installs the new package beside the old one, switches by
 * rename, runs the runtime's migrations (openclaw doctor --fix), starts and checks the
 * gateway, and on a failure at any of those points puts the previous package and the
 * pre-upgrade state back, with the gateway running, exit 1 and a report.
 */

const OLD = '2026.9.1';
/** The package that runs (through the link the unit runs it by). */
const PKG = 'opt/service-deploy/openclaw-current/package.json';
const PREVIOUS = 'opt/service-deploy/openclaw-previous/node_modules/openclaw/package.json';
const MIGRATED = 'root/.openclaw/migrated-by-doctor';
const GATEWAY = 'openclaw-gateway.service';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

const version = (sb: Sandbox, p: string): string | undefined => {
  const text = sb.read(p);
  return text ? (JSON.parse(text) as { version: string }).version : undefined;
};

/** A deployment running an earlier OpenClaw (as a server installed by an earlier service-deploy has). */
async function deployedOnOldVersion(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  fs.writeFileSync(path.join(sb.root, PKG), `{"name":"openclaw","version":"${OLD}"}\n`);
  fs.writeFileSync(path.join(sb.root, 'root/.openclaw/workspace/MEMORY.md'), '# Memory\nbefore the upgrade\n');
  sb.clearCalls();
  return sb;
}

const at = (calls: Call[], match: (c: Call) => boolean): number => calls.findIndex(match);
const gatewayActive = (sb: Sandbox): boolean => fs.existsSync(path.join(sb.state, `user-${GATEWAY}.active`));

/** After a failed upgrade: the old package, the old state, the gateway running, exit 1 naming the stage. */
function expectRolledBack(sb: Sandbox, result: { exitCode?: number; stdout: unknown; stderr: unknown }, stage: string): void {
  expect(result.exitCode, `${String(result.stdout)}\n${String(result.stderr)}`).toBe(1);
  expect(String(result.stdout)).toContain(`FAILED at ${stage}`);
  expect(String(result.stdout)).toMatch(/pre-upgrade backup: \/var\/backups\/service-deploy\/openclaw-pre-upgrade-\d{8}-\d{6}\.tar\.gz/);
  expect(version(sb, PKG)).toBe(OLD);
  expect(sb.read(PREVIOUS)).toBeUndefined();
  expect(fs.existsSync(path.join(sb.root, 'opt/service-deploy/openclaw-next'))).toBe(false);
  expect(sb.read(MIGRATED)).toBeUndefined();
  expect(sb.read('root/.openclaw/workspace/MEMORY.md')).toContain('before the upgrade');
  expect(gatewayActive(sb)).toBe(true);
  const upgrade = JSON.parse(sb.read('opt/service-deploy/upgrade.json')!);
  expect(upgrade).toMatchObject({ from: OLD, to: OPENCLAW_VERSION, outcome: 'rolled-back', failed: { stage } });
}

describe('upgrades that roll back by themselves', { timeout: budget(300_000) }, () => {
  it('upgrades: backup (writers stopped) -> install beside -> switch -> doctor --fix -> start -> health; status and rollback', async () => {
    const sb = await deployedOnOldVersion();
    const plan = await sb.install(['--check']);
    expect(String(plan.stdout)).toContain(`OpenClaw ${OLD} -> ${OPENCLAW_VERSION} (upgrade: verified backup first`);
    expect(version(sb, PKG)).toBe(OLD);

    const result = await sb.install(['--non-interactive', '--json']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    // One document: the install recap with the upgrade (schemas/install.schema.json).
    const recap = jsonOutput('install', result.stdout);
    expect(recap).toMatchObject({ ok: true, mode: 'apply', upgrade: { from: OLD, to: OPENCLAW_VERSION } });
    expect(recap.upgrade.backup).toMatch(/^\/var\/backups\/service-deploy\/openclaw-pre-upgrade-\d{8}-\d{6}\.tar\.gz$/);
    expect(recap.upgrade.seconds).toBeGreaterThan(0);
    expect(recap.steps.find((s: { id: string }) => s.id === 'health')).toMatchObject({ status: expect.stringMatching(/^(ok|changed)$/) });
    expect(version(sb, PKG)).toBe(OPENCLAW_VERSION);
    expect(version(sb, PREVIOUS)).toBe(OLD);
    expect(sb.read(MIGRATED)).toBeDefined();
    const backups = fs.readdirSync(path.join(sb.root, 'var/backups/service-deploy'));
    expect(backups).toHaveLength(1);
    expect(backups[0]).toMatch(/^openclaw-pre-upgrade-\d{8}-\d{6}\.tar\.gz$/);

    const calls = sb.calls();
    const stop = at(calls, (c) => c.command === 'systemctl' && c.args.includes('stop') && c.args.includes(GATEWAY));
    const npm = at(calls, (c) => c.command === 'npm' && c.args.some((a) => a.endsWith('/opt/service-deploy/openclaw-next')));
    const doctor = at(calls, (c) => c.command === 'openclaw' && c.args[0] === 'doctor' && c.args.includes('--fix'));
    const start = at(calls, (c) => c.command === 'systemctl' && (c.args.includes('restart') || c.args.includes('start')) && c.args.includes(GATEWAY));
    expect(stop).toBeGreaterThanOrEqual(0);
    expect(npm).toBeGreaterThan(stop);
    expect(doctor).toBeGreaterThan(npm);
    expect(start).toBeGreaterThan(doctor);
    // No raw npm install over the live package.
    expect(calls.filter((c) => c.command === 'npm' && c.args.some((a) => a.endsWith('/opt/service-deploy/node')))).toEqual([]);

    const status = JSON.parse(String((await runBinary(['status', '--json'], { env: sb.env() })).stdout));
    expect(status.components.openclaw).toMatchObject({ installed: OPENCLAW_VERSION, previous: OLD });

    // A re-run is a no-op: no second upgrade, no backup.
    expect((await sb.install(['--non-interactive'])).exitCode).toBe(0);
    expect(fs.readdirSync(path.join(sb.root, 'var/backups/service-deploy'))).toHaveLength(1);

    // By hand: back to the previous package and the pre-upgrade state.
    fs.writeFileSync(path.join(sb.root, 'root/.openclaw/workspace/after.md'), 'written after the upgrade\n');
    const refused = await runBinary(['rollback'], { env: sb.env() });
    expect(refused.exitCode).toBe(2);
    expect(String(refused.stderr)).toContain('--yes');
    const check = await runBinary(['rollback', '--check'], { env: sb.env() });
    expect(String(check.stdout)).toContain(`OpenClaw ${OPENCLAW_VERSION} -> ${OLD}`);
    const checkJson = await runBinary(['rollback', '--check', '--json'], { env: sb.env() });
    expect(checkJson.exitCode, String(checkJson.stderr)).toBe(0);
    const planned = jsonOutput('rollback', checkJson.stdout);
    expect(planned).toEqual({ schemaVersion: 1, ok: true, mode: 'check', from: OPENCLAW_VERSION, to: OLD, backup: recap.upgrade.backup });
    expect(version(sb, PKG)).toBe(OPENCLAW_VERSION);
    const back = await runBinary(['rollback', '--yes', '--json'], { env: sb.env() });
    expect(back.exitCode, String(back.stderr)).toBe(0);
    const rolled = jsonOutput('rollback', back.stdout);
    expect(rolled).toMatchObject({ ok: true, mode: 'apply', from: OPENCLAW_VERSION, to: OLD, backup: recap.upgrade.backup });
    expect(rolled.health).toMatch(/^\/healthz: /);
    expect(version(sb, PKG)).toBe(OLD);
    expect(sb.read(PREVIOUS)).toBeUndefined();
    expect(sb.read(MIGRATED)).toBeUndefined();
    expect(sb.read('root/.openclaw/workspace/after.md')).toBeUndefined();
    expect(gatewayActive(sb)).toBe(true);

    // The next install upgrades again (the words this time).
    const again = await sb.install(['--non-interactive']);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(String(again.stdout)).toContain(`upgraded OpenClaw ${OLD} -> ${OPENCLAW_VERSION}`);
    expect(version(sb, PKG)).toBe(OPENCLAW_VERSION);
    expect(version(sb, PREVIOUS)).toBe(OLD);
  });

  it('download fails: nothing switched, the old version keeps running', async () => {
    const sb = await deployedOnOldVersion();
    sb.fail('npm', 'npm ERR! network request failed');
    expectRolledBack(sb, await sb.install(['--non-interactive']), 'download');
  });

  it('the new package is not usable (install): nothing switched', async () => {
    const sb = await deployedOnOldVersion();
    const spec = path.join(tempDir('sd-spec-'), 'openclaw-wrong.tgz');
    fs.writeFileSync(`${spec}.name`, 'openclaw');
    fs.writeFileSync(`${spec}.version`, '2026.9.5');
    expectRolledBack(sb, await sb.install(['--non-interactive'], { SERVICE_OPENCLAW_SOURCE: spec }), 'install');
  });

  it('the migrations fail: the previous package and the pre-upgrade state back', async () => {
    const sb = await deployedOnOldVersion();
    fs.writeFileSync(path.join(sb.state, 'fail-openclaw-doctor'), 'Doctor: cannot migrate state/openclaw.sqlite (schema 41 > 40)\n');
    const result = await sb.install(['--non-interactive']);
    expectRolledBack(sb, result, 'migration');
    expect(String(result.stdout)).toContain('schema 41 > 40');
  });

  it('the new gateway exits at start: rolled back, the old one started', async () => {
    const sb = await deployedOnOldVersion();
    fs.writeFileSync(path.join(sb.state, 'crash-version'), OPENCLAW_VERSION);
    expectRolledBack(sb, await sb.install(['--non-interactive']), 'start');
  });

  it('the new gateway does not answer /healthz: rolled back within the health budget', async () => {
    const sb = await deployedOnOldVersion();
    fs.writeFileSync(path.join(sb.state, 'unhealthy-version'), OPENCLAW_VERSION);
    const result = await sb.install(['--non-interactive', '--json'], { SERVICE_HEALTH_TIMEOUT_MS: String(budget(5000)) });
    expect(result.exitCode).toBe(1);
    // Its own failing document, with error, and no envelope after it (one document).
    const report = jsonOutput('upgrade-failed', result.stdout);
    expect(report).toMatchObject({ ok: false, upgrade: { from: OLD, to: OPENCLAW_VERSION, failedAt: 'health', rolledBack: true }, error: { code: 'upgrade-failed', exitCode: 1 } });
    expect(report.upgrade.backup).toMatch(/^\/var\/backups\/service-deploy\/openclaw-pre-upgrade-/);
    expect(report.error.message).toContain('failed at health');
    expect(version(sb, PKG)).toBe(OLD);
    expect(sb.read(MIGRATED)).toBeUndefined();
    expect(gatewayActive(sb)).toBe(true);
  });
});
