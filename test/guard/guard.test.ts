import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { channelDropInContent } from '../../src/steps/channel.js';
import { CHANNEL, makeHealthySandbox, type OpsSandbox } from '../helpers/ops-sandbox.js';
import { SECRETS, snapshotFiles } from '../helpers/sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { BUSY_START_JOURNAL, CONFIG_ERROR_JOURNAL } from '../helpers/gateway-journal.js';

let sb: OpsSandbox;
beforeEach(async () => {
  sb = await makeHealthySandbox();
});
afterEach(async () => {
  await sb.close();
});

const config = () => JSON.parse(sb.read(LAYOUT.runtimeConfig)!);
const setConfig = (c: unknown) => sb.write(LAYOUT.runtimeConfig, JSON.stringify(c, null, 2), 0o600);
const restarts = () => sb.calls('systemctl').filter((c) => c.args.includes('restart')).length;
/** What the guard asked systemd to do: every call but its reads (`show`: is the gateway parked?). */
const systemctlActions = () => sb.calls('systemctl').filter((c) => !c.args.includes('show'));
const syslog = () => fs.readFileSync(path.join(sb.state, 'syslog'), 'utf8');

describe('service-deploy guard (binary, sandbox)', () => {
  it('is a true no-op on a correct server: no write, no restart, exit 0, one ok line to syslog', async () => {
    const before = snapshotFiles(sb.root);
    const run = await sb.run(['guard']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(run.stdout).toContain('guard: nothing to restore');
    expect(snapshotFiles(sb.root)).toEqual(before);
    expect(systemctlActions()).toEqual([]);
    expect(sb.calls('openclaw')).toEqual([]);
    expect(syslog().trim().split('\n').pop()).toMatch(/service-guard\x1fok: nothing to restore$/);
  });

  const TAMPER: Array<[string, () => void, RegExp]> = [
    ['extra provider', () => { const c = config(); c.models.providers.mirror = { baseUrl: 'https://llm.example.net/v1' }; setConfig(c); }, /restored models\.providers\.mirror: extra provider/],
    ['direct vendor provider', () => { const c = config(); c.models.providers.openai = { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-proj-abcdefghijklmnop1234' }; setConfig(c); }, /restored models\.providers\.openai: direct model-vendor provider/],
    ['changed base URL', () => { const c = config(); c.models.providers[Object.keys(c.models.providers)[0]!].baseUrl = 'https://evil.example.com/v1'; setConfig(c); }, /baseUrl: https:\/\/evil\.example\.com\/v1 -> http:\/\/127\.0\.0\.1:\d+\/v1/],
    ['changed key', () => { const c = config(); c.models.providers[Object.keys(c.models.providers)[0]!].apiKey = 'pkt_stolen_key_0000000000'; setConfig(c); }, /apiKey: plaintext pkt_\*\*\*\*0000 -> reference file:service:\/serviceApiKey/],
    ['removed gateway.auth', () => { const c = config(); delete c.gateway.auth; setConfig(c); }, /restored gateway\.auth: missing -> mode token/],
    ['legacy gateway.token', () => { const c = config(); c.gateway.token = c.gateway.auth.token; setConfig(c); }, /restored gateway\.token: legacy top-level token/],
    ['renamed agent', () => { const c = config(); c.agents.entries.main.identity.name = 'Someone Else'; setConfig(c); }, /restored agent display name: Someone Else -> Acme Dental GmbH/],
    ['heartbeat sent to the owner again', () => { const c = config(); c.agents.defaults.heartbeat.target = 'owner'; delete c.agents.defaults.heartbeat.isolatedSession; setConfig(c); }, /restored agents\.defaults\.heartbeat: target "owner", isolatedSession \(unset\) -> target "none", isolatedSession true/],
  ];

  for (const [what, tamper, logged] of TAMPER) {
    it(`restores: ${what} (validated, atomic 0600, one restart, logged with secrets masked)`, async () => {
      const good = sb.read(LAYOUT.runtimeConfig);
      tamper();
      const run = await sb.run(['guard']);
      expect(run.exitCode, String(run.stderr)).toBe(0);
      expect(JSON.parse(sb.read(LAYOUT.runtimeConfig)!)).toEqual(JSON.parse(good!));
      expect(sb.stat(LAYOUT.runtimeConfig)!.mode & 0o777).toBe(0o600);
      expect(sb.calls('openclaw').map((c) => c.args.slice(0, 2).join(' '))).toEqual(['config validate']);
      expect(restarts()).toBe(1);
      const log = sb.read(LAYOUT.guardLog)!;
      expect(log).toMatch(logged);
      expect(syslog()).toMatch(logged);
      expect(sb.stat(LAYOUT.guardLog)!.mode & 0o777).toBe(0o600);
      for (const text of [log, syslog(), String(run.stdout)]) {
        for (const secret of [SECRETS.apiKey, 'sk-proj-abcdefghijklmnop1234', 'pkt_stolen_key_0000000000']) expect(text).not.toContain(secret);
      }
      // And the next run is a no-op again.
      sb.clearCalls();
      expect((await sb.run(['guard'])).stdout).toContain('nothing to restore');
      expect(restarts()).toBe(0);
    });
  }

  it('restores a deleted drop-in: reload, restart, and the new gateway process has the channel variables', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.channelDropIn));
    const run = await sb.run(['guard', '--json']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const out = jsonOutput('guard', run.stdout);
    expect(out).toMatchObject({ changed: true, restarted: true });
    expect(out.restorations.map((r: { what: string }) => r.what)).toEqual([LAYOUT.channelDropIn]);
    expect(sb.read(LAYOUT.channelDropIn)).toBe(channelDropInContent());
    const calls = systemctlActions().map((c) => c.args.join(' '));
    expect(calls).toEqual(['--user daemon-reload', `--user restart ${LAYOUT.gatewayUnit}`]);
    const environ = fs.readFileSync(`/proc/${sb.gatewayPid()}/environ`, 'utf8');
    expect(environ).toContain(`SERVICE_CHANNEL_TOKEN=${CHANNEL.token}`);
  });

  it('restores channel.env to 0600 without a restart', async () => {
    fs.chmodSync(path.join(sb.root, LAYOUT.channelEnv), 0o644);
    const run = await sb.run(['guard']);
    expect(run.stdout).toContain(`restored ${LAYOUT.channelEnv} mode: 0644 -> 0600`);
    expect(sb.stat(LAYOUT.channelEnv)!.mode & 0o777).toBe(0o600);
    expect(restarts()).toBe(0);
  });

  it('restores the secret source from the stored answers: a swapped key one restart, a loosened mode none', async () => {
    const source = '/var/lib/service-deploy/runtime-secrets/secrets.json';
    sb.write(source, JSON.stringify({ serviceApiKey: 'pkt_swapped_key_000000000000' }), 0o600);
    const run = await sb.run(['guard', '--json']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(JSON.parse(sb.read(source)!)).toEqual({ serviceApiKey: SECRETS.apiKey });
    expect(sb.stat(source)!.mode & 0o777).toBe(0o600);
    expect(restarts()).toBe(1);
    const restored = jsonOutput('guard', run.stdout).restorations.map((r: { what: string }) => r.what);
    expect(restored).toEqual([source]);
    for (const secret of [SECRETS.apiKey, 'pkt_swapped_key_000000000000']) expect(String(run.stdout) + sb.read(LAYOUT.guardLog)).not.toContain(secret);

    sb.clearCalls();
    fs.chmodSync(path.join(sb.root, '/var/lib/service-deploy/runtime-secrets/gateway.env'), 0o644);
    fs.chmodSync(path.join(sb.root, '/var/lib/service-deploy/runtime-secrets'), 0o755);
    expect((await sb.run(['guard'])).exitCode).toBe(0);
    expect(sb.stat('/var/lib/service-deploy/runtime-secrets/gateway.env')!.mode & 0o777).toBe(0o600);
    expect(sb.stat('/var/lib/service-deploy/runtime-secrets')!.mode & 0o777).toBe(0o700);
    expect(restarts()).toBe(0);
  });

  it('never writes a config the runtime rejects: the file stays, exit 1, the failure is logged', async () => {
    const c = config();
    c.models.providers.openai = { baseUrl: 'https://api.openai.com/v1' };
    setConfig(c);
    const before = sb.read(LAYOUT.runtimeConfig);
    sb.fail('openclaw', 'config invalid: plugins.slots.contextEngine: unknown plugin');
    const run = await sb.run(['guard']);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toMatch(/OpenClaw rejects the new config/);
    expect(sb.read(LAYOUT.runtimeConfig)).toBe(before);
    expect(restarts()).toBe(0);
    expect(syslog()).toMatch(/service-guard\x1ffailed: OpenClaw rejects/);
  });

  describe('a gateway that stopped itself (exit 78: systemd does not restart it)', () => {
    const GATEWAY = `${LAYOUT.gatewayUnit}`;
    const park = (journal: string[]) => {
      fs.rmSync(path.join(sb.state, `user-${GATEWAY}.active`), { force: true });
      fs.writeFileSync(path.join(sb.state, `user-${GATEWAY}.refused`), '');
      fs.writeFileSync(path.join(sb.state, `journal-${GATEWAY}`), `${journal.join('\n')}\n`);
    };
    const BUSY = BUSY_START_JOURNAL;

    it('at a start on a busy server (a reboot under load): started again (reset-failed, restart), logged; --check only says so', async () => {
      park(BUSY);
      const before = snapshotFiles(sb.root);
      const check = await sb.run(['guard', '--check']);
      expect(check.exitCode, String(check.stderr)).toBe(0);
      expect(check.stdout).toMatch(new RegExp(`would restore ${GATEWAY}: stopped itself at its start, the server too busy \\(Gateway failed to start: OpenClaw startup migrations`));
      expect(systemctlActions()).toEqual([]);
      expect(snapshotFiles(sb.root)).toEqual(before);

      const run = await sb.run(['guard', '--json']);
      expect(run.exitCode, String(run.stderr)).toBe(0);
      expect(jsonOutput('guard', run.stdout)).toMatchObject({ changed: true, restarted: true, restorations: [{ what: GATEWAY, after: 'started again' }] });
      expect(systemctlActions().map((c) => c.args.join(' '))).toEqual([`--user reset-failed ${GATEWAY}`, `--user restart ${GATEWAY}`]);
      expect(sb.read(LAYOUT.guardLog)).toMatch(/restored openclaw-gateway\.service: stopped itself at its start/);
      expect(fs.existsSync(path.join(sb.state, `user-${GATEWAY}.active`))).toBe(true);

      sb.clearCalls();
      expect((await sb.run(['guard'])).stdout).toContain('nothing to restore');
      expect(restarts()).toBe(0);
    });

    it('for another reason (a config error): left for a person, not started', async () => {
      park(CONFIG_ERROR_JOURNAL);
      const run = await sb.run(['guard']);
      expect(run.exitCode, String(run.stderr)).toBe(0);
      expect(run.stdout).toContain('nothing to restore');
      expect(systemctlActions()).toEqual([]);
    });
  });

  it('--check reports drift and changes nothing', async () => {
    const c = config();
    delete c.gateway.auth;
    setConfig(c);
    const before = snapshotFiles(sb.root);
    const run = await sb.run(['guard', '--check']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/would restore gateway\.auth: missing -> mode token/);
    expect(snapshotFiles(sb.root)).toEqual(before);
    expect(systemctlActions()).toEqual([]);
  });

  it('two guards never run at once: the second names the first (refused, exit 2)', async () => {
    sb.write(LAYOUT.guardLock, `${process.pid} ${fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')[19]}\n`, 0o600);
    const run = await sb.run(['guard']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`another guard is running \\(pid ${process.pid}`));
    expect(systemctlActions()).toEqual([]);
  });

  it('rotates guard.log by size, keeping one old copy', async () => {
    sb.write(LAYOUT.guardLog, 'x'.repeat(1024 * 1024 + 10), 0o600);
    const c = config();
    delete c.gateway.auth;
    setConfig(c);
    await sb.run(['guard']);
    expect(sb.stat(`${LAYOUT.guardLog}.1`)!.size).toBe(1024 * 1024 + 10);
    expect(sb.read(LAYOUT.guardLog)).toMatch(/^\S+ restored gateway\.auth/);
  });

  it('without stored answers it refuses (exit 2) naming the fix', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.answersFile));
    const run = await sb.run(['guard']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/no stored answers[\s\S]*service-deploy install/);
  });
});
