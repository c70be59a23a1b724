import { installSteps } from '../../src/steps/index.js';
import { neededBy } from '../../src/pipeline/needs.js';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { snapshotTree } from '../hostile/harness.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

describe('install --check plans every step it can', { timeout: 240_000 }, () => {
  it('lists the steps it cannot plan, with why, and still plans every later step; writes nothing', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    // A hand-broken channel.env: every channel step reads it, so none of them can be planned.
    fs.mkdirSync(path.join(sb.root, 'root/.openclaw'), { recursive: true });
    fs.writeFileSync(path.join(sb.root, 'root/.openclaw/channel.env'), 'SERVICE_CHANNEL_ALLOW=not-an-address\n', { mode: 0o600 });
    const before = snapshotTree(sb.root);

    const text = await sb.install(['--check', '--channel', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(text.exitCode).toBe(1);
    const out = String(text.stdout);
    expect(out).toMatch(/^cannot plan {3}channel-env: \/root\/\.openclaw\/channel\.env: SERVICE_CHANNEL_ALLOW is not a list of addresses: .* \(give the list again with --channel-allow/m);
    expect(out).toMatch(/^cannot plan {3}channel-nginx: /m);
    // Steps after the ones that cannot be planned are planned all the same.
    for (const later of ['runtime-config', 'gateway-service', 'guard']) expect(out).toMatch(new RegExp(`^would change  ${later}: `, 'm'));
    expect(out).toMatch(/^plan: ok=\d+ changed=\d+ skipped=\d+ failed=[1-9]\d* /m);

    const json = await sb.install(['--check', '--json', '--channel', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    const result = JSON.parse(String(json.stdout));
    expect(result.ok).toBe(false);
    const ids = result.steps.map((s: { id: string }) => s.id);
    expect(ids.at(-1)).toBe('health'); // the whole pipeline was assessed
    const failed = result.steps.filter((s: { status: string }) => s.status === 'failed');
    expect(failed.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining(['channel-env', 'channel-nginx']));
    for (const f of failed) expect(f.error, f.id).toBeTruthy();
    expect(snapshotTree(sb.root)).toEqual(before);

    // Without --check the first failure still stops the run: steps running beside it end,
    // but nothing that waits for it (nor anything else) starts after it.
    const real = await sb.install(['--channel', '--json', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    const applied = JSON.parse(String(real.stdout)) as { steps: Array<{ id: string; status: string; startMs?: number }> };
    const stopped = applied.steps.filter((s) => s.status === 'failed');
    expect(stopped.map((s) => s.id)).toEqual(['channel-env']);
    const ran = new Set(applied.steps.map((s) => s.id));
    for (const id of installSteps().filter((s) => neededBy(installSteps(), s.id).has('channel-env')).map((s) => s.id)) expect(ran.has(id), id).toBe(false);
    expect(ran.has('health')).toBe(false);
  });
});
