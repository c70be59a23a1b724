import { describe, expect, it } from 'vitest';
import { directNeeds, type NeedsOf } from '../../src/pipeline/critical-path.js';
import { LOCKS } from '../../src/pipeline/step.js';
import { axisTicks, installTimeline, needsGraphMermaid, timelineSvg } from '../../src/pipeline/timeline.js';

const NEEDS: NeedsOf[] = [{ id: 'a' }, { id: 'b<x>', needs: ['a', LOCKS.apt] }, { id: 'c', needs: ['a'] }, { id: 's', needs: ['a'] }, { id: 'd', needs: ['a', 'b<x>', 'c'] }];
const RESULT = {
  steps: [
    { id: 'a', status: 'ok', durationMs: 1000, startMs: 0, endMs: 1000 },
    { id: 'b<x>', status: 'changed', durationMs: 30_000, startMs: 1000, endMs: 31_000 },
    { id: 'c', status: 'changed', durationMs: 2000, startMs: 31_000, endMs: 33_000 },
    { id: 's', status: 'skipped', durationMs: 0, reason: 'not asked for' },
    { id: 'd', status: 'failed', durationMs: 500, startMs: 33_000, endMs: 33_500 },
  ],
};

/** The bars of an SVG: id (from its tooltip) and class. */
const bars = (svg: string) => [...svg.matchAll(/<rect x="[\d.]+" y="\d+" width="[\d.]+" height="13" class="([^"]+)"><title>([^:]+):/g)].map((m) => [m[2], m[1]]);

describe('the install timeline (SVG)', () => {
  it('a bar per step that ran, the critical path marked, skipped steps named, ids escaped', () => {
    const { svg, critical } = installTimeline(RESULT, NEEDS, 'sandbox <stand-ins>');
    expect(critical).toEqual({ ids: ['a', 'b<x>', 'd'], ms: 31_500 });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(bars(svg)).toEqual([['a', 'crit'], ['b&lt;x&gt;', 'crit'], ['c', 'bar'], ['d', 'crit failed']]);
    expect(svg).toContain('sandbox &lt;stand-ins&gt;');
    expect(svg).toContain('critical path: 31.5 s of the steps\' 33.5 s');
    expect(svg).toContain('a → b&lt;x&gt; → d');
    expect(svg).toContain('skipped (no bar): s');
    expect(svg).toContain('500 ms failed');
    expect(svg).not.toMatch(/<[a-z]+[^>]*<x>/);
  });

  it('places bars on a time axis in seconds', () => {
    const svg = timelineSvg(RESULT.steps, { title: 't' });
    // 0 to 35 s in steps of 5 s: the axis ends past the last step's end.
    expect(axisTicks(33.5)).toEqual([0, 5, 10, 15, 20, 25, 30, 35]);
    for (const t of axisTicks(33.5)) expect(svg).toMatch(new RegExp(`class="tick" text-anchor="middle">${t}</text>`));
    const x = (id: string) => Number(new RegExp(`<rect x="([\\d.]+)" y="\\d+" width="([\\d.]+)" height="13" class="[^"]+"><title>${id}:`).exec(svg)![1]);
    expect(x('a')).toBeLessThan(x('b&lt;x&gt;'));
    expect(x('b&lt;x&gt;')).toBeLessThan(x('c'));
    expect(svg).not.toContain('critical path');
  });
});

describe('the needs graph (Mermaid)', () => {
  it('one node per step with the locks it takes, one arrow per need no other need implies', () => {
    const text = needsGraphMermaid(NEEDS);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('flowchart LR');
    expect(lines).toContain('  b_x_["b<x> (apt)"]');
    const arrows = lines.filter((l) => l.includes('-->'));
    expect(arrows).toEqual(['  a --> b_x_', '  a --> c', '  a --> s', '  b_x_ --> d', '  c --> d']);
    expect(arrows.length).toBe([...directNeeds(NEEDS).values()].flat().length);
  });
});
