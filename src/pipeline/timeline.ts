import { LOCKS } from './step.js';
import { criticalPath, directNeeds, type CriticalPath, type NeedsOf } from './critical-path.js';

// The install's timeline and its needs, drawn: a Gantt chart (SVG) of an install's
// --json steps with the critical path marked, and the graph of the steps' needs
// (Mermaid). Pure text; not part of the binary: scripts/install-timeline.mjs draws an
// install result with them, the e2e its first install's, docs/install.md shows both.

/** A step of an install's --json result (schemas/install.schema.json): the fields the timeline reads. */
export interface TimedStep {
  id: string;
  status: string;
  durationMs?: number;
  startMs?: number;
  endMs?: number;
}

export interface TimelineOptions {
  /** The first line: what was run, where. */
  title: string;
  /** The chain to mark (criticalPath), computed from the same result. */
  critical?: CriticalPath;
}

const WIDTH = 960;
const LEFT = 150;
const RIGHT = 80;
const ROW = 20;
const BAR = 13;

/** Text as SVG (XML) holds it. */
export const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** `48.0 s`, or `120 ms` under a second. */
export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Round numbers for an axis from 0 to at least max: about `steps` steps of 1, 2 or 5 times a power of ten. */
export function axisTicks(max: number, steps = 8): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / steps;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/**
 * The Gantt chart of one install: a bar per step that ran (from its startMs to its
 * endMs), in the result's order, labelled with its id and duration; the critical path's
 * bars marked; a time axis in seconds since the steps began. Skipped steps have no bar
 * and are named under the chart.
 */
export function timelineSvg(steps: readonly TimedStep[], options: TimelineOptions): string {
  const ran = steps.filter((s): s is TimedStep & { startMs: number; endMs: number } => s.startMs !== undefined && s.endMs !== undefined);
  const skipped = steps.filter((s) => s.startMs === undefined || s.endMs === undefined).map((s) => s.id);
  const onPath = new Set(options.critical?.ids ?? []);
  const endMs = Math.max(0, ...ran.map((s) => s.endMs));
  const ticks = axisTicks(endMs / 1000);
  const axisEnd = ticks.at(-1)! * 1000;
  const plot = WIDTH - LEFT - RIGHT;
  const x = (ms: number) => LEFT + (axisEnd > 0 ? (ms / axisEnd) * plot : 0);
  const head = options.critical ? 66 : 40;
  const rowsEnd = head + ran.length * ROW;
  const height = rowsEnd + 34 + (skipped.length ? 20 : 0);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    '<style>.grid{stroke:#ddd}.tick{fill:#555}.id{fill:#222}.crit{fill:#c0392b}.bar{fill:#8aa6c8}.failed{stroke:#000;stroke-width:1.5}.len{fill:#444}.title{font-size:14px;font-weight:bold}</style>',
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="10" y="20" class="title">${escapeXml(options.title)}</text>`,
  ];
  if (options.critical) {
    const total = ran.reduce((sum, s) => sum + (s.endMs - s.startMs), 0);
    out.push(`<rect x="10" y="31" width="12" height="11" class="crit"/>`);
    out.push(`<text x="28" y="41">critical path: ${formatMs(options.critical.ms)} of the steps' ${formatMs(total)} (the longest chain of needs: no install running steps side by side could be shorter)</text>`);
    out.push(`<text x="28" y="57" class="tick">${escapeXml(options.critical.ids.join(' → '))}</text>`);
  }
  for (const t of ticks) {
    const tx = x(t * 1000).toFixed(1);
    out.push(`<line x1="${tx}" y1="${head - 4}" x2="${tx}" y2="${rowsEnd}" class="grid"/>`);
    out.push(`<text x="${tx}" y="${rowsEnd + 14}" class="tick" text-anchor="middle">${t}</text>`);
  }
  out.push(`<text x="${LEFT + plot / 2}" y="${rowsEnd + 28}" class="tick" text-anchor="middle">seconds since the steps began</text>`);
  ran.forEach((s, i) => {
    const y = head + i * ROW;
    const x1 = x(s.startMs);
    const width = Math.max(1, x(s.endMs) - x1);
    const classes = [onPath.has(s.id) ? 'crit' : 'bar', ...(s.status === 'failed' ? ['failed'] : [])].join(' ');
    out.push(`<text x="${LEFT - 8}" y="${y + BAR - 2}" class="id" text-anchor="end"${onPath.has(s.id) ? ' font-weight="bold"' : ''}>${escapeXml(s.id)}</text>`);
    out.push(`<rect x="${x1.toFixed(1)}" y="${y}" width="${width.toFixed(1)}" height="${BAR}" class="${classes}"><title>${escapeXml(`${s.id}: ${s.status}, ${formatMs(s.endMs - s.startMs)} (${formatMs(s.startMs)} to ${formatMs(s.endMs)})`)}</title></rect>`);
    out.push(`<text x="${(x1 + width + 4).toFixed(1)}" y="${y + BAR - 2}" class="len">${formatMs(s.endMs - s.startMs)}${s.status === 'failed' ? ' failed' : ''}</text>`);
  });
  if (skipped.length) out.push(`<text x="10" y="${rowsEnd + 48}" class="tick">skipped (no bar): ${escapeXml(skipped.join(', '))}</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/**
 * An install's --json result drawn: its critical path, from the steps' needs (this
 * build's step list: installSteps()) and the durations the result measured, and the
 * timeline with that path marked.
 */
export function installTimeline(result: { steps: readonly TimedStep[] }, needs: readonly NeedsOf[], title: string): { svg: string; critical: CriticalPath } {
  const durations = new Map(result.steps.map((s) => [s.id, s.startMs !== undefined && s.endMs !== undefined ? s.endMs - s.startMs : 0]));
  // The result's steps only: a step of the list the run did not reach took no time in it.
  const critical = criticalPath(needs.filter((s) => durations.has(s.id)), durations);
  return { svg: timelineSvg(result.steps, { title, critical }), critical };
}

/**
 * The steps' needs as a Mermaid flowchart (docs/install.md): an arrow from a step to
 * each step that needs it, the needs another need implies left out (directNeeds), the
 * locks a step takes after its id.
 */
export function needsGraphMermaid(steps: readonly NeedsOf[]): string {
  const locks = new Set<string>(Object.values(LOCKS));
  const node = (id: string) => id.replace(/[^A-Za-z0-9]/g, '_');
  const direct = directNeeds(steps);
  const lines = ['flowchart LR'];
  for (const step of steps) {
    const held = (step.needs ?? []).filter((n) => locks.has(n));
    lines.push(`  ${node(step.id)}["${step.id}${held.length ? ` (${held.join(', ')})` : ''}"]`);
  }
  for (const step of steps) for (const need of direct.get(step.id) ?? []) lines.push(`  ${node(need)} --> ${node(step.id)}`);
  return `${lines.join('\n')}\n`;
}
