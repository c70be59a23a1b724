import { describe, expect, it } from 'vitest';
import { runByNeeds } from '../../src/pipeline/schedule.js';
import { LOCKS } from '../../src/pipeline/step.js';

/**
 * The schedule on steps whose runs the test ends by hand: what starts is observed
 * between the test's moves, never timed.
 */
function harness(steps: Array<{ id: string; needs?: string[] }>, concurrency: number) {
  const started: string[] = [];
  const running = new Set<string>();
  let most = 0;
  const enders = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  let settled: { ok: true } | { ok: false; error: Error } | undefined;
  const done = runByNeeds(
    steps,
    (index) => {
      const id = steps[index]!.id;
      started.push(id);
      running.add(id);
      most = Math.max(most, running.size);
      return new Promise<void>((resolve, reject) => enders.set(id, { resolve, reject })).finally(() => running.delete(id));
    },
    { concurrency },
  ).then(
    () => (settled = { ok: true }),
    (error: Error) => (settled = { ok: false, error }),
  );
  // Lets every promise reaction the last move caused run (no timers involved).
  const settle = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  return {
    started,
    running: () => [...running].sort(),
    most: () => most,
    settled: () => settled,
    done,
    end: async (id: string) => {
      enders.get(id)!.resolve();
      await settle();
    },
    fail: async (id: string, message: string) => {
      enders.get(id)!.reject(new Error(message));
      await settle();
    },
    settle,
  };
}

const graph = [
  { id: 'preflight' },
  { id: 'apt-a', needs: ['preflight', LOCKS.apt] },
  { id: 'node', needs: ['preflight'] },
  { id: 'apt-b', needs: ['preflight', LOCKS.apt] },
  { id: 'runtime', needs: ['node'] },
  { id: 'config', needs: ['runtime', 'apt-b'] },
];

describe('runByNeeds: steps start when what they need has ended', () => {
  it('concurrency 1 runs the steps one at a time in their listed order', async () => {
    const h = harness(graph, 1);
    await h.settle();
    for (const id of graph.map((s) => s.id)) {
      expect(h.running()).toEqual([id]);
      await h.end(id);
    }
    await h.done;
    expect(h.started).toEqual(graph.map((s) => s.id));
    expect(h.most()).toBe(1);
    expect(h.settled()).toEqual({ ok: true });
  });

  it('independent steps run together; a step waits for its needs; two steps never hold one lock', async () => {
    const h = harness(graph, 4);
    await h.settle();
    expect(h.running()).toEqual(['preflight']);
    await h.end('preflight');
    // apt-b needs only preflight but shares apt's lock with apt-a (listed first).
    expect(h.running()).toEqual(['apt-a', 'node']);
    await h.end('node');
    expect(h.running()).toEqual(['apt-a', 'runtime']);
    await h.end('apt-a');
    expect(h.running()).toEqual(['apt-b', 'runtime']);
    await h.end('runtime');
    // config needs apt-b too.
    expect(h.running()).toEqual(['apt-b']);
    await h.end('apt-b');
    expect(h.running()).toEqual(['config']);
    await h.end('config');
    await h.done;
    expect(h.settled()).toEqual({ ok: true });
  });

  it('never runs more than `concurrency` steps at once, starting the first listed that may', async () => {
    const h = harness([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }], 2);
    await h.settle();
    expect(h.running()).toEqual(['a', 'b']);
    await h.end('b');
    expect(h.running()).toEqual(['a', 'c']);
    await h.end('a');
    await h.end('c');
    await h.end('d');
    await h.done;
    expect(h.started).toEqual(['a', 'b', 'c', 'd']);
    expect(h.most()).toBe(2);
  });

  it('after a failure nothing more starts, the running steps end first, and it rejects with the first failure', async () => {
    const h = harness(graph, 4);
    await h.settle();
    await h.end('preflight');
    await h.fail('node', 'npm failed');
    // apt-a is mid-apply: not cut off, and the schedule is not over until it ends.
    expect(h.running()).toEqual(['apt-a']);
    expect(h.settled()).toBeUndefined();
    await h.end('apt-a');
    await h.done;
    expect(h.started).toEqual(['preflight', 'apt-a', 'node']);
    expect(h.settled()).toMatchObject({ ok: false, error: { message: 'npm failed' } });
  });

  it('a step whose need never ends is named instead of waited for forever', async () => {
    const h = harness([{ id: 'a' }, { id: 'b', needs: ['nowhere'] }], 2);
    await h.settle();
    await h.end('a');
    await h.done;
    expect(h.settled()).toMatchObject({ ok: false, error: { message: 'steps that can never start: b (needs nowhere)' } });
  });
});
