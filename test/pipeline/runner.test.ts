import { describe, expect, it } from 'vitest';
import { Exec, currentLowering } from '../../src/host/exec.js';
import type { Host } from '../../src/host/index.js';
import { Logger } from '../../src/host/log.js';
import { Redactor } from '../../src/host/redact.js';
import { BACKGROUND_NICENESS, runPipeline, type PipelineOutcome } from '../../src/pipeline/runner.js';
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

/** Steps that can only finish when run together: x's apply ends only after y's has (a serial run would never get there). */
function together(calls: Calls, over: { failX?: boolean } = {}): Step[] {
  let yApplied!: () => void;
  const yDone = new Promise<void>((resolve) => (yApplied = resolve));
  const changing = (id: string, needs: string[], apply: () => Promise<void>): Step => ({
    id,
    title: `Step ${id}`,
    needs,
    check: async () => ({ changes: [{ target: `/etc/${id}`, summary: `write /etc/${id}` }], notify: id === 'y' ? ['gateway-restart'] : [] }),
    apply: async () => {
      calls.push(`apply ${id}`);
      await apply();
      calls.push(`applied ${id}`);
    },
  });
  return [
    changing('p', [], async () => undefined),
    changing('x', ['p'], async () => {
      await yDone;
      if (over.failX) throw new Error('x broke');
    }),
    changing('y', ['p'], async () => yApplied()),
    {
      ...changing('z', ['x', 'y'], async () => undefined),
      // z acts on the notification y raised (what gateway-service does with the runtime's).
      check: async (ctx) => ({ changes: [{ target: '/etc/z', summary: `restart: ${ctx.notified.has('gateway-restart')}` }] }),
    },
  ];
}

describe('runPipeline with steps at once (install without --serial)', () => {
  for (const silent of [true, false]) {
    it(`${silent ? 'silent' : 'shown'}: independent steps overlap, a step waits for its needs and their notifications, results keep the listed order`, async () => {
      const calls: Calls = [];
      const outcome = await runPipeline(together(calls), base(false), { silent, concurrency: 4 });
      expect(calls).toEqual(['apply p', 'applied p', 'apply x', 'apply y', 'applied y', 'applied x', 'apply z', 'applied z']);
      expect(shape(outcome).map((r) => `${r.id} ${r.status}`)).toEqual(['p changed', 'x changed', 'y changed', 'z changed']);
      expect(outcome.results[3]!.changes[0]!.summary).toBe('restart: true');
      const [p, x, y, z] = outcome.results;
      // y ended before x although listed after it; z started once both had ended.
      expect(y!.endMs!).toBeLessThanOrEqual(x!.endMs!);
      expect(x!.startMs!).toBeGreaterThanOrEqual(p!.endMs!);
      expect(z!.startMs!).toBeGreaterThanOrEqual(x!.endMs!);
    });

    it(`${silent ? 'silent' : 'shown'}: a failure lets the running step end, starts nothing after it, and reports what ran`, async () => {
      const calls: Calls = [];
      const outcome = await runPipeline(together(calls, { failX: true }), base(false), { silent, concurrency: 4 });
      expect(shape(outcome).map((r) => `${r.id} ${r.status}`)).toEqual(['p changed', 'x failed', 'y changed']);
      expect(outcome.results[1]!.error).toBe('x broke');
      expect(calls).not.toContain('apply z');
      expect(outcome.failed).toBe(true);
    });
  }

  it('--check plans one step after the other in the listed order even when asked for steps at once', async () => {
    const calls: Calls = [];
    const outcome = await runPipeline(steps(calls), base(true), { silent: true, concurrency: 4 });
    expect(shape(outcome).map((r) => `${r.id} ${r.status}`)).toEqual(['a ok', 'b changed', 'c skipped', 'd failed', 'e changed']);
    expect(calls.filter((c) => !c.startsWith('check'))).toEqual([]);
  });
});

describe('a background step (Step.background) runs its commands at a lower CPU priority when steps run at once', () => {
  const withExec = (): Omit<InstallContext, 'notified' | 'progress'> => {
    const b = base(false);
    const redactor = new Redactor();
    return { ...b, host: { ...b.host, exec: new Exec(redactor, new Logger(redactor, { quiet: true }), { PATH: process.env.PATH }) } };
  };
  const probe = (seen: Record<string, number>, hosts: Set<Host>): Step[] =>
    (['front', 'back'] as const).map((id) => ({
      id,
      title: `Step ${id}`,
      ...(id === 'back' ? { background: true as const } : {}),
      check: async () => ({ changes: [{ target: `/etc/${id}`, summary: 'write' }] }),
      apply: async (ctx) => {
        hosts.add(ctx.host);
        await Promise.resolve();
        seen[id] = currentLowering();
      },
    }));

  it('lowered by BACKGROUND_NICENESS beside other steps, on the same host object; the other steps, and every step of a serial run, as they were', async () => {
    const b = withExec();
    const together: Record<string, number> = {};
    const hosts = new Set<Host>();
    await runPipeline(probe(together, hosts), b, { silent: true, concurrency: 4 });
    expect(together).toEqual({ front: 0, back: BACKGROUND_NICENESS });
    // One host for every step: per-host state (the manifest's recorder) is keyed by it.
    expect([...hosts]).toEqual([b.host]);
    const serial: Record<string, number> = {};
    await runPipeline(probe(serial, hosts), withExec(), { silent: true, concurrency: 1 });
    expect(serial).toEqual({ front: 0, back: 0 });
    expect(currentLowering()).toBe(0);
  });
});
