// The install bench's pure parts (test/e2e/install-bench-report.ts): the result without
// its times, the state comparison with its serial control, the medians and verdicts.
// The bench itself boots servers: npm run bench:install (not in CI).
import { describe, expect, it } from 'vitest';
import { compareStates, flatten, judgeStates, median, medianRun, normalizeResult, renderReport, summarize, type BenchRun, type Mode, type OperationRun, type ServerState } from './install-bench-report.js';

function run(index: number, mode: Mode, wallMs: number, criticalMs = wallMs, over: Partial<BenchRun> = {}): BenchRun {
  return {
    index,
    mode,
    args: mode === 'serial' ? '--json --channel --serial' : '--json --channel',
    exitCode: 0,
    ok: true,
    wallMs,
    wallFrom: 'exact',
    pipeMs: wallMs + 2000,
    pipelineMs: wallMs - 300,
    stepsMs: wallMs,
    criticalPath: { ids: ['preflight', 'node-runtime', 'health'], ms: criticalMs },
    steps: [],
    load: [1, 1.5],
    bootMs: 3000,
    ...over,
  };
}

function state(over: Partial<ServerState> = {}): ServerState {
  return {
    manifest: [
      { path: '/etc/nginx/sites-available/service-channel', type: 'file', mode: '0644', uid: 0, gid: 0, secret: false, sha256: 'a'.repeat(64) },
      { path: '/root/.openclaw/channel.env', type: 'file', mode: '0600', uid: 0, gid: 0, secret: true, sha256: 'b'.repeat(64) },
      { path: '/usr/local/bin/openclaw', type: 'symlink', mode: '0777', uid: 0, gid: 0, secret: false, target: '../lib/openclaw' },
    ],
    packages: { 'nginx:amd64': '1.22.1 ii', 'chromium:amd64': '1 ii' },
    unitFiles: { 'system nginx.service': 'enabled', 'user openclaw-gateway.service': 'enabled' },
    units: { 'system nginx.service': 'active', 'user openclaw-gateway.service': 'active' },
    result: normalizeResult({ ok: true, steps: [{ id: 'health', status: 'changed', durationMs: 5 }] }),
    ...over,
  };
}

describe('the result without its times', () => {
  it('drops time keys, replaces times in text, the per-server pin and the address', () => {
    const result = {
      ok: true,
      durationMs: 1234,
      steps: [{ id: 'health', status: 'changed', startMs: 1, endMs: 2, durationMs: 1, changes: ['gateway answered after 12.3 s', 'waited 250 ms', 'at 2026-11-28T16:09:20.123Z'] }],
      channel: { url: 'https://198.18.0.14:18790/service-channel', pin: `sha256:${'c'.repeat(64)}`, pinChanged: false },
      upgrade: { seconds: 3.2, from: '1', to: '2' },
    };
    expect(normalizeResult(result, { '198.18.0.14': '<server address>' })).toEqual({
      ok: true,
      steps: [{ id: 'health', status: 'changed', changes: ['gateway answered after <time>', 'waited <time>', 'at <time>'] }],
      channel: { url: 'https://<server address>:18790/service-channel', pin: '<per-server>', pinChanged: false },
      upgrade: { from: '1', to: '2' },
    });
  });

  it('flattens steps by id', () => {
    expect(flatten({ steps: [{ id: 'a', status: 'ok' }], recap: { ok: 1 }, none: [] })).toEqual({ 'steps.a.id': '"a"', 'steps.a.status': '"ok"', 'recap.ok': '1', none: '[]' });
  });
});

describe('the state comparison', () => {
  it('finds nothing between equal states, and the manifest as a set (order does not matter)', () => {
    const a = state();
    const b = state({ manifest: [...a.manifest].reverse() });
    expect(compareStates(a, b)).toEqual([]);
  });

  it('compares a secret file by its type, mode and owner only, another file by its hash too', () => {
    const a = state();
    const b = state({ manifest: a.manifest.map((e) => ({ ...e, sha256: e.sha256 ? 'f'.repeat(64) : undefined })) });
    expect(compareStates(a, b)).toEqual([{ part: 'manifest', key: '/etc/nginx/sites-available/service-channel sha256', left: 'a'.repeat(64), right: 'f'.repeat(64) }]);
    const c = state({ manifest: a.manifest.map((e) => (e.secret ? { ...e, mode: '0640' } : e)) });
    expect(compareStates(a, c)).toEqual([{ part: 'manifest', key: '/root/.openclaw/channel.env', left: '0600 0:0 secret'.replace(/^/, 'file '), right: 'file 0640 0:0 secret' }]);
  });

  it('compares a certificate made on each server by what it says, not its hash', () => {
    const crt = (sha: string, certificate: string) => state({ manifest: [{ path: '/etc/service-deploy/tls/channel.crt', type: 'file', mode: '0644', uid: 0, gid: 0, secret: false, sha256: sha.repeat(64), certificate }] });
    expect(compareStates(crt('1', 'subject CN=srv; 825 days'), crt('2', 'subject CN=srv; 825 days'))).toEqual([]);
    expect(compareStates(crt('1', 'subject CN=srv; 825 days'), crt('1', 'subject CN=srv; 30 days'))).toEqual([{ part: 'manifest', key: '/etc/service-deploy/tls/channel.crt certificate', left: 'subject CN=srv; 825 days', right: 'subject CN=srv; 30 days' }]);
  });

  it('names a missing path, package, unit file state, unit state and result field', () => {
    const a = state();
    const b = state({
      manifest: a.manifest.slice(1),
      packages: { 'nginx:amd64': '1.22.1 ii' },
      unitFiles: { ...a.unitFiles, 'system nginx.service': 'disabled' },
      units: { ...a.units, 'user openclaw-gateway.service': 'failed' },
      result: normalizeResult({ ok: true, steps: [{ id: 'health', status: 'failed' }] }),
    });
    expect(compareStates(a, b).map((d) => `${d.part}: ${d.key}: ${d.left} / ${d.right}`)).toEqual([
      'manifest: /etc/nginx/sites-available/service-channel: file 0644 0:0 / (absent)',
      'packages: chromium:amd64: 1 ii / (absent)',
      'unit files: system nginx.service: enabled / disabled',
      'units: user openclaw-gateway.service: active / failed',
      'result: steps.health.status: "changed" / "failed"',
    ]);
  });

  it('counts against the concurrent install only what does not differ between serial servers too', () => {
    const cert = (sha: string) => state({ manifest: [...state().manifest, { path: '/etc/service-deploy/tls/channel.crt', type: 'file', mode: '0644', uid: 0, gid: 0, secret: false, sha256: sha.repeat(64) }] });
    const verdict = judgeStates([
      { run: { index: 1, mode: 'serial' }, state: cert('1') },
      { run: { index: 2, mode: 'concurrent' }, state: cert('2') },
      { run: { index: 3, mode: 'serial' }, state: cert('3') },
      { run: { index: 4, mode: 'concurrent' }, state: { ...cert('4'), units: { ...state().units, 'system nginx.service': 'inactive' } } },
    ]);
    expect(verdict.betweenSerial.map((d) => d.key)).toEqual(['/etc/service-deploy/tls/channel.crt sha256']);
    expect(verdict.pairs.map((p) => [p.concurrent, p.differences.map((d) => d.key), p.alsoBetweenSerial.length])).toEqual([
      [2, [], 1],
      [4, ['system nginx.service'], 1],
    ]);
    expect(verdict.ok).toBe(false);
    // One round: no control, every difference counts.
    expect(judgeStates([{ run: { index: 1, mode: 'serial' }, state: cert('1') }, { run: { index: 2, mode: 'concurrent' }, state: cert('2') }]).ok).toBe(false);
  });
});

describe('the medians and verdicts', () => {
  it('median of an odd and an even count; the median run is the lower middle one', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(medianRun([run(1, 'concurrent', 90), run(2, 'concurrent', 70), run(3, 'concurrent', 80)])!.index).toBe(3);
    expect(medianRun([run(1, 'concurrent', 90), run(2, 'concurrent', 70)])!.index).toBe(2);
  });

  const equal = judgeStates([
    { run: { index: 1, mode: 'serial' }, state: state() },
    { run: { index: 2, mode: 'concurrent' }, state: state() },
  ]);

  it('passes at the targets: concurrent <= 0.70 x serial, wall <= 1.15 x critical path', () => {
    const runs = [run(1, 'serial', 100_000), run(2, 'concurrent', 70_000, 61_000), run(3, 'serial', 120_000), run(4, 'concurrent', 60_000, 60_000), run(5, 'serial', 110_000), run(6, 'concurrent', 90_000, 50_000)];
    const summary = summarize(runs, equal, { serialFlag: '--serial', rounds: 3 });
    expect(summary.serialMedianMs).toBe(110_000);
    expect(summary.concurrentMedianMs).toBe(70_000);
    expect(summary.ratio).toBeCloseTo(0.636, 3);
    expect(summary.medianConcurrent!.index).toBe(2);
    expect(summary.criticalRatio).toBeCloseTo(1.148, 3);
    expect(summary.verdicts.map((v) => v.ok)).toEqual([true, true, true, true, undefined, undefined, undefined, undefined]);
    expect(summary.verdicts[4]!.detail).toBe('not judged: no re-run ran');
    const text = renderReport(runs, summary, equal);
    expect(text).toContain('PASS  concurrent <= 0.70 x serial (medians): 70.0 s / 110.0 s = 0.64');
    expect(text).toMatch(/\| 6 \| concurrent \| 90.0 s +\| 89.7 s +\| 90.0 s +\| 50.0 s +\| 1.80 /);
  });

  it('fails over the targets, and does not judge the ratio without a serial mode or with a failed install', () => {
    const runs = [run(1, 'serial', 100_000), run(2, 'concurrent', 80_000, 60_000)];
    const summary = summarize(runs, equal, { serialFlag: '--serial', rounds: 1 });
    expect(summary.verdicts.slice(0, 4).map((v) => v.ok)).toEqual([true, false, false, true]);
    const noFlag = summarize(runs, equal, { serialFlag: '', rounds: 1 });
    expect(noFlag.verdicts[1]).toMatchObject({ ok: undefined, detail: expect.stringContaining('no serial mode') });
    const aa = summarize(runs, equal, { serialFlag: '--serial', concurrentFlag: '--serial', rounds: 1 });
    expect(aa.verdicts.slice(0, 4).map((v) => v.ok)).toEqual([true, undefined, undefined, true]);
    expect(aa.verdicts[1]!.detail).toContain('an A/A run');
    const failed = summarize([run(1, 'serial', 100_000), run(2, 'concurrent', 50_000, 50_000, { ok: false, exitCode: 1, failed: 'health' })], undefined, { serialFlag: '--serial', rounds: 1 });
    expect(failed.verdicts.slice(0, 4).map((v) => v.ok)).toEqual([false, undefined, undefined, undefined]);
    expect(failed.verdicts[0]!.detail).toBe('#2 concurrent: exit 1, failed at health');
  });

  it('shows what differs, serial on the left', () => {
    const differing = judgeStates([
      { run: { index: 1, mode: 'serial' }, state: state() },
      { run: { index: 2, mode: 'concurrent' }, state: state({ units: { ...state().units, 'user openclaw-gateway.service': 'activating' } }) },
    ]);
    const runs = [run(1, 'serial', 100_000), run(2, 'concurrent', 60_000)];
    const text = renderReport(runs, summarize(runs, differing, { serialFlag: '--serial', rounds: 1 }), differing);
    expect(text).toContain('FAIL  serial and concurrent servers alike: serial #1 vs concurrent #2: 1 differences');
    expect(text).toContain('  units: user openclaw-gateway.service: active  !=  activating');
  });

  const ops = (noop: number, model: number, reset: number, over: Partial<OperationRun> = {}): OperationRun[] => [
    { op: 'no-op re-run', args: '--catalog', exitCode: 0, ok: true, wallMs: noop, wallFrom: 'exact', pipelineMs: noop - 100, changed: 0 },
    { op: 'model change', args: '--catalog', exitCode: 0, ok: true, wallMs: model, wallFrom: 'exact', pipelineMs: model - 100, changed: 2, ...over },
    { op: 'reset', args: '--reset-clean --yes --json', exitCode: 0, ok: true, wallMs: reset, wallFrom: 'sampled', pipelineMs: NaN },
  ];

  it('the re-runs after each install: medians per mode, no slower than serial within 1.10, shown in their own table', () => {
    const runs = [
      run(1, 'serial', 100_000, 100_000, { operations: ops(1_300, 30_000, 13_000) }),
      run(2, 'concurrent', 60_000, 60_000, { operations: ops(1_000, 31_000, 13_500) }),
      run(3, 'serial', 100_000, 100_000, { operations: ops(1_200, 34_000, 12_000) }),
      run(4, 'concurrent', 60_000, 60_000, { operations: ops(1_100, 40_000, 14_000) }),
    ];
    const summary = summarize(runs, equal, { serialFlag: '--serial', rounds: 2 });
    expect(summary.operations.map((o) => [o.op, o.serialMedianMs, o.concurrentMedianMs])).toEqual([
      ['no-op re-run', 1_250, 1_050],
      ['model change', 32_000, 35_500],
      ['reset', 12_500, 13_750],
    ]);
    // 35.5 / 32.0 = 1.11 is over; 13.75 / 12.5 = 1.10 is at the bound.
    expect(summary.verdicts.slice(4).map((v) => v.ok)).toEqual([true, true, false, true]);
    expect(summary.verdicts[4]!.detail).toBe('12 re-runs');
    const text = renderReport(runs, summary, equal);
    expect(text).toContain('FAIL  model change: concurrent <= 1.10 x serial');
    expect(text).toMatch(/\| 2 +\| concurrent \| 1.0 s \(0.9 s\) +\| 31.0 s \(30.9 s\) +\| 13.5 s~ +\|/);
    expect(text).toMatch(/\| median \| concurrent \| 1.1 s = 0.84 x +\|/);
  });

  it('a re-run that failed or did not do its work is named, and its mode is not judged with fewer runs than rounds', () => {
    const runs = [
      run(1, 'serial', 100_000, 100_000, { operations: ops(1_300, 30_000, 13_000) }),
      run(2, 'concurrent', 60_000, 60_000, { operations: ops(1_000, 31_000, 13_500, { ok: false, exitCode: 0, error: 'the runtime config did not change' }).slice(0, 2) }),
    ];
    const summary = summarize(runs, equal, { serialFlag: '--serial', rounds: 1 });
    expect(summary.verdicts[4]).toMatchObject({ ok: false, detail: '#2 concurrent model change: exit 0 (the runtime config did not change)' });
    expect(summary.verdicts.slice(5).map((v) => v.ok)).toEqual([true, undefined, undefined]);
    expect(summary.verdicts[6]!.detail).toContain('not judged: 1 serial and 0 concurrent of 1 succeeded');
  });

  it('with no re-run at all (BENCH_RERUNS=0) each re-run verdict says so, not "0 of N succeeded"', () => {
    const runs = [run(1, 'serial', 100_000, 100_000), run(2, 'concurrent', 60_000, 60_000)];
    const summary = summarize(runs, equal, { serialFlag: '--serial', rounds: 1 });
    expect(summary.verdicts.slice(4).map((v) => v.ok)).toEqual([undefined, undefined, undefined, undefined]);
    for (const v of summary.verdicts.slice(5)) expect(v.detail).toMatch(/^not judged: no re-run ran \(BENCH_RERUNS=0\)/);
  });
});
