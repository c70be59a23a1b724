// The soak's pure parts (test/e2e/soak.ts, soak-plot.ts): the portal-like plan, the
// acceptance figures from samples (restarts split the run; a leak fails it), the plot.
// The soak itself runs on a booted server: npm run soak, and its short form in the e2e.
import { describe, expect, it } from 'vitest';
import { MAX_ANON_GROWTH, PROCESS_TOLERANCE, percentile, planTraffic, renderReport, summarize, type ChatRecord, type SoakSample } from './soak.js';
import { niceTicks, renderSvg } from './soak-plot.js';
import { AddressPool } from './soak-traffic.js';

const MiB = 1024 ** 2;

function sample(over: Partial<SoakSample> & { chats: number; anon?: number; procs?: number; pid?: number; disk?: Record<string, number> }): SoakSample {
  return {
    atMs: over.chats * 1000,
    chats: over.chats,
    failed: 0,
    sessions: Math.ceil(over.chats / 4),
    gatewayPid: over.pid ?? 100,
    unit: { anonBytes: (over.anon ?? 400) * MiB, pssBytes: (over.anon ?? 400) * MiB * 1.2, processes: over.procs ?? 3, fds: 40, byName: {} },
    server: { pssBytes: ((over.anon ?? 400) + 150) * MiB, anonBytes: 0, processes: (over.procs ?? 3) + 20 },
    disk: over.disk ?? { journal: 1000 + over.chats * 10 },
    mcpAdmissionFailures: over.mcpAdmissionFailures ?? 0,
    heartbeatCalls: 0,
    turnsWithoutMcpTools: 0,
    interval: { chats: 0, failed: 0, retried: 0, p50Ms: 0, p99Ms: 0 },
    loadAverage: 1,
    ...(over.label ? { label: over.label } : {}),
  };
}

const okChats = (n: number): ChatRecord[] => Array.from({ length: n }, (_, i) => ({ ok: true, endedAtMs: i, latencyMs: 1000 + i, totalMs: 1000 + i, attempts: 1, refusals: [] }));

describe('the traffic plan', () => {
  it('meets both minimums with short, returning and long sessions, the same for the same seed', () => {
    const plan = planTraffic({ seed: 26, minSessions: 520, minChats: 2000 });
    expect(plan.sessions).toBeGreaterThanOrEqual(520);
    expect(plan.chats).toBeGreaterThanOrEqual(2000);
    expect(plan.bursts.reduce((n, b) => n + b.messages.length, 0)).toBe(plan.chats);
    expect(plan.kinds.short.sessions).toBeGreaterThan(plan.sessions / 2);
    expect(plan.kinds.returning.sessions).toBeGreaterThan(plan.sessions / 10);
    expect(plan.kinds.long.sessions).toBeGreaterThan(5);
    expect(planTraffic({ seed: 26, minSessions: 520, minChats: 2000 })).toEqual(plan);
    expect(planTraffic({ seed: 27, minSessions: 520, minChats: 2000 })).not.toEqual(plan);
  });

  it('puts a returning session\'s second visit well after its first (or at the end of the plan), continuing its turn numbers', () => {
    const plan = planTraffic({ seed: 3, minSessions: 300, minChats: 900 });
    const seconds = plan.bursts.map((b, i) => ({ b, i })).filter(({ b }) => b.part === 2);
    expect(seconds.length).toBe(plan.kinds.returning.sessions);
    const tail = plan.bursts.length - [...plan.bursts].reverse().findIndex((b) => b.part === 1);
    for (const { b, i } of seconds) {
      const first = plan.bursts.findIndex((x) => x.session === b.session && x.part === 1);
      if (i < tail) expect(i - first).toBeGreaterThanOrEqual(40);
      else expect(i).toBeGreaterThan(first);
      expect(b.messages[0]).toContain(`[soak s${b.session}.${plan.bursts[first]!.messages.length + 1}]`);
    }
  });

  it('asks for a quiet spell every N chats', () => {
    const plan = planTraffic({ seed: 1, minSessions: 100, minChats: 400, lullEveryChats: 100, lullMs: 30_000 });
    const lulls = plan.bursts.filter((b) => b.lullBeforeMs === 30_000).length;
    expect(lulls).toBeGreaterThanOrEqual(3);
    expect(lulls).toBeLessThanOrEqual(plan.chats / 100);
  });
});

describe('the acceptance figures', () => {
  const flat = [sample({ chats: 0, label: 'rest', anon: 350 }), ...Array.from({ length: 10 }, (_, i) => sample({ chats: 50 + i * 100, anon: 400 + (i % 2) * 5 }))];

  it('a flat run passes every verdict; disk growth is per 1,000 chats from the sample at rest', () => {
    const summary = summarize(flat, okChats(950));
    expect(summary.verdicts.filter((v) => !v.ok)).toEqual([]);
    expect(summary.ok).toBe(true);
    expect(summary.diskPer1000Chats.journal).toBeCloseTo(10_000, 0);
    expect(summary.rest?.label).toBe('rest');
    expect(renderReport(flat, summary)).toContain('PASS unit anonymous memory');
  });

  it('a leak fails: memory growing and a process chain per session', () => {
    const leaking = [sample({ chats: 0, label: 'rest' }), ...Array.from({ length: 10 }, (_, i) => sample({ chats: 50 + i * 100, anon: 400 + i * 60, procs: 3 + i * 12 }))];
    const summary = summarize(leaking, okChats(950));
    const failed = summary.verdicts.filter((v) => !v.ok).map((v) => v.name);
    expect(failed).toEqual([expect.stringContaining('anonymous memory'), expect.stringContaining('process count')]);
    expect(summary.segments[0]!.anonGrowth).toBeGreaterThan(MAX_ANON_GROWTH);
  });

  it('a restart starts a new stretch with its own warm-up: memory falling at a restart is neither growth nor hidden growth', () => {
    const samples = [
      sample({ chats: 0, label: 'rest' }),
      ...[50, 150, 250, 350, 450].map((c) => sample({ chats: c, anon: 400, pid: 100 })),
      ...[500, 560, 700, 800, 900, 1000].map((c) => sample({ chats: c, anon: c < 600 ? 250 : 400 + (c - 700) / 2, pid: 200 })),
    ];
    const summary = summarize(samples, okChats(1000));
    expect(summary.segments.map((s) => [s.gatewayPid, s.judged])).toEqual([
      [100, true],
      [200, true],
    ]);
    expect(summary.segments[0]!.anonGrowth).toBe(0);
    // after the second warm-up (600 chats): medians of the first two (400, 450) and last two (500, 550) samples
    expect(summary.segments[1]!.anonGrowth).toBeCloseTo(0.25, 2);
    expect(summary.ok).toBe(false);
  });

  it('one sample catching a timer\'s processes is not growth; a raised floor is', () => {
    const spike = [sample({ chats: 0, label: 'rest' }), ...Array.from({ length: 8 }, (_, i) => sample({ chats: 100 + i * 100, procs: i === 4 ? 9 : 3 }))];
    expect(summarize(spike, okChats(800)).verdicts.find((v) => v.name.startsWith('process count'))!.ok).toBe(true);
    const floor = [sample({ chats: 0, label: 'rest' }), ...Array.from({ length: 8 }, (_, i) => sample({ chats: 100 + i * 100, procs: i < 4 ? 3 : 3 + PROCESS_TOLERANCE + 1 }))];
    expect(summarize(floor, okChats(800)).verdicts.find((v) => v.name.startsWith('process count'))!.ok).toBe(false);
  });

  it('a curve held flat by the OOM killer is not flat: kills in a stretch fail its memory and process verdicts', () => {
    const capped = [sample({ chats: 0, label: 'rest' }), ...Array.from({ length: 8 }, (_, i) => ({ ...sample({ chats: 100 + i * 100, anon: 1800, procs: 45 }), memcg: { usageBytes: 2 ** 31, anonBytes: 0, cacheBytes: 0, limitBytes: 2 ** 31, oomKills: i * 10 } }))];
    const summary = summarize(capped, okChats(800));
    expect(summary.segments[0]).toMatchObject({ judged: true, oomKills: 60, anonGrowth: 0 });
    const failed = summary.verdicts.filter((v) => !v.ok).map((v) => v.name);
    expect(failed).toEqual([expect.stringContaining('anonymous memory'), expect.stringContaining('process count'), expect.stringContaining('memory within')]);
    expect(summary.verdicts[1]!.detail).toContain('60 processes OOM-killed meanwhile');
  });

  it('fails on a failed chat, an MCP admission failure, a server over its memory budget, or nothing to judge', () => {
    const failedChat = summarize(flat, [...okChats(949), { ok: false, endedAtMs: 1, totalMs: 360_000, attempts: 70, refusals: [502, 502] }]);
    expect(failedChat.verdicts.find((v) => v.name.startsWith('failed chats'))!.ok).toBe(false);
    expect(failedChat.refusals).toEqual({ '502': 2 });
    const admission = summarize([...flat.slice(0, -1), sample({ chats: 950, mcpAdmissionFailures: 3 })], okChats(950));
    expect(admission.verdicts.find((v) => v.name.startsWith('MCP'))!.ok).toBe(false);
    const big = summarize([...flat, sample({ chats: 1000, anon: 1800 })], okChats(1000));
    expect(big.verdicts.find((v) => v.name.startsWith('memory within'))!.ok).toBe(false);
    const short = summarize([sample({ chats: 0, label: 'rest' }), sample({ chats: 60 })], okChats(60));
    expect(short.verdicts.find((v) => v.name.startsWith('unit anonymous'))).toMatchObject({ ok: false, detail: expect.stringContaining('long enough') });
  });

  it('judges the server\'s memory by its cgroup\'s working set when it has one: a PSS sum over the budget is information, a working set over it fails', () => {
    const withCgroup = (workingSet: number) => [
      { ...sample({ chats: 0, label: 'rest' }), memcg: { usageBytes: 900 * MiB, anonBytes: 600 * MiB, cacheBytes: 300 * MiB, workingSetBytes: 700 * MiB, shmemBytes: 0, limitBytes: 2048 * MiB, oomKills: 0 } },
      ...Array.from({ length: 8 }, (_, i) => ({ ...sample({ chats: 100 + i * 100, anon: 1800 }), memcg: { usageBytes: 2000 * MiB, anonBytes: 1000 * MiB, cacheBytes: 1000 * MiB, workingSetBytes: workingSet * MiB, shmemBytes: 10 * MiB, limitBytes: 2048 * MiB, oomKills: 0 } })),
    ];
    const verdict = (samples: SoakSample[]) => summarize(samples, okChats(800)).verdicts.find((v) => v.name.startsWith('memory within'))!;
    // 1,950 MiB of PSS, far over 1,536 MiB; the cgroup's own working set is 1,200 MiB.
    expect(verdict(withCgroup(1200))).toMatchObject({ ok: true, detail: expect.stringMatching(/working set at rest 700 MiB, peak 1200 MiB.*server PSS at rest 550 MiB, peak 1950 MiB/) });
    expect(verdict(withCgroup(1600)).ok).toBe(false);
    // An older soak.json without the working set: the cgroup's usage, page cache included.
    const old = withCgroup(1200).map((s) => ({ ...s, memcg: { ...s.memcg, workingSetBytes: undefined } }));
    expect(verdict(old).ok).toBe(false);
  });

  it('percentiles by nearest rank', () => {
    expect(percentile([], 50)).toBe(0);
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 99)).toBe(99);
  });
});

describe('the plot', () => {
  it('draws memory and processes over chats, with the events and an unexplained restart marked', () => {
    const samples = [sample({ chats: 0, label: 'rest' }), sample({ chats: 400, pid: 100 }), sample({ chats: 800, pid: 200 }), sample({ chats: 1200, pid: 300 })];
    const svg = renderSvg(samples, { title: 'Soak <test>', budgetBytes: 1536 * MiB, events: [{ x: 700, label: 'gateway restart' }] });
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('Soak &lt;test&gt;');
    expect(svg.match(/<polyline /g)?.length).toBe(6); // 3 memory series + budget, 2 process series
    expect(svg).toContain('>gateway restart<');
    expect(svg.match(/>gateway restarted</g)?.length).toBe(2); // 800 -> 1200 has no event (marked in both panels)
    expect(svg).toContain('budget 1536 MiB');
  });

  it('ticks are round numbers covering the maximum', () => {
    expect(niceTicks(2047)).toEqual([0, 500, 1000, 1500, 2000, 2500]);
    expect(niceTicks(9)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });
});

describe('the client addresses', () => {
  it('hands an address out at most once per spacing and to at most N requests at once', async () => {
    const pool = new AddressPool(['a', 'b'], 200, 1);
    const t = Date.now();
    const first = await pool.acquire();
    const second = await pool.acquire();
    expect(new Set([first.address, second.address])).toEqual(new Set(['a', 'b']));
    first.release();
    const third = await pool.acquire();
    expect(third.address).toBe(first.address);
    expect(Date.now() - t).toBeGreaterThanOrEqual(190);
    second.release();
    third.release();
  });
});
