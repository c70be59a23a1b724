import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { makeHealthySandbox, type OpsSandbox } from '../helpers/ops-sandbox.js';
import { errorEnvelope, jsonOutput } from '../helpers/json-schemas.js';
import { FROM_OUTPUT } from '../e2e/quickstart.js';

let sb: OpsSandbox;
beforeEach(async () => {
  sb = await makeHealthySandbox();
});
afterEach(async () => {
  await sb.close();
});

describe('gateway wrappers (root user manager env set for the caller)', () => {
  it('status: unit state, health and the runtime\'s own gateway status (which needs XDG_RUNTIME_DIR)', async () => {
    const run = await sb.run(['gateway', 'status', '--json']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const out = jsonOutput('gateway-status', run.stdout);
    expect(out).toMatchObject({ unit: LAYOUT.gatewayUnit, active: true, pid: sb.gatewayPid(), health: { ok: true }, runtime: { exitCode: 0 } });
    expect(out.runtime.output).toContain('Listening: 127.0.0.1:18789');
  });

  it('status exits 1 when the gateway is down', async () => {
    await sb.systemctl('--user', 'stop', LAYOUT.gatewayUnit);
    const run = await sb.run(['gateway', 'status']);
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toMatch(/NOT active/);
    const json = await sb.run(['gateway', 'status', '--json']);
    expect(json.exitCode).toBe(1);
    expect(jsonOutput('gateway-status', json.stdout)).toMatchObject({ ok: false, active: false, pid: null, error: { code: 'gateway-down', exitCode: 1 } });
  });

  it('restart: daemon-reload then restart, and waits for /healthz', async () => {
    const run = await sb.run(['gateway', 'restart']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(sb.calls('systemctl').map((c) => c.args.join(' ')).filter((c) => !c.includes('show'))).toEqual(['--user daemon-reload', `--user restart ${LAYOUT.gatewayUnit}`]);
    expect(run.stdout).toMatch(/restarted \(pid \d+\); health ok/);
    const json = await sb.run(['gateway', 'restart', '--json']);
    expect(json.exitCode, String(json.stderr)).toBe(0);
    expect(jsonOutput('gateway-restart', json.stdout)).toMatchObject({ ok: true, unit: LAYOUT.gatewayUnit, restarted: true, pid: sb.gatewayPid(), health: { ok: true } });
  });

  it('logs: the user journal of the gateway unit', async () => {
    fs.writeFileSync(path.join(sb.state, `journal-${LAYOUT.gatewayUnit}`), 'line one\nline two\nline three\n');
    const run = await sb.run(['gateway', 'logs', '-n', '2']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(String(run.stdout)).toBe('line two\nline three');
    expect(sb.calls('journalctl')[0]!.args).toEqual([`--user-unit=${LAYOUT.gatewayUnit}`, '-n', '2', '--no-pager']);
    const json = await sb.run(['gateway', 'logs', '-n', '2', '--json']);
    expect(json.exitCode, String(json.stderr)).toBe(0);
    const doc = jsonOutput('gateway-logs', json.stdout);
    expect(doc.entries.map((e: { message: string }) => e.message)).toEqual(['line two', 'line three']);
    expect(doc.entries[0]).toMatchObject({ time: '2026-01-01T00:00:00.000Z', priority: 6, pid: 4242 });
  });

  it('an unknown action is a usage error', async () => {
    const run = await sb.run(['gateway', 'explode']);
    expect(run.exitCode).toBe(2);
    const json = await sb.run(['gateway', 'explode', '--json']);
    expect(errorEnvelope(json.stdout, json.exitCode).error.code).toBe('usage');
  });
});

describe('devices wrappers', () => {
  const pending = { pending: [{ requestId: 'req-7f3a', displayName: 'Lisa iPhone', platform: 'ios', remoteIp: '100.101.102.103' }], paired: [] };

  it('list shows pending requests with the approve command; approve moves one to paired', async () => {
    fs.writeFileSync(path.join(sb.state, 'devices.json'), JSON.stringify(pending));
    const list = await sb.run(['devices', 'list']);
    expect(list.stdout).toMatch(/pending  req-7f3a  Lisa iPhone  ios  from 100\.101\.102\.103/);
    // The e2e runs the quickstart's approve block with the id read from this very output.
    expect(FROM_OUTPUT['<request-id>']!.read(String(list.stdout))).toBe('req-7f3a');
    expect(list.stdout).toMatch(/service-deploy devices approve req-7f3a/);
    const approve = await sb.run(['devices', 'approve', 'req-7f3a', '--json']);
    expect(approve.exitCode, String(approve.stderr)).toBe(0);
    expect(jsonOutput('devices-approve', approve.stdout)).toMatchObject({ ok: true, approved: 'req-7f3a', output: expect.stringMatching(/Approved req-7f3a/) });
    const after = jsonOutput('devices-list', (await sb.run(['devices', 'list', '--json'])).stdout);
    expect(after.pending).toEqual([]);
    expect(after.paired.map((d: { requestId: string }) => d.requestId)).toEqual(['req-7f3a']);
  });

  it('list shows paired devices with their ids; remove revokes one by its id or a unique prefix, and refuses a typo before anything changes', async () => {
    const laptop = { deviceId: `64ad26a6${'1'.repeat(56)}`, clientId: 'openclaw-control-ui', platform: 'Linux x86_64', remoteIp: '100.101.102.103', lastSeenAtMs: Date.UTC(2026, 10, 2, 9, 30) };
    const phone = { deviceId: `64ad26b7${'2'.repeat(56)}`, clientId: 'openclaw-control-ui', displayName: 'Lisa iPhone', remoteIp: '100.101.102.104' };
    fs.writeFileSync(path.join(sb.state, 'devices.json'), JSON.stringify({ pending: [], paired: [laptop, phone] }));
    const list = await sb.run(['devices', 'list']);
    expect(list.stdout).toContain(`paired   ${laptop.deviceId}  Linux x86_64  openclaw-control-ui  from 100.101.102.103  last seen 2026-11-02 09:30 UTC`);
    expect(list.stdout).toContain(`paired   ${phone.deviceId}  Lisa iPhone  openclaw-control-ui  from 100.101.102.104`);
    expect(list.stdout).toMatch(/revoke one with: service-deploy devices remove <device id>/);

    // Too short to name one device, a typo, an option in its place: refused (exit 2), nothing removed.
    for (const [id, why] of [['64ad26a', /not a device id/], ['64ad26a7', /no paired device has the id 64ad26a7 \(2 paired\); nothing was changed/], ['x; rm -rf /', /not a device id/], ['--all', /needs DEVICE_ID/]] as const) {
      const refused = await sb.run(['devices', 'remove', id]);
      expect(refused.exitCode, `${id}: ${refused.stderr}`).toBe(2);
      expect(refused.stderr).toMatch(why);
    }
    const typo = await sb.run(['devices', 'remove', '64ad26a7', '--json']);
    expect(errorEnvelope(typo.stdout, typo.exitCode).error).toMatchObject({ code: 'refused', exitCode: 2 });
    fs.writeFileSync(path.join(sb.state, 'devices.json'), JSON.stringify({ pending: [], paired: [laptop, { ...phone, deviceId: `64ad26a6${'3'.repeat(56)}` }] }));
    const twoMatch = await sb.run(['devices', 'remove', '64ad26a6']);
    expect(twoMatch.exitCode).toBe(2);
    expect(twoMatch.stderr).toMatch(/starts the ids of 2 paired devices/);
    expect(sb.calls('openclaw').filter((c) => c.args[1] === 'remove')).toEqual([]);

    const removed = await sb.run(['devices', 'remove', `${laptop.deviceId.slice(0, 12)}`, '--json']);
    expect(removed.exitCode, String(removed.stderr)).toBe(0);
    expect(jsonOutput('devices-remove', removed.stdout)).toMatchObject({ ok: true, removed: laptop.deviceId, device: { remoteIp: '100.101.102.103' } });
    expect(sb.calls('openclaw').filter((c) => c.args[1] === 'remove').map((c) => c.args)).toEqual([['devices', 'remove', laptop.deviceId, '--json', '--timeout', '30000']]);
    const after = jsonOutput('devices-list', (await sb.run(['devices', 'list', '--json'])).stdout);
    expect(after.paired.map((d: { deviceId: string }) => d.deviceId)).toEqual([`64ad26a6${'3'.repeat(56)}`]);
  });

  it("a runtime failure says the runtime's reason (its --json error), with a longer RPC timeout than its 10 s default", async () => {
    fs.writeFileSync(path.join(sb.state, 'fail-devices'), 'gateway timeout after 30000ms');
    const run = await sb.run(['devices', 'list']);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toMatch(/openclaw devices list failed: gateway timeout after 30000ms/);
    expect(run.stderr).toMatch(/service-deploy gateway status/);
    expect(sb.calls('openclaw').at(-1)!.args).toEqual(['devices', 'list', '--json', '--timeout', '30000']);
  });

  it('approve refuses anything that is not a request id', async () => {
    const run = await sb.run(['devices', 'approve', 'x; rm -rf /']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/not a device request id/);
    expect(sb.calls('openclaw')).toEqual([]);
  });
});
