// The install bench's pure parts (npm run bench:install; test/e2e/install-bench.ts runs
// the servers): what a server's state is made of for the serial/concurrent comparison,
// the comparison itself, the medians and verdicts, and the table. No container here:
// test/e2e/install-bench.test.ts checks these with made-up runs and states.
import type { CriticalPath } from '../../src/pipeline/critical-path.js';
import type { TimedStep } from '../../src/pipeline/timeline.js';

export type Mode = 'serial' | 'concurrent';

/** The acceptance targets (the issue): concurrent <= 0.70 x serial (medians); wall <= 1.15 x its critical path. */
export const TARGET_RATIO = 0.7;
export const TARGET_CRITICAL = 1.15;
/**
 * "No slower than before": the re-runs' concurrent median against the serial one (the
 * earlier behaviour), with this much room for noise (a gateway restart alone varies by
 * seconds from one start to the next).
 */
export const TARGET_RERUN = 1.1;

/** What runs on the installed server after its fresh install, in this order (the e2e's steps 4, 5 and 7). */
export const OPERATIONS = ['no-op re-run', 'model change', 'reset'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** One re-run on a bench server, with the same mode flag as its fresh install. */
export interface OperationRun {
  op: Operation;
  args: string;
  exitCode: number;
  /** Exit 0, a JSON result, and what the operation must do: the no-op changes nothing, the model change changes the runtime config. */
  ok: boolean;
  /** The binary's start to its exit, as a fresh install's wall. */
  wallMs: number;
  wallFrom: 'exact' | 'sampled' | 'pipe';
  /** The result's durationMs (an install's steps), when it has one. */
  pipelineMs: number;
  /** Steps changed (an install's recap), when it has one. */
  changed?: number;
  /** Its three longest steps, `id seconds` (where a slow re-run spent its time). */
  slowest?: string[];
  error?: string;
}

/** One fresh install of the bench: on a server of its own, timed from the binary's start to its exit. */
export interface BenchRun {
  /** 1-based, in the order the installs ran (serial and concurrent alternate). */
  index: number;
  mode: Mode;
  /** The install's arguments after `install.sh |bash -s --`. */
  args: string;
  exitCode: number;
  ok: boolean;
  /** The binary's start (its process's start time) to its exit, ms. */
  wallMs: number;
  /** How wallMs was measured: `exact` (the process's start time, 10 ms ticks) or `sampled` (first seen by a 50 ms poll). */
  wallFrom: 'exact' | 'sampled' | 'pipe';
  /** curl | bash from its start to its end (install.sh's download and checks included). */
  pipeMs: number;
  /** The --json result's durationMs: the steps' run inside the binary. */
  pipelineMs: number;
  /** The sum of every step's duration (the serial run's time if nothing overlapped). */
  stepsMs: number;
  criticalPath: CriticalPath;
  steps: TimedStep[];
  /** One-minute load average (whole machine) before and after the install. */
  load: [number, number];
  bootMs: number;
  /** The re-runs on this server after its fresh install (none when the install failed). */
  operations?: OperationRun[];
  /** The step that failed, and its error (secrets masked); or the end of stderr when there was no result. */
  failed?: string;
  error?: string;
}

export interface ManifestItem {
  path: string;
  type: string;
  mode: string;
  uid: number;
  gid: number;
  secret: boolean;
  sha256?: string;
  target?: string;
  /**
   * A certificate the install makes on each server (a new key pair: the channel's) is
   * compared by what it says instead of its hash: subject, issuer, names, key type and
   * lifetime (certificateShape in install-bench.ts).
   */
  certificate?: string;
}

/** What the comparison reads of a server right after its install (install-bench.ts collects it). */
export interface ServerState {
  /** /var/lib/service-deploy/manifest.json's entries. */
  manifest: ManifestItem[];
  /** `dpkg-query -W`: "name:arch" -> "version status". */
  packages: Record<string, string>;
  /** "system nginx.service" / "user openclaw-gateway.service" -> list-unit-files state. */
  unitFiles: Record<string, string>;
  /** The same keys -> ActiveState (list-units --all: services, sockets, timers, paths, targets). */
  units: Record<string, string>;
  /** The install's --json result with its times removed (normalizeResult). */
  result: unknown;
}

export type Part = 'manifest' | 'packages' | 'unit files' | 'units' | 'result';

export interface Difference {
  part: Part;
  key: string;
  left: string;
  right: string;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The run whose wall time is the median (of an even count, the lower of the two middle ones). */
export function medianRun(runs: readonly BenchRun[]): BenchRun | undefined {
  const sorted = [...runs].sort((a, b) => a.wallMs - b.wallMs);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Keys of the install result that are times (ms since the start, durations, instants). */
const TIME_KEY = /^(startMs|endMs|durationMs|seconds)$|Ms$|At$/;
/** Keys holding what each server makes for itself: the channel certificate's pin (a key pair per server). */
const PER_SERVER_KEY = /^(pin|previousPin)$/;

/**
 * The install's --json result without its times: every key that is a time removed
 * (startMs, endMs, durationMs...), times inside text (`12.3 s`, `250 ms`, ISO
 * instants) replaced by `<time>`, the certificate's pin (made on each server) by
 * `<per-server>`, and the server's own address (`replace`) by a name.
 */
export function normalizeResult(value: unknown, replace: Record<string, string> = {}): unknown {
  if (Array.isArray(value)) return value.map((v) => normalizeResult(v, replace));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (TIME_KEY.test(key)) continue;
      out[key] = PER_SERVER_KEY.test(key) && typeof v === 'string' ? '<per-server>' : normalizeResult(v, replace);
    }
    return out;
  }
  if (typeof value === 'string') {
    let text = value;
    for (const [from, to] of Object.entries(replace)) if (from) text = text.split(from).join(to);
    return text
      .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?Z?\b/g, '<time>')
      .replace(/\b\d+(\.\d+)?\s?(ms|s|min)\b/g, '<time>');
  }
  return value;
}

/** The leaves of a JSON value by path; an array of objects with an `id` is indexed by it (`steps.health.status`). */
export function flatten(value: unknown, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  if (Array.isArray(value)) {
    const byId = value.length > 0 && value.every((v) => v && typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string');
    value.forEach((v, i) => flatten(v, `${prefix}${prefix ? '.' : ''}${byId ? (v as { id: string }).id : `[${i}]`}`, out));
    if (value.length === 0) out[prefix] = '[]';
    return out;
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    for (const [k, v] of entries) flatten(v, `${prefix}${prefix ? '.' : ''}${k}`, out);
    if (entries.length === 0) out[prefix] = '{}';
    return out;
  }
  out[prefix] = JSON.stringify(value);
  return out;
}

function diffMaps(part: Part, left: Record<string, string>, right: Record<string, string>): Difference[] {
  const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])].sort();
  return keys.filter((k) => left[k] !== right[k]).map((key) => ({ part, key, left: left[key] ?? '(absent)', right: right[key] ?? '(absent)' }));
}

/**
 * The manifest as a set of (path, type, mode, uid, gid) plus a link's target and
 * whether the entry is secret, by path; and the SHA-256 where neither entry is secret
 * (a secret file holds what each install makes for itself: tokens, keys), or for a
 * certificate made on the server, what it says.
 */
function manifestDiff(left: readonly ManifestItem[], right: readonly ManifestItem[]): Difference[] {
  const shape = (e: ManifestItem) => `${e.type} ${e.mode} ${e.uid}:${e.gid}${e.secret ? ' secret' : ''}${e.target !== undefined ? ` -> ${e.target}` : ''}`;
  const l = new Map(left.map((e) => [e.path, e]));
  const r = new Map(right.map((e) => [e.path, e]));
  const out: Difference[] = [];
  for (const p of [...new Set([...l.keys(), ...r.keys()])].sort()) {
    const a = l.get(p);
    const b = r.get(p);
    if (!a || !b || shape(a) !== shape(b)) {
      out.push({ part: 'manifest', key: p, left: a ? shape(a) : '(absent)', right: b ? shape(b) : '(absent)' });
      continue;
    }
    if (a.certificate !== undefined || b.certificate !== undefined) {
      if (a.certificate !== b.certificate) out.push({ part: 'manifest', key: `${p} certificate`, left: a.certificate ?? '(not one)', right: b.certificate ?? '(not one)' });
    } else if (!a.secret && !b.secret && (a.sha256 ?? '') !== (b.sha256 ?? '')) out.push({ part: 'manifest', key: `${p} sha256`, left: a.sha256 ?? '(none)', right: b.sha256 ?? '(none)' });
  }
  return out;
}

/** Every difference between two servers' states. */
export function compareStates(left: ServerState, right: ServerState): Difference[] {
  return [
    ...manifestDiff(left.manifest, right.manifest),
    ...diffMaps('packages', left.packages, right.packages),
    ...diffMaps('unit files', left.unitFiles, right.unitFiles),
    ...diffMaps('units', left.units, right.units),
    ...diffMaps('result', flatten(left.result), flatten(right.result)),
  ];
}

export interface StateVerdict {
  /** Serial server #reference against each concurrent server: the differences not explained by serial servers differing too. */
  pairs: Array<{ serial: number; concurrent: number; differences: Difference[]; alsoBetweenSerial: Difference[] }>;
  /** Differences between serial servers (the control): content each install makes for itself, or an install that is not repeatable. */
  betweenSerial: Difference[];
  ok: boolean;
}

const diffKey = (d: Difference) => `${d.part}\0${d.key}`;

/**
 * The first serial server against every concurrent one. A difference that also shows
 * between two serial servers (the control, from the second round on) is not the
 * concurrent install's doing: it is listed apart and does not fail the comparison.
 */
export function judgeStates(states: ReadonlyArray<{ run: Pick<BenchRun, 'index' | 'mode'>; state: ServerState }>): StateVerdict {
  const serial = states.filter((s) => s.run.mode === 'serial');
  const concurrent = states.filter((s) => s.run.mode === 'concurrent');
  const reference = serial[0];
  const betweenSerial = serial.slice(1).flatMap((s) => compareStates(reference!.state, s.state));
  const control = new Set(betweenSerial.map(diffKey));
  const pairs = reference
    ? concurrent.map((c) => {
        const all = compareStates(reference.state, c.state);
        return { serial: reference.run.index, concurrent: c.run.index, differences: all.filter((d) => !control.has(diffKey(d))), alsoBetweenSerial: all.filter((d) => control.has(diffKey(d))) };
      })
    : [];
  const unique = new Map(betweenSerial.map((d) => [diffKey(d), d]));
  return { pairs, betweenSerial: [...unique.values()], ok: pairs.length > 0 && pairs.every((p) => p.differences.length === 0) };
}

export interface Verdict {
  name: string;
  /** undefined: not judged (why in detail). */
  ok: boolean | undefined;
  detail: string;
}

export interface BenchSummary {
  serialMedianMs: number;
  concurrentMedianMs: number;
  ratio: number;
  medianConcurrent?: BenchRun;
  criticalRatio: number;
  /** Per re-run: the medians of each mode and their ratio. */
  operations: Array<{ op: Operation; serialMedianMs: number; concurrentMedianMs: number; ratio: number; serial: number; concurrent: number }>;
  verdicts: Verdict[];
}

/** The operation's runs of one mode, the successful ones. */
function operationRuns(runs: readonly BenchRun[], mode: Mode, op: Operation): OperationRun[] {
  return runs.filter((r) => r.mode === mode).flatMap((r) => (r.operations ?? []).filter((o) => o.op === op && o.ok));
}

const s = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : '-');

/**
 * The medians, the ratios and the verdicts. `serialFlag` empty: the binary has no serial
 * mode, so both modes ran alike; `concurrentFlag` set (an A/A run of the bench itself):
 * the "concurrent" installs were not the default. Neither judges the timing targets.
 */
export function summarize(runs: readonly BenchRun[], states: StateVerdict | undefined, options: { serialFlag: string; concurrentFlag?: string; rounds: number }): BenchSummary {
  const done = runs.filter((r) => r.ok);
  const serial = done.filter((r) => r.mode === 'serial');
  const concurrent = done.filter((r) => r.mode === 'concurrent');
  const serialMedianMs = median(serial.map((r) => r.wallMs));
  const concurrentMedianMs = median(concurrent.map((r) => r.wallMs));
  const ratio = concurrentMedianMs / serialMedianMs;
  const mc = medianRun(concurrent);
  const criticalRatio = mc ? mc.wallMs / mc.criticalPath.ms : NaN;
  const failed = runs.filter((r) => !r.ok);
  const complete = failed.length === 0 && serial.length === options.rounds && concurrent.length === options.rounds;
  const notTimed = !options.serialFlag
    ? 'not judged: this binary has no serial mode (install --help names no --serial; BENCH_SERIAL_FLAG unset), so both ran the default'
    : options.concurrentFlag
      ? `not judged: the "concurrent" installs ran with ${options.concurrentFlag} (BENCH_CONCURRENT_FLAG: an A/A run of the bench)`
      : !complete
        ? 'not judged: not every install of every round succeeded'
        : undefined;
  const operations = OPERATIONS.map((op) => {
    const serialOps = operationRuns(runs, 'serial', op);
    const concurrentOps = operationRuns(runs, 'concurrent', op);
    const serialMs = median(serialOps.map((o) => o.wallMs));
    const concurrentMs = median(concurrentOps.map((o) => o.wallMs));
    return { op, serialMedianMs: serialMs, concurrentMedianMs: concurrentMs, ratio: concurrentMs / serialMs, serial: serialOps.length, concurrent: concurrentOps.length };
  });
  const ranOps = runs.flatMap((r) => (r.operations ?? []).map((o) => ({ run: r, o })));
  const failedOps = ranOps.filter(({ o }) => !o.ok);
  const verdicts: Verdict[] = [
    { name: 'every install succeeded', ok: failed.length === 0, detail: failed.length === 0 ? `${runs.length} installs` : failed.map((r) => `#${r.index} ${r.mode}: exit ${r.exitCode}${r.failed ? `, failed at ${r.failed}` : ''}${r.error ? ` (${r.error.slice(0, 300)})` : ''}`).join('; ') },
    {
      name: `concurrent <= ${TARGET_RATIO.toFixed(2)} x serial (medians)`,
      ok: notTimed ? undefined : ratio <= TARGET_RATIO,
      detail: `${notTimed ? `${notTimed}; ` : ''}${s(concurrentMedianMs)} / ${s(serialMedianMs)} = ${Number.isFinite(ratio) ? ratio.toFixed(2) : '-'}`,
    },
    {
      name: `wall <= ${TARGET_CRITICAL.toFixed(2)} x critical path (median concurrent run)`,
      ok: mc && !notTimed ? criticalRatio <= TARGET_CRITICAL : undefined,
      detail: mc ? `${notTimed ? `${notTimed}; ` : ''}#${mc.index}: ${s(mc.wallMs)} / ${s(mc.criticalPath.ms)} = ${criticalRatio.toFixed(2)} (${mc.criticalPath.ids.join(' -> ')})` : 'not judged: no concurrent install succeeded',
    },
    {
      name: 'serial and concurrent servers alike',
      ok: states && states.pairs.length > 0 ? states.ok : undefined,
      detail: !states || states.pairs.length === 0
        ? 'not judged: no serial and concurrent server to compare'
        : states.ok
          ? `serial #${states.pairs[0]?.serial} = concurrent ${states.pairs.map((p) => `#${p.concurrent}`).join(', ')} (manifest, packages, units, result without times)`
          : states.pairs.filter((p) => p.differences.length > 0).map((p) => `serial #${p.serial} vs concurrent #${p.concurrent}: ${p.differences.length} differences`).join('; ') || 'nothing compared',
    },
    {
      name: 'every re-run succeeded (no-op: nothing changed; model change: the runtime config changed; reset)',
      ok: ranOps.length === 0 ? undefined : failedOps.length === 0,
      detail: ranOps.length === 0 ? 'not judged: no re-run ran' : failedOps.length === 0 ? `${ranOps.length} re-runs` : failedOps.map(({ run, o }) => `#${run.index} ${run.mode} ${o.op}: exit ${o.exitCode}${o.error ? ` (${o.error.slice(0, 300)})` : ''}`).join('; '),
    },
    ...operations.map(({ op, serialMedianMs: sm, concurrentMedianMs: cm, ratio: r, serial: ns, concurrent: nc }): Verdict => {
      const missing = ranOps.length === 0
        ? 'not judged: no re-run ran (BENCH_RERUNS=0)'
        : ns < options.rounds || nc < options.rounds ? `not judged: ${ns} serial and ${nc} concurrent of ${options.rounds} succeeded` : undefined;
      const skip = notTimed ?? missing;
      return {
        name: `${op}: concurrent <= ${TARGET_RERUN.toFixed(2)} x serial (medians; no slower than before, with room for noise)`,
        ok: skip ? undefined : r <= TARGET_RERUN,
        detail: `${skip ? `${skip}; ` : ''}${s(cm)} / ${s(sm)} = ${Number.isFinite(r) ? r.toFixed(2) : '-'}`,
      };
    }),
  ];
  return { serialMedianMs, concurrentMedianMs, ratio, medianConcurrent: mc, criticalRatio, operations, verdicts };
}

/** A Markdown table's lines, each column as wide as its widest cell. */
function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)];
}

/** The runs' table, the medians and the verdicts, as printed (and written to install-bench.txt). */
export function renderReport(runs: readonly BenchRun[], summary: BenchSummary, states: StateVerdict | undefined): string {
  const head = ['#', 'mode', 'wall', 'steps ran', 'sum of steps', 'critical path', 'wall / crit.', 'install.sh', 'load', 'result'];
  const rows = runs.map((r) => [
    String(r.index),
    r.mode,
    `${s(r.wallMs)}${r.wallFrom === 'exact' ? '' : r.wallFrom === 'sampled' ? '~' : '*'}`,
    s(r.pipelineMs),
    s(r.stepsMs),
    s(r.criticalPath.ms),
    r.criticalPath.ms > 0 ? (r.wallMs / r.criticalPath.ms).toFixed(2) : '-',
    s(r.pipeMs - r.wallMs),
    `${r.load[0].toFixed(1)}-${r.load[1].toFixed(1)}`,
    r.ok ? 'ok' : `FAILED${r.failed ? ` at ${r.failed}` : ''}`,
  ]);
  const out = table(head, rows);
  out.push(`median wall: serial ${s(summary.serialMedianMs)}, concurrent ${s(summary.concurrentMedianMs)}; concurrent / serial = ${Number.isFinite(summary.ratio) ? summary.ratio.toFixed(2) : '-'}`);
  out.push('(wall: the binary\'s start to its exit; ~ sampled start, * the whole curl | bash; steps ran: the result\'s durationMs; install.sh: its download and checks before the binary)');
  if (runs.some((r) => (r.operations ?? []).length > 0)) out.push('', renderOperations(runs, summary));
  out.push('');
  for (const v of summary.verdicts) out.push(`${v.ok === undefined ? 'NOT JUDGED' : v.ok ? 'PASS' : 'FAIL'}  ${v.name}: ${v.detail}`);
  if (states) {
    for (const p of states.pairs.filter((x) => x.differences.length > 0)) {
      out.push('', `serial #${p.serial} vs concurrent #${p.concurrent}: what differs (left: serial, right: concurrent)`);
      for (const d of p.differences.slice(0, 60)) out.push(`  ${d.part}: ${d.key}: ${d.left}  !=  ${d.right}`);
      if (p.differences.length > 60) out.push(`  ... and ${p.differences.length - 60} more (install-bench.json)`);
    }
    if (states.betweenSerial.length > 0) {
      out.push('', `differs between serial servers too (what each install makes for itself; not counted against the concurrent install):`);
      for (const d of states.betweenSerial.slice(0, 30)) out.push(`  ${d.part}: ${d.key}`);
      if (states.betweenSerial.length > 30) out.push(`  ... and ${states.betweenSerial.length - 30} more`);
    }
  }
  return out.join('\n');
}

/** The re-runs' table: per server, each re-run's wall (and the steps' time), then the medians of each mode. */
function renderOperations(runs: readonly BenchRun[], summary: BenchSummary): string {
  const cell = (o: OperationRun | undefined) =>
    !o ? '-' : `${s(o.wallMs)}${o.wallFrom === 'exact' ? '' : o.wallFrom === 'sampled' ? '~' : '*'}${Number.isFinite(o.pipelineMs) ? ` (${s(o.pipelineMs)})` : ''}${o.ok ? '' : ' FAILED'}`;
  const head = ['#', 'mode', ...OPERATIONS];
  const rows = runs.filter((r) => (r.operations ?? []).length > 0).map((r) => [String(r.index), r.mode, ...OPERATIONS.map((op) => cell(r.operations!.find((o) => o.op === op)))]);
  rows.push(['median', 'serial', ...summary.operations.map((o) => s(o.serialMedianMs))]);
  rows.push(['median', 'concurrent', ...summary.operations.map((o) => `${s(o.concurrentMedianMs)} = ${Number.isFinite(o.ratio) ? o.ratio.toFixed(2) : '-'} x`)]);
  return ['the re-runs on each server after its fresh install, with the same mode (wall; in brackets the steps\' time):', ...table(head, rows)].join('\n');
}
