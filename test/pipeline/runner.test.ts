import { describe, expect, it } from 'vitest';
import type { Host } from '../../src/host/index.js';
import { runPipeline, type PipelineOutcome } from '../../src/pipeline/runner.js';
import type { InstallContext, InstallOptions, Step } from '../../src/pipeline/step.js';

/**
 * The runner's two ways to run the same steps: a shown list (listr2 with our renderers)
 * and a silent one (--json: the steps in order, no listr2). Both must give the same
 * results, stop at the same failure, and apply the same changes.
 */

type Calls = string[];

function fakeHost(): Host {
  const log = { debug: () => undefined, info: () => undefined, warn: () => undefined, routeConsole: () => undefined };
  return { log, redactor: { redact: (text: string) => text.replaceAll('s3cret', '***') } } as unknown as Host;
}

function base(check: boolean): Omit<InstallContext, 'notified' | 'progress'> {
  const options: InstallOptions = { check, diff: false, channel: false, catalog: false, rotateChannelSecrets: false, lockTimeoutMs: 1000 };
  return { host: fakeHost(), profile: {} as InstallContext['profile'], answers: {} as InstallContext['answers'], components: {} as InstallContext['components'], options };
}

/** ok, changed (applied and verified), skipped, failing (its message holds a secret), then one that must not run after the failure. */
function steps(calls: Calls): Step[] {
  const step = (id: string, over: Partial<Step>): Step => ({
    id,
    title: `Step ${id}`,
    check: async () => {
      calls.push(`check ${id}`);
      return { changes: [] };
    },
    apply: async () => {
      calls.push(`apply ${id}`);
    },
    ...over,
  });
  return [
    step('a', {}),
    step('b', {
      check: async () => {
        calls.push('check b');
        return { changes: [{ target: '/etc/b', summary: 'write /etc/b' }], notify: ['gateway-restart'] };
      },
      verify: async () => {
        calls.push('verify b');
      },
    }),
    step('c', { skip: () => 'not asked for' }),
    step('d', {
      check: async () => {
        calls.push('check d');
        throw new Error('cannot read s3cret');
      },
    }),
    step('e', {
      check: async () => {
        calls.push('check e');
        return { changes: [{ target: '/etc/e', summary: 'write /etc/e' }] };
      },
    }),
  ];
}

async function run(silent: boolean, check: boolean): Promise<{ outcome: PipelineOutcome; calls: Calls }> {
  const calls: Calls = [];
  const outcome = await runPipeline(steps(calls), base(check), { silent });
  return { outcome, calls };
}

const shape = (outcome: PipelineOutcome) => outcome.results.map(({ durationMs: _, startMs: _s, endMs: _e, ...r }) => r);

describe('runPipeline', () => {
  for (const silent of [true, false]) {
    it(`${silent ? 'silent' : 'shown'}: runs in order, applies and verifies a change, records a skip, stops at the first failure (secrets masked)`, async () => {
      const { outcome, calls } = await run(silent, false);
      expect(shape(outcome)).toEqual([
        { id: 'a', title: 'Step a', status: 'ok', changes: [] },
        { id: 'b', title: 'Step b', status: 'changed', changes: [{ target: '/etc/b', summary: 'write /etc/b' }] },
        { id: 'c', title: 'Step c', status: 'skipped', changes: [], reason: 'not asked for' },
        { id: 'd', title: 'Step d', status: 'failed', changes: [], error: 'cannot read ***', hint: undefined },
      ]);
      expect(outcome.recap).toEqual({ ok: 1, changed: 1, skipped: 1, failed: 1 });
      expect(outcome.failed).toBe(true);
      // e was checked early (all checks start together) but never applied: the list ended at d.
      expect(calls.filter((c) => c.startsWith('apply') || c.startsWith('verify'))).toEqual(['apply b', 'verify b']);
    });

    it(`${silent ? 'silent' : 'shown'}: each step that ran has its start and end (ms since the steps began, one after the other), a skipped one neither`, async () => {
      const slow = steps([]);
      slow[1] = { ...slow[1]!, apply: () => new Promise((resolve) => setTimeout(resolve, 30)) };
      const { results } = await runPipeline(slow, base(false), { silent });
      expect(results.map((r) => `${r.id} ${r.startMs !== undefined} ${r.endMs !== undefined}`)).toEqual(['a true true', 'b true true', 'c false false', 'd true true']);
      let previousEnd = 0;
      for (const r of results) {
        if (r.startMs === undefined || r.endMs === undefined) continue;
        expect(r.startMs, r.id).toBeGreaterThanOrEqual(previousEnd);
        expect(r.endMs - r.startMs, r.id).toBe(r.durationMs);
        previousEnd = r.endMs;
      }
      expect(results[1]!.durationMs).toBeGreaterThanOrEqual(25);
    });

    it(`${silent ? 'silent' : 'shown'} --check: applies nothing, lists the step it could not plan and plans the rest`, async () => {
      const { outcome, calls } = await run(silent, true);
      expect(shape(outcome).map((r) => `${r.id} ${r.status}`)).toEqual(['a ok', 'b changed', 'c skipped', 'd failed', 'e changed']);
      expect(calls.filter((c) => !c.startsWith('check'))).toEqual([]);
    });
  }

  it('a silent list listens for Ctrl-C only while it runs', async () => {
    const before = process.listenerCount('SIGINT');
    let during = -1;
    const step: Step = {
      id: 'x',
      title: 'Step x',
      speculative: false,
      check: async () => {
        during = process.listenerCount('SIGINT');
        return { changes: [] };
      },
      apply: async () => undefined,
    };
    const outcome = await runPipeline([step], base(false), { silent: true });
    expect(outcome.recap).toEqual({ ok: 1, changed: 0, skipped: 0, failed: 0 });
    expect(during).toBe(before + 1);
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
