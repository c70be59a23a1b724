import { Listr, type ListrTask } from 'listr2';
import { describe, expect, it } from 'vitest';
import { LineRelay, PROGRESS_EVERY_MS, PlainRenderer, TerminalRenderer, Turn, progressFraction, type StepRendererTaskOptions } from '../../src/pipeline/renderer.js';
import type { StepResult } from '../../src/pipeline/step.js';

/** Runs a real listr2 task list with one of our renderers, on a clock and timers the test moves. */
function harness(Renderer: typeof PlainRenderer | typeof TerminalRenderer, { color = false, check = false } = {}) {
  let out = '';
  let clock = Date.parse('2026-11-23T10:00:00Z');
  let timers: Array<{ at: number; run: () => void }> = [];
  const lines = new LineRelay();
  const options = {
    write: (t: string) => (out += t),
    now: () => new Date(clock),
    color,
    check,
    lines,
    schedule: (run: () => void, ms: number) => {
      const timer = { at: clock + ms, run };
      timers.push(timer);
      return () => (timers = timers.filter((t) => t !== timer));
    },
  };
  return {
    lines,
    /** Moves the clock, running the timers that come due. */
    tick: (ms: number) => {
      clock += ms;
      const due = timers.filter((t) => t.at <= clock);
      timers = timers.filter((t) => t.at > clock);
      for (const t of due) t.run();
    },
    run: (tasks: ListrTask[], { concurrent = false } = {}) =>
      new Listr(tasks, {
        concurrent,
        renderer: Renderer,
        rendererOptions: options,
        fallbackRenderer: Renderer,
        fallbackRendererOptions: options,
        registerSignalListeners: false,
      })
        .run()
        .then(
          () => 'done',
          (error: Error) => `threw: ${error.message}`,
        ),
    /** What a terminal shows at the end: live lines that were cleared are gone. */
    shown: () => out.split('\n').map((l) => l.split('\r\u001B[2K').at(-1)!).filter(Boolean),
    /** Plain lines without their timestamp (checked to be there). */
    plain: () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          expect(l).toMatch(/^2026-11-23T\d\d:\d\d:\d\dZ /);
          return l.slice(21);
        }),
    raw: () => out,
  };
}

const result = (id: string, status: StepResult['status'], extra: Partial<StepResult> = {}): StepResult => ({
  id,
  title: `Step ${id}`,
  status,
  changes: [],
  durationMs: 0,
  ...extra,
});

/** A task as the runner makes it: its step result as the per-task option, listr2 told the same. */
function stepTask(end: StepResult, body: (task: Parameters<ListrTask['task']>[1]) => void | Promise<void> = () => undefined): ListrTask {
  let outcome: StepResult | undefined;
  const rendererOptions: StepRendererTaskOptions = { outcome: () => outcome };
  return {
    title: end.title,
    rendererOptions,
    fallbackRendererOptions: rendererOptions,
    task: async (_, task) => {
      await body(task);
      outcome = end;
      if (end.status === 'skipped') task.skip(end.reason);
      if (end.status === 'failed') throw new Error(end.error);
    },
  };
}

describe('plain renderer (not a terminal: listr2 fallback renderer)', () => {
  it('one timestamped line per outcome; consecutive skips for one reason share a line, another reason gets its own', async () => {
    const h = harness(PlainRenderer);
    const ran = await h.run([
      stepTask(result('a', 'ok')),
      stepTask(result('b', 'skipped', { reason: 'no channel' })),
      stepTask(result('c', 'skipped', { reason: 'no channel' })),
      stepTask(result('d', 'skipped', { reason: 'arm64' })),
      stepTask(result('e', 'changed', { changes: [{ target: 'x', summary: 'create x' }, { target: 'y', summary: 'mode 0644 -> 0600' }] })),
      stepTask(result('f', 'failed', { error: 'boom\n  - detail', hint: 'do this' })),
      stepTask(result('g', 'ok')),
    ]);
    expect(ran).toBe('threw: boom\n  - detail');
    expect(h.raw()).toMatch(/^2026-11-23T10:00:00Z Step a: ok\n/);
    expect(h.plain()).toEqual([
      'Step a: ok',
      'Step b; Step c: skipped: no channel',
      'Step d: skipped: arm64',
      'Step e: changed (create x; mode 0644 -> 0600)',
      'Step f: failed: boom | - detail',
    ]);
    expect(h.raw()).not.toMatch(/\u001B/);
  });

  it('check mode: a change is "would change", a step that cannot be planned "cannot plan"', async () => {
    const h = harness(PlainRenderer, { check: true });
    let outcome: StepResult | undefined;
    await h.run([
      stepTask(result('a', 'changed', { changes: [{ target: 'x', summary: 'create x' }] })),
      // The runner's check mode: the step is recorded failed, the task completes.
      { title: 'Step b', rendererOptions: { outcome: () => outcome }, fallbackRendererOptions: { outcome: () => outcome }, task: () => void (outcome = result('b', 'failed', { error: 'no network' })) },
    ]);
    expect(h.plain()).toEqual(['Step a: would change (create x)', 'Step b: cannot plan: no network']);
  });

  it('progress: the first line at once, then at most every PROGRESS_EVERY_MS or at a new quarter; a held-back text comes when its time is up', async () => {
    const h = harness(PlainRenderer);
    await h.run([
      stepTask(result('n', 'changed', { changes: [{ target: 'n', summary: 'install Node' }] }), (task) => {
        task.output = 'downloading node.tar.gz: 0.1 of 28.0 MB (0%)';
        for (let mb = 1; mb < 7; mb++) {
          h.tick(100);
          task.output = `downloading node.tar.gz: ${mb}.0 of 28.0 MB (${Math.floor((mb / 28) * 100)}%)`; // 25% at 7 MB
        }
        h.tick(1000);
        task.output = 'downloading node.tar.gz: 7.0 of 28.0 MB (25%)'; // a new quarter, a second after the last line
        h.tick(200);
        task.output = 'downloading node.tar.gz: 8.0 of 28.0 MB (28%)'; // held back ...
        h.tick(PROGRESS_EVERY_MS); // ... and written when its time is up
        h.tick(PROGRESS_EVERY_MS - 1000); // nothing new: nothing written
        task.output = 'unpacking node.tar.gz'; // held back ...
      }), // ... and dropped: the step ended first
    ]);
    expect(h.plain()).toEqual([
      'Step n: ... downloading node.tar.gz: 0.1 of 28.0 MB (0%)',
      'Step n: ... downloading node.tar.gz: 7.0 of 28.0 MB (25%)',
      'Step n: ... downloading node.tar.gz: 8.0 of 28.0 MB (28%)',
      'Step n: changed (install Node)',
    ]);
  });

  it('a flood of progress (apt, npm, a wait counting seconds) stays a handful of lines', async () => {
    const h = harness(PlainRenderer);
    await h.run([
      stepTask(result('w', 'ok'), (task) => {
        for (let s = 0; s < 120; s++) {
          task.output = `waiting for /healthz: ${s} s of 120 s (connect ECONNREFUSED)`;
          h.tick(1000);
        }
      }),
    ]);
    const lines = h.plain();
    // 120 s: one line per 10 s at most (quarters fall on the same lines or in between).
    expect(lines.length).toBeGreaterThan(5);
    expect(lines.length).toBeLessThanOrEqual(120 / 10 + 4 + 1);
    expect(new Set(lines).size).toBe(lines.length);
  });

  it('a trailing group of skips is said when the list ends; log lines come between step lines, after the skips they follow', async () => {
    const h = harness(PlainRenderer);
    await h.run([
      stepTask(result('a', 'skipped', { reason: 'check mode' })),
      stepTask(result('b', 'ok'), () => void h.lines.write('waiting for the package manager lock: pid 7 (apt-get)')),
      stepTask(result('c', 'skipped', { reason: 'check mode' })),
    ]);
    expect(h.plain()).toEqual(['Step a: skipped: check mode', 'waiting for the package manager lock: pid 7 (apt-get)', 'Step b: ok', 'Step c: skipped: check mode']);
    // After the list, nobody takes the lines (the logger writes them itself).
    expect(h.lines.write('after the list')).toBe(false);
    expect(h.raw()).not.toContain('after the list');
  });

  it('tasks without a step result are described from their listr2 state', async () => {
    const h = harness(PlainRenderer);
    await h.run([
      { title: 'plain ok', task: () => undefined },
      { title: 'plain skip', task: (_, task) => task.skip('not today') },
      { title: 'listr2 skip', skip: 'not today', task: () => undefined },
      { title: 'plain failure', task: () => Promise.reject(new Error('went wrong')) },
    ]);
    expect(h.plain()).toEqual(['plain ok: ok', 'plain skip; listr2 skip: skipped: not today', 'plain failure: failed: went wrong']);
  });
});

describe('terminal renderer (listr2 primary renderer)', () => {
  it('outcome lines with symbols and durations, the skip group once, a live line with progress, cleared at the end', async () => {
    const h = harness(TerminalRenderer);
    await h.run([
      stepTask(result('a', 'ok'), (task) => {
        task.output = 'npm install: 3 packages resolved, 0 downloaded';
        h.tick(3000);
        task.output = 'npm install: 9 packages resolved, 2 downloaded';
        h.lines.write('a log line');
      }),
      stepTask(result('b', 'skipped', { reason: 'no channel' })),
      stepTask(result('c', 'skipped', { reason: 'no channel' })),
      stepTask(result('d', 'failed', { error: 'boom' })),
    ]);
    expect(h.shown()).toEqual(['a log line', '✔ Step a: ok 3.0 s', '↓ Step b; Step c: skipped: no channel', '✖ Step d: failed: boom']);
    // The live line (drawn again under the log line) had the step, its progress and its seconds.
    expect(h.raw()).toContain('Step a: npm install: 9 packages resolved, 2 downloaded (3 s)');
    expect(h.raw()).not.toMatch(/\u001B\[\d+m/);
    expect(h.raw().endsWith('\n') || h.raw().endsWith('\r\u001B[2K')).toBe(true);
  });

  it('colours when asked, and by default unless NO_COLOR is set', async () => {
    const h = harness(TerminalRenderer, { color: true });
    await h.run([stepTask(result('a', 'ok')), stepTask(result('b', 'changed', { changes: [{ target: 'b', summary: 'write b' }] }))]);
    expect(h.raw()).toContain('\u001B[32m✔\u001B[0m Step a: ok');
    expect(h.raw()).toContain('\u001B[33m●\u001B[0m Step b: changed (write b)');

    const saved = process.env.NO_COLOR;
    try {
      process.env.NO_COLOR = '1';
      let out = '';
      await new Listr([stepTask(result('a', 'ok'))], {
        renderer: TerminalRenderer,
        rendererOptions: { write: (t: string) => (out += t) },
        fallbackRenderer: TerminalRenderer,
        fallbackRendererOptions: { write: (t: string) => (out += t) },
        registerSignalListeners: false,
      }).run();
      expect(out).toContain('✔ Step a: ok');
      expect(out).not.toMatch(/\u001B\[\d+m/);
    } finally {
      if (saved === undefined) delete process.env.NO_COLOR;
      else process.env.NO_COLOR = saved;
    }
  });
});

describe('steps at once (the runner starts every task; a Turn says when its step runs)', () => {
  /** a and b run together (a begins b, as the schedule would); c waits for a turn that never comes. */
  function together(h: ReturnType<typeof harness>, seen: string[]) {
    const turns = { a: new Turn(), b: new Turn(), c: new Turn() };
    let aDone!: () => void;
    const aEnded = new Promise<void>((resolve) => (aDone = resolve));
    const withTurn = (task: ListrTask, turn: Turn): ListrTask => {
      const options = { ...(task.rendererOptions as StepRendererTaskOptions), turn };
      return { ...task, rendererOptions: options, fallbackRendererOptions: options };
    };
    return [
      withTurn(
        stepTask(result('a', 'changed', { changes: [{ target: 'x', summary: 'create x' }] }), (task) => {
          turns.a.begin();
          task.output = 'npm ci: 40%';
          turns.b.begin();
          h.tick(2000);
          // A log line redraws the live line under it.
          h.lines.write('a log line');
          seen.push(h.raw());
          aDone();
        }),
        turns.a,
      ),
      withTurn(stepTask(result('b', 'ok'), () => aEnded), turns.b),
      withTurn(
        {
          title: 'Step c',
          task: async () => {
            await aEnded;
            turns.c.unreached = true;
          },
        },
        turns.c,
      ),
    ];
  }

  it('terminal: the live line names each running step with its seconds, the first with its progress; a step never reached has no line', async () => {
    const h = harness(TerminalRenderer);
    const seen: string[] = [];
    expect(await h.run(together(h, seen), { concurrent: true })).toBe('done');
    expect(seen[0]).toContain('Step a: npm ci: 40% (2 s) · Step b (2 s)');
    expect(h.raw()).not.toContain('Step c');
    expect(h.shown()).toEqual(['a log line', '● Step a: changed (create x) 2.0 s', '✔ Step b: ok 2.0 s']);
  });

  it('plain: one line per step that ran, none for a step never reached', async () => {
    const h = harness(PlainRenderer);
    expect(await h.run(together(h, []), { concurrent: true })).toBe('done');
    expect(h.plain()).toEqual(['Step a: ... npm ci: 40%', 'a log line', 'Step a: changed (create x)', 'Step b: ok']);
  });
});

describe('progress fractions', () => {
  it('read from percentages and "x of y"', () => {
    expect(progressFraction('apt-get install: 43% Unpacking nginx')).toBeCloseTo(0.43);
    expect(progressFraction('downloading node.tar.gz: 12.3 of 28.1 MB (43%)')).toBeCloseTo(0.43);
    expect(progressFraction('downloading node.tar.gz: 12.3 MB')).toBeUndefined();
    expect(progressFraction('waiting for http://127.0.0.1:18789/healthz: 30 s of 120 s (HTTP 503)')).toBeCloseTo(0.25);
    expect(progressFraction('npm install openclaw@1.2.3: 57 packages resolved, 12 downloaded')).toBeUndefined();
  });
});
