import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { makeHealthySandbox, type OpsSandbox } from '../helpers/ops-sandbox.js';

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
    const out = JSON.parse(String(run.stdout));
    expect(out).toMatchObject({ unit: LAYOUT.gatewayUnit, active: true, pid: sb.gatewayPid(), health: { ok: true }, runtime: { exitCode: 0 } });
    expect(out.runtime.output).toContain('Listening: 127.0.0.1:18789');
  });

  it('status exits 1 when the gateway is down', async () => {
    await sb.systemctl('--user', 'stop', LAYOUT.gatewayUnit);
    const run = await sb.run(['gateway', 'status']);
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toMatch(/NOT active/);
  });

  it('restart: daemon-reload then restart, and waits for /healthz', async () => {
    const run = await sb.run(['gateway', 'restart']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(sb.calls('systemctl').map((c) => c.args.join(' ')).filter((c) => !c.includes('show'))).toEqual(['--user daemon-reload', `--user restart ${LAYOUT.gatewayUnit}`]);
    expect(run.stdout).toMatch(/restarted \(pid \d+\); health ok/);
  });

  it('logs: the user journal of the gateway unit', async () => {
    fs.writeFileSync(path.join(sb.state, `journal-${LAYOUT.gatewayUnit}`), 'line one\nline two\nline three\n');
    const run = await sb.run(['gateway', 'logs', '-n', '2']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(String(run.stdout)).toBe('line two\nline three');
    expect(sb.calls('journalctl')[0]!.args).toEqual(['--user', '-u', LAYOUT.gatewayUnit, '-n', '2', '--no-pager']);
  });

  it('an unknown action is a usage error', async () => {
    const run = await sb.run(['gateway', 'explode']);
    expect(run.exitCode).toBe(2);
  });
});

describe('devices wrappers', () => {
  const pending = { pending: [{ requestId: 'req-7f3a', displayName: 'Lisa iPhone', platform: 'ios' }], paired: [] };

  it('list shows pending requests with the approve command; approve moves one to paired', async () => {
    fs.writeFileSync(path.join(sb.state, 'devices.json'), JSON.stringify(pending));
    const list = await sb.run(['devices', 'list']);
    expect(list.stdout).toMatch(/pending  req-7f3a  Lisa iPhone  ios/);
    expect(list.stdout).toMatch(/service-deploy devices approve req-7f3a/);
    const approve = await sb.run(['devices', 'approve', 'req-7f3a']);
    expect(approve.exitCode, String(approve.stderr)).toBe(0);
    expect(approve.stdout).toMatch(/Approved req-7f3a/);
    const after = JSON.parse(String((await sb.run(['devices', 'list', '--json'])).stdout));
    expect(after.pending).toEqual([]);
    expect(after.paired.map((d: { requestId: string }) => d.requestId)).toEqual(['req-7f3a']);
  });

  it('approve refuses anything that is not a request id', async () => {
    const run = await sb.run(['devices', 'approve', 'x; rm -rf /']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/not a device request id/);
    expect(sb.calls('openclaw')).toEqual([]);
  });
});
