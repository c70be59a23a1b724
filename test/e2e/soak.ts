// The soak's pure parts (issue 26 item 5): the portal-like traffic plan, the samples the
// bench takes every minute, and what they add up to: the acceptance figures and the
// table. No I/O here; test/e2e/soak.test.ts holds them to their rules. The traffic itself
// is soak-traffic.ts, the host-side probes soak-host.ts, the plot soak-plot.ts, the bench
// soak-bench.ts (npm run soak) and the e2e's short form soak-short.ts.

// ---- the traffic plan --------------------------------------------------------------

export type SessionKind = 'short' | 'returning' | 'long';

/** One visit of a portal session: a few messages one after another, each sent after the previous reply. */
export interface Burst {
  session: number;
  kind: SessionKind;
  /** 1: the session's first visit (starts it without a sessionId); 2: a returning session's second visit. */
  part: 1 | 2;
  messages: string[];
  /** A quiet spell before this burst starts (ms): the portal's traffic is not constant, and the heartbeat runs only while no turn is (docs of the pinned runtime). */
  lullBeforeMs?: number;
}

export interface PlanOptions {
  seed: number;
  /** At least this many sessions... */
  minSessions: number;
  /** ...and at least this many chats. */
  minChats: number;
  /** A quiet spell every N chats (0: none). */
  lullEveryChats?: number;
  lullMs?: number;
}

export interface Plan {
  bursts: Burst[];
  sessions: number;
  chats: number;
  kinds: Record<SessionKind, { sessions: number; chats: number }>;
}

/** mulberry32: a small seeded generator, so a plan is the same on every run with the same seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SENTENCES = [
  'Can I move my appointment on Tuesday to three in the afternoon?',
  'Please send me the address of the practice and where to park.',
  'My daughter has a toothache since yesterday, is there a slot today?',
  'Do you accept my insurance for a cleaning and an x-ray?',
  'I need to cancel tomorrow morning, something came up at work.',
  'What did the dentist say last time about the crown on the upper left?',
  'Could you remind me by text message two days before the visit?',
  'How much does whitening cost and how long does it take?',
  'Is Dr. Weber available on Saturdays this month?',
  'I paid the last invoice by bank transfer, can you check it arrived?',
  'We are three people, can we come one after another on Friday?',
  'The new patient form asks for my previous dentist, is that required?',
];

/**
 * The portal's pattern over a day, compressed: mostly short sessions (one to three
 * messages), some returning ones (a first visit, then the same sessionId again after
 * many other sessions), a few long conversations (12-30 messages). Sessions are added
 * until both minimums are met; every message carries a tag naming its session and turn.
 */
export function planTraffic(options: PlanOptions): Plan {
  const random = seeded(options.seed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const message = (session: number, turn: number) => {
    const parts = Array.from({ length: between(1, 4) }, () => SENTENCES[between(0, SENTENCES.length - 1)]);
    return `[soak s${session}.${turn}] ${parts.join(' ')}`;
  };
  const kinds: Plan['kinds'] = { short: { sessions: 0, chats: 0 }, returning: { sessions: 0, chats: 0 }, long: { sessions: 0, chats: 0 } };
  const bursts: Burst[] = [];
  const returns: Array<{ due: number; burst: Burst }> = [];
  let sessions = 0;
  let chats = 0;
  let sinceLull = 0;
  const push = (burst: Burst) => {
    if (options.lullEveryChats && sinceLull >= options.lullEveryChats) {
      burst.lullBeforeMs = options.lullMs ?? 45_000;
      sinceLull = 0;
    }
    sinceLull += burst.messages.length;
    bursts.push(burst);
  };
  while (sessions < options.minSessions || chats < options.minChats) {
    for (let i = 0; i < returns.length; ) {
      if (returns[i]!.due <= bursts.length) push(returns.splice(i, 1)[0]!.burst);
      else i += 1;
    }
    const session = ++sessions;
    const roll = random();
    const kind: SessionKind = roll < 0.05 ? 'long' : roll < 0.3 ? 'returning' : 'short';
    const first = kind === 'long' ? between(12, 30) : kind === 'returning' ? between(2, 4) : between(1, 3);
    const turns = Array.from({ length: first }, (_, t) => message(session, t + 1));
    push({ session, kind, part: 1, messages: turns });
    let count = first;
    if (kind === 'returning') {
      const second = between(1, 4);
      returns.push({ due: bursts.length + between(40, 120), burst: { session, kind, part: 2, messages: Array.from({ length: second }, (_, t) => message(session, first + t + 1)) } });
      count += second;
    }
    kinds[kind].sessions += 1;
    kinds[kind].chats += count;
    chats += count;
  }
  for (const { burst } of returns.sort((a, b) => a.due - b.due)) push(burst);
  return { bursts, sessions, chats, kinds };
}

// ---- samples -------------------------------------------------------------------------

/** What the bench records about one finished chat (after its retries). */
export interface ChatRecord {
  ok: boolean;
  /** ms since the soak began, when the chat ended. */
  endedAtMs: number;
  /** The answered attempt's time (ok chats). */
  latencyMs?: number;
  /** From the first attempt to the answer or the last refusal, retries included. */
  totalMs: number;
  attempts: number;
  /** Statuses (or connection errors) of the attempts that were retried or failed. */
  refusals: Array<number | string>;
}

/** One process of the gateway unit at a sample (soak.json): which processes came, from whom, and how old they are. */
export interface ProcessRow {
  pid: number;
  ppid: number;
  name: string;
  anonBytes: number;
  ageS: number;
}

/** One sample (every minute): the gateway unit, the whole server, its stores, the traffic since the last one. */
export interface SoakSample {
  atMs: number;
  label?: string;
  /** Chats answered / failed after retries so far, sessions started so far. */
  chats: number;
  failed: number;
  sessions: number;
  /** The gateway's main process (host pid): a new one means the gateway restarted. */
  gatewayPid: number;
  unit: { anonBytes: number; pssBytes: number; processes: number; fds: number; byName: Record<string, number>; procs?: ProcessRow[] };
  /** Every process of the server (the container's cgroup tree). */
  server: { pssBytes: number; anonBytes: number; processes: number };
  /** The host cgroup's own view when the server is memory-limited (page cache included in usage). */
  memcg?: { usageBytes: number; anonBytes: number; cacheBytes: number; workingSetBytes?: number; shmemBytes?: number; limitBytes: number; oomKills: number };
  /** Bytes on disk per store. */
  disk: Record<string, number>;
  /** Cumulative: MCP admission failures in the gateway's log, model calls that were not chats (the heartbeat's), chat turns offered no MCP tool. */
  mcpAdmissionFailures: number;
  heartbeatCalls: number;
  turnsWithoutMcpTools: number;
  /** The chats that ended since the previous sample. */
  interval: { chats: number; failed: number; retried: number; p50Ms: number; p99Ms: number };
  loadAverage: number;
}

/** Nearest-rank percentile (p in 0..100) of the values; 0 for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function intervalStats(chats: ChatRecord[]): SoakSample['interval'] {
  const latencies = chats.filter((c) => c.ok && c.latencyMs !== undefined).map((c) => c.latencyMs!);
  return {
    chats: chats.filter((c) => c.ok).length,
    failed: chats.filter((c) => !c.ok).length,
    retried: chats.filter((c) => c.attempts > 1).length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

// ---- what the samples add up to ---------------------------------------------------------

export const WARM_UP_CHATS = 100;
/** Issue 26's acceptance: the unit's anonymous memory grows by at most this much after warm-up. */
export const MAX_ANON_GROWTH = 0.1;
/** Processes a sample may catch starting or ending (a timer's run, a worker) without counting as growth. */
export const PROCESS_TOLERANCE = 2;
/** Preflight's recommendation (src/steps/preflight.ts: "1 GiB minimum, 2 GiB recommended"). */
export const RECOMMENDED_MEMORY = 2 * 1024 ** 3;
/** What the server's processes may use of it: the rest is the kernel's and the page cache's. */
export const PROCESS_SHARE = 0.75;

/** A stretch of the run with one gateway process (a restart starts the next one). */
export interface Segment {
  gatewayPid: number;
  fromChats: number;
  toChats: number;
  /** Judged only with a warm-up of WARM_UP_CHATS and at least two samples after it. */
  judged: boolean;
  /**
   * Processes the kernel killed for memory in this stretch (after warm-up) when the
   * server is memory-limited: a curve held flat by the OOM killer is not a flat curve.
   */
  oomKills: number;
  anonGrowth?: number;
  unitProcesses?: { afterWarmUp: number; atEnd: number; max: number };
  serverProcesses?: { afterWarmUp: number; atEnd: number; max: number };
}

export interface Verdict {
  name: string;
  ok: boolean;
  detail: string;
}

export interface SoakSummary {
  chats: number;
  failed: number;
  sessions: number;
  retriedChats: number;
  refusals: Record<string, number>;
  latency: { p50Ms: number; p99Ms: number; totalP99Ms: number };
  rest?: SoakSample;
  peak: { unitAnonBytes: number; unitPssBytes: number; serverPssBytes: number; memcgUsageBytes?: number; serverMemoryBytes: number };
  segments: Segment[];
  oomKills: number;
  mcpAdmissionFailures: number;
  heartbeatCalls: number;
  turnsWithoutMcpTools: number;
  /** Bytes per 1,000 chats, per store (from the sample at rest to the last). */
  diskPer1000Chats: Record<string, number>;
  diskAtEnd: Record<string, number>;
  verdicts: Verdict[];
  ok: boolean;
}

const median = (values: number[]) => percentile(values, 50);

/**
 * What the server's processes take of its memory, from the server's own cgroup (the
 * host-side limit): its working set, usage less the page cache not recently used, which
 * the kernel takes back before anything is killed: what the limit is enforced on. The
 * sum of the processes' PSS is information only: it is not what the kernel holds the
 * server to (it leaves out unmapped page cache and kernel memory, and counts file pages
 * charged to other cgroups), and it read 3.8 GiB in a server limited to 2 GiB while it
 * counted other containers' processes (docs/operations.md). Without a host cgroup (an
 * unlimited run) the PSS sum is all there is.
 */
export function serverMemory(s: SoakSample): number {
  if (!s.memcg) return s.server.pssBytes;
  return s.memcg.workingSetBytes ?? s.memcg.usageBytes;
}

function segmentsOf(samples: SoakSample[]): Segment[] {
  const groups: SoakSample[][] = [];
  for (const s of samples) {
    if (s.gatewayPid === 0) continue; // the gateway was down at that moment
    const last = groups.at(-1);
    if (last && last[0]!.gatewayPid === s.gatewayPid) last.push(s);
    else groups.push([s]);
  }
  return groups.map((group) => {
    const fromChats = group[0]!.chats;
    const after = group.filter((s) => s.chats >= fromChats + WARM_UP_CHATS);
    const judged = after.length >= 2 && after.at(-1)!.chats > after[0]!.chats;
    const oomKills = judged ? (after.at(-1)!.memcg?.oomKills ?? 0) - (after[0]!.memcg?.oomKills ?? 0) : 0;
    const segment: Segment = { gatewayPid: group[0]!.gatewayPid, fromChats, toChats: group.at(-1)!.chats, judged, oomKills };
    if (!segment.judged) return segment;
    // The first and last three samples after warm-up: medians for memory (one sample
    // may catch a turn's peak), minimums for processes (one may catch a timer's run).
    const head = after.slice(0, Math.min(3, Math.floor(after.length / 2)));
    const tail = after.slice(-Math.min(3, Math.floor(after.length / 2)));
    segment.anonGrowth = median(tail.map((s) => s.unit.anonBytes)) / median(head.map((s) => s.unit.anonBytes)) - 1;
    const range = (pick: (s: SoakSample) => number) => ({ afterWarmUp: Math.min(...head.map(pick)), atEnd: Math.min(...tail.map(pick)), max: Math.max(...after.map(pick)) });
    segment.unitProcesses = range((s) => s.unit.processes);
    segment.serverProcesses = range((s) => s.server.processes);
    return segment;
  });
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;

/**
 * The acceptance figures of issue 26 from a run's samples and chats: 0 failed chats
 * after retries; after warm-up the unit's anonymous memory grows by at most 10% (per
 * stretch between gateway restarts: a restart starts from scratch); the process count
 * stays constant; 0 MCP admission failures; memory at rest and at peak within what
 * preflight recommends; disk growth per 1,000 chats per store.
 */
export function summarize(samples: SoakSample[], chats: ChatRecord[], options: { restLabel?: string } = {}): SoakSummary {
  const rest = samples.find((s) => s.label === (options.restLabel ?? 'rest'));
  const last = samples.at(-1);
  const ok = chats.filter((c) => c.ok);
  const refusals: Record<string, number> = {};
  for (const c of chats) for (const r of c.refusals) refusals[String(r)] = (refusals[String(r)] ?? 0) + 1;
  const peakOf = (pick: (s: SoakSample) => number) => Math.max(0, ...samples.map(pick));
  const segments = segmentsOf(samples.filter((s) => s.label !== (options.restLabel ?? 'rest')));
  const judged = segments.filter((s) => s.judged);
  const first = rest ?? samples[0];
  const answered = last?.chats ?? ok.length;
  const diskPer1000Chats: Record<string, number> = {};
  if (first && last && answered > 0) for (const [store, bytes] of Object.entries(last.disk)) diskPer1000Chats[store] = ((bytes - (first.disk[store] ?? 0)) / answered) * 1000;
  const summary: SoakSummary = {
    chats: ok.length,
    failed: chats.length - ok.length,
    sessions: last?.sessions ?? 0,
    retriedChats: chats.filter((c) => c.attempts > 1).length,
    refusals,
    latency: {
      p50Ms: percentile(ok.map((c) => c.latencyMs ?? c.totalMs), 50),
      p99Ms: percentile(ok.map((c) => c.latencyMs ?? c.totalMs), 99),
      totalP99Ms: percentile(ok.map((c) => c.totalMs), 99),
    },
    rest,
    peak: {
      unitAnonBytes: peakOf((s) => s.unit.anonBytes),
      unitPssBytes: peakOf((s) => s.unit.pssBytes),
      serverPssBytes: peakOf((s) => s.server.pssBytes),
      ...(samples.some((s) => s.memcg) ? { memcgUsageBytes: peakOf((s) => s.memcg?.usageBytes ?? 0) } : {}),
      serverMemoryBytes: peakOf(serverMemory),
    },
    segments,
    oomKills: (last?.memcg?.oomKills ?? 0) - (samples[0]?.memcg?.oomKills ?? 0),
    mcpAdmissionFailures: (last?.mcpAdmissionFailures ?? 0) - (first?.mcpAdmissionFailures ?? 0),
    heartbeatCalls: (last?.heartbeatCalls ?? 0) - (first?.heartbeatCalls ?? 0),
    turnsWithoutMcpTools: (last?.turnsWithoutMcpTools ?? 0) - (first?.turnsWithoutMcpTools ?? 0),
    diskPer1000Chats,
    diskAtEnd: last?.disk ?? {},
    verdicts: [],
    ok: false,
  };
  const worstGrowth = Math.max(...judged.map((s) => s.anonGrowth!));
  const processGrowth = judged.map((s) => ({ unit: s.unitProcesses!.atEnd - s.unitProcesses!.afterWarmUp, server: s.serverProcesses!.atEnd - s.serverProcesses!.afterWarmUp }));
  const killed = judged.filter((s) => s.oomKills > 0);
  const killedNote = (s: Segment) => (s.oomKills > 0 ? ` (${s.oomKills} processes OOM-killed meanwhile: held flat by the kernel)` : '');
  const budget = RECOMMENDED_MEMORY * PROCESS_SHARE;
  summary.verdicts = [
    { name: 'failed chats after retries', ok: summary.failed === 0, detail: `${summary.failed} of ${chats.length} (${summary.retriedChats} retried)` },
    {
      name: `unit anonymous memory after warm-up (<= +${MAX_ANON_GROWTH * 100}%)`,
      ok: judged.length > 0 && worstGrowth <= MAX_ANON_GROWTH && killed.length === 0,
      detail: judged.length === 0 ? 'no stretch between restarts was long enough to judge' : judged.map((s) => `${s.fromChats}-${s.toChats} chats: ${(s.anonGrowth! * 100).toFixed(1)}%${killedNote(s)}`).join('; '),
    },
    {
      name: `process count constant (<= +${PROCESS_TOLERANCE})`,
      ok: judged.length > 0 && processGrowth.every((g) => g.unit <= PROCESS_TOLERANCE && g.server <= PROCESS_TOLERANCE) && killed.length === 0,
      detail: judged.length === 0 ? 'no stretch long enough to judge' : judged.map((s) => `${s.fromChats}-${s.toChats} chats: gateway unit ${s.unitProcesses!.afterWarmUp} -> ${s.unitProcesses!.atEnd} (max ${s.unitProcesses!.max}), server ${s.serverProcesses!.afterWarmUp} -> ${s.serverProcesses!.atEnd}${killedNote(s)}`).join('; '),
    },
    { name: 'MCP admission failures', ok: summary.mcpAdmissionFailures === 0, detail: `${summary.mcpAdmissionFailures} in the gateway's log; ${summary.turnsWithoutMcpTools} chat turns were offered no MCP tool` },
    {
      name: `memory within preflight's 2 GiB (server processes <= ${PROCESS_SHARE * 100}%)`,
      ok: summary.peak.serverMemoryBytes <= budget && summary.oomKills === 0,
      detail: `${samples.some((s) => s.memcg) ? "the server cgroup's working set" : 'no server cgroup: the sum of PSS'} at rest ${rest ? mib(serverMemory(rest)) : '?'}, peak ${mib(summary.peak.serverMemoryBytes)}; budget ${mib(budget)}; OOM kills ${summary.oomKills} (for information: server PSS at rest ${rest ? mib(rest.server.pssBytes) : '?'}, peak ${mib(summary.peak.serverPssBytes)}; gateway unit anon at rest ${rest ? mib(rest.unit.anonBytes) : '?'}, peak ${mib(summary.peak.unitAnonBytes)})`,
    },
  ];
  summary.ok = summary.verdicts.every((v) => v.ok);
  return summary;
}

// ---- the table ---------------------------------------------------------------------------

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)];
}

const MiB = (bytes: number) => (bytes / 1024 ** 2).toFixed(0);
const size = (bytes: number) => (Math.abs(bytes) >= 1024 ** 2 ? `${(bytes / 1024 ** 2).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(0)} KiB`);

/** The samples as a table (one row a minute) and the summary below it: what the bench prints and docs/operations.md shows. */
export function renderReport(samples: SoakSample[], summary: SoakSummary): string {
  const rows = samples.map((s) => [
    `${(s.atMs / 60_000).toFixed(0)}`,
    s.label ?? '',
    String(s.chats),
    String(s.sessions),
    MiB(s.unit.anonBytes),
    MiB(s.unit.pssBytes),
    MiB(s.server.pssBytes),
    s.memcg ? MiB(serverMemory(s)) : '-',
    String(s.unit.processes),
    String(s.server.processes),
    String(s.unit.fds),
    s.interval.chats ? `${(s.interval.p50Ms / 1000).toFixed(1)}/${(s.interval.p99Ms / 1000).toFixed(1)}` : '-',
    `${s.failed}/${s.interval.retried}`,
    String(s.mcpAdmissionFailures),
  ]);
  const out = [
    ...table(['min', 'event', 'chats', 'sessions', 'unit anon MiB', 'unit PSS MiB', 'server PSS MiB', 'server WS MiB', 'unit procs', 'server procs', 'unit fds', 'p50/p99 s', 'failed/retried', 'MCP adm. fail'], rows),
    '',
    `chats ${summary.chats} answered, ${summary.failed} failed after retries, ${summary.retriedChats} retried (${Object.entries(summary.refusals).map(([k, v]) => `${k}: ${v}`).join(', ') || 'no refusals'}); sessions ${summary.sessions}; latency p50 ${(summary.latency.p50Ms / 1000).toFixed(1)} s, p99 ${(summary.latency.p99Ms / 1000).toFixed(1)} s (with retries: p99 ${(summary.latency.totalP99Ms / 1000).toFixed(1)} s); heartbeat model calls ${summary.heartbeatCalls}`,
    '',
    ...table(
      ['store', 'at rest', 'at the end', 'per 1,000 chats'],
      Object.keys(summary.diskAtEnd).map((store) => [store, size(summary.rest?.disk[store] ?? 0), size(summary.diskAtEnd[store]!), size(summary.diskPer1000Chats[store] ?? 0)]),
    ),
    '',
    ...summary.verdicts.map((v) => `${v.ok ? 'PASS' : 'FAIL'} ${v.name}: ${v.detail}`),
  ];
  return out.join('\n');
}
