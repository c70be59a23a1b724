// The soak's plot (docs/soak.svg): memory and processes over chats, one SVG written by a
// small pure function. Two line charts need axes, ticks, polylines and a few labels;
// a plotting library (and a headless browser or canvas to render it) would be most of
// the bench's dependencies for that.
import { serverMemory, type SoakSample } from './soak.js';
import { axisTicks, escapeXml } from '../../src/pipeline/timeline.js';

export interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  points: Array<[number, number]>;
}

export interface Marker {
  x: number;
  label: string;
  /** ms since the run began (events): a restart shows in the samples minutes later on a loaded machine. */
  atMs?: number;
}

const WIDTH = 960;
const PANEL = 250;
const LEFT = 70;
const RIGHT = 200;
const TOP = 64;
const GAP = 70;

const escape = escapeXml;

/** Round numbers for an axis from 0 to at least max: about five steps (the install timeline's axis, src/pipeline/timeline.ts). */
export function niceTicks(max: number, steps = 5): number[] {
  return axisTicks(max, steps);
}

function panel(out: string[], top: number, title: string, unit: string, series: Series[], markers: Marker[], xMax: number, xTicks: number[], yFloor = 0): void {
  const yMax = Math.max(yFloor, ...series.flatMap((s) => s.points.map(([, y]) => y)));
  const yTicks = niceTicks(yMax);
  const yTop = yTicks.at(-1)!;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const x = (v: number) => LEFT + (xMax > 0 ? (v / xMax) * plotWidth : 0);
  const y = (v: number) => top + PANEL - (yTop > 0 ? (v / yTop) * PANEL : 0);
  out.push(`<text x="${LEFT}" y="${top - 12}" class="title">${escape(title)}</text>`);
  for (const t of yTicks) {
    out.push(`<line x1="${LEFT}" y1="${y(t).toFixed(1)}" x2="${LEFT + plotWidth}" y2="${y(t).toFixed(1)}" class="grid"/>`);
    out.push(`<text x="${LEFT - 6}" y="${(y(t) + 4).toFixed(1)}" class="tick" text-anchor="end">${t}</text>`);
  }
  for (const t of xTicks) out.push(`<text x="${x(t).toFixed(1)}" y="${top + PANEL + 16}" class="tick" text-anchor="middle">${t}</text>`);
  out.push(`<text x="${LEFT - 52}" y="${top + PANEL / 2}" class="tick" transform="rotate(-90 ${LEFT - 52} ${top + PANEL / 2})" text-anchor="middle">${escape(unit)}</text>`);
  out.push(`<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL}" class="frame"/>`);
  markers.forEach((m, i) => {
    out.push(`<line x1="${x(m.x).toFixed(1)}" y1="${top}" x2="${x(m.x).toFixed(1)}" y2="${top + PANEL}" class="marker"/>`);
    // Staggered: events close together (a restart and the one it causes) stay readable.
    out.push(`<text x="${(x(m.x) + 3).toFixed(1)}" y="${top + 12 + (i % 3) * 12}" class="mark">${escape(m.label)}</text>`);
  });
  series.forEach((s, i) => {
    if (s.points.length > 0) {
      const d = s.points.map(([px, py]) => `${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(' ');
      out.push(`<polyline points="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    }
    const ly = top + 14 + i * 20;
    out.push(`<line x1="${WIDTH - RIGHT + 14}" y1="${ly - 4}" x2="${WIDTH - RIGHT + 38}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(`<text x="${WIDTH - RIGHT + 44}" y="${ly}" class="legend">${escape(s.name)}</text>`);
  });
}

/**
 * Memory (MiB) and processes over chats answered, with the events (gateway restart,
 * guard run, restarts nobody asked for) as vertical lines. `budgetBytes`: a dashed line
 * for what the server's processes may use (RECOMMENDED_MEMORY x PROCESS_SHARE).
 */
export function renderSvg(samples: SoakSample[], options: { title: string; subtitle?: string; budgetBytes?: number; events?: Marker[] }): string {
  const MiB = (b: number) => b / 1024 ** 2;
  const xMax = Math.max(1, ...samples.map((s) => s.chats));
  const xTicks = niceTicks(xMax, 8).filter((t) => t <= xMax);
  const markers: Marker[] = [...(options.events ?? []).filter((e) => !e.label.startsWith('heartbeat'))];
  // A new gateway process that no event explains (an OOM kill, a crash) is marked too:
  // one a restart or guard run (within the 10 minutes a start may take here) did not cause.
  const explained = (from: SoakSample, to: SoakSample) =>
    markers.some((m) => /restart|guard/.test(m.label) && (m.atMs !== undefined ? m.atMs >= from.atMs - 10 * 60_000 && m.atMs <= to.atMs : m.x >= from.chats && m.x <= to.chats));
  let since: SoakSample | undefined;
  samples.forEach((s) => {
    if (!s.gatewayPid) return;
    if (since && since.gatewayPid !== s.gatewayPid && !explained(since, s)) markers.push({ x: s.chats, label: 'gateway restarted' });
    since = s;
  });
  const at = (pick: (s: SoakSample) => number): Array<[number, number]> => samples.map((s) => [s.chats, pick(s)]);
  const limit = samples.find((s) => s.memcg)?.memcg?.limitBytes;
  const memory: Series[] = [
    ...(limit ? [{ name: 'server working set (cgroup)', color: '#111827', points: at((s) => MiB(serverMemory(s))) }] : []),
    { name: 'server processes PSS', color: '#6b7280', points: at((s) => MiB(s.server.pssBytes)) },
    { name: 'gateway unit PSS', color: '#2563eb', points: at((s) => MiB(s.unit.pssBytes)) },
    { name: 'gateway unit anon', color: '#dc2626', points: at((s) => MiB(s.unit.anonBytes)) },
    ...(options.budgetBytes ? [{ name: `budget ${Math.round(MiB(options.budgetBytes))} MiB`, color: '#16a34a', dashed: true, points: [[0, MiB(options.budgetBytes)], [xMax, MiB(options.budgetBytes)]] as Array<[number, number]> }] : []),
    ...(limit ? [{ name: `server memory ${Math.round(MiB(limit))} MiB`, color: '#111827', dashed: true, points: [[0, MiB(limit)], [xMax, MiB(limit)]] as Array<[number, number]> }] : []),
  ];
  const firstKills = samples[0]?.memcg?.oomKills ?? 0;
  const killed = samples.some((s) => (s.memcg?.oomKills ?? 0) > firstKills);
  const processes: Series[] = [
    { name: 'server processes', color: '#6b7280', points: at((s) => s.server.processes) },
    { name: 'gateway unit processes', color: '#2563eb', points: at((s) => s.unit.processes) },
    ...(killed ? [{ name: 'OOM kills (total)', color: '#dc2626', dashed: true, points: at((s) => (s.memcg?.oomKills ?? firstKills) - firstKills) }] : []),
  ];
  const height = TOP + PANEL * 2 + GAP + 50;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
    '<style>.title{font-size:14px;font-weight:bold}.tick{font-size:11px;fill:#374151}.legend{font-size:12px}.mark{font-size:10px;fill:#92400e}.grid{stroke:#e5e7eb}.frame{fill:none;stroke:#9ca3af}.marker{stroke:#d97706;stroke-dasharray:3 3}</style>',
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="20" class="title">${escape(options.title)}</text>`,
    ...(options.subtitle ? [`<text x="${LEFT}" y="36" class="tick">${escape(options.subtitle)}</text>`] : []),
  ];
  panel(out, TOP + 14, 'memory', 'MiB', memory, markers, xMax, xTicks);
  panel(out, TOP + 14 + PANEL + GAP, 'processes', 'processes', processes, markers, xMax, xTicks, 10);
  out.push(`<text x="${LEFT + (WIDTH - LEFT - RIGHT) / 2}" y="${height - 8}" class="tick" text-anchor="middle">chats answered</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
