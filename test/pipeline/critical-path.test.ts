import { describe, expect, it } from 'vitest';
import { criticalPath, directNeeds, stepNeeds, type NeedsOf } from '../../src/pipeline/critical-path.js';
import { LOCKS } from '../../src/pipeline/step.js';
import { installSteps } from '../../src/steps/index.js';

// a -> b -> d, a -> c -> d; e takes the apt lock as b does, which orders nothing.
const GRAPH: NeedsOf[] = [
  { id: 'a' },
  { id: 'b', needs: ['a', LOCKS.apt] },
  { id: 'c', needs: ['a'] },
  { id: 'd', needs: ['a', 'b', 'c', LOCKS.nginx] },
  { id: 'e', needs: [LOCKS.apt] },
];
const ms = (entries: Record<string, number>) => new Map(Object.entries(entries));

describe('the critical path: the longest chain of needs, by measured durations', () => {
  it('follows the longer branch, and the locks order nothing', () => {
    expect(criticalPath(GRAPH, ms({ a: 1000, b: 5000, c: 2000, d: 500, e: 3000 }))).toEqual({ ids: ['a', 'b', 'd'], ms: 6500 });
    expect(criticalPath(GRAPH, ms({ a: 1000, b: 5000, c: 6000, d: 500, e: 3000 }))).toEqual({ ids: ['a', 'c', 'd'], ms: 7500 });
    // e shares b's lock, yet needs no step: alone it is the longest.
    expect(criticalPath(GRAPH, ms({ a: 1000, b: 5000, c: 2000, d: 500, e: 9000 }))).toEqual({ ids: ['e'], ms: 9000 });
  });

  it('counts a step without a duration (skipped, not reached) as 0; of equal chains takes the later end, the earlier listed need', () => {
    expect(criticalPath(GRAPH, ms({ b: 2000, c: 2000 }))).toEqual({ ids: ['a', 'b', 'd'], ms: 2000 });
    expect(criticalPath(GRAPH, ms({}))).toEqual({ ids: ['e'], ms: 0 });
    expect(criticalPath([], ms({}))).toEqual({ ids: [], ms: 0 });
  });

  it('reads only names of listed steps: locks, unknown names and the step itself are no needs', () => {
    const steps: NeedsOf[] = [{ id: 'x', needs: ['x', 'nothing', LOCKS.userUnits] }, { id: 'y', needs: ['x'] }];
    expect(stepNeeds(steps)).toEqual(new Map([['x', []], ['y', ['x']]]));
    expect(criticalPath(steps, ms({ x: 1, y: 2 }))).toEqual({ ids: ['x', 'y'], ms: 3 });
  });

  it('draws a need only when no other need implies it (directNeeds)', () => {
    expect(directNeeds(GRAPH)).toEqual(new Map([['a', []], ['b', ['a']], ['c', ['a']], ['d', ['b', 'c']], ['e', []]]));
  });

  describe('on the install step list (steps/index.ts)', () => {
    const steps = installSteps();
    const needs = stepNeeds(steps);

    it('returns a chain in which each step needs the one before it', () => {
      // Every step 1 ms: the chain with the most steps.
      const path = criticalPath(steps, new Map(steps.map((s) => [s.id, 1])));
      expect(path.ids.length).toBeGreaterThan(3);
      expect(path.ms).toBe(path.ids.length);
      expect(needs.get(path.ids[0]!)).toEqual([]);
      for (const [i, id] of path.ids.entries()) if (i > 0) expect(needs.get(id), `${id} needs ${path.ids[i - 1]}`).toContain(path.ids[i - 1]);
    });

    it("with issue 31's figures, the issue's chain with the system packages Node loads (libatomic1): Node, OpenClaw from npm, runtime config, the gateway, its health", () => {
      const measured = ms({ preflight: 1000, 'package-lock': 100, 'system-packages': 6000, 'node-runtime': 7000, 'agent-runtime': 48_000, 'mesh-client': 3000, memory: 700, 'context-engine': 600, browser: 33_000, 'runtime-config': 3000, 'gateway-service': 1000, guard: 100, manifest: 200, health: 17_000 });
      expect(criticalPath(steps, measured)).toEqual({ ids: ['preflight', 'package-lock', 'system-packages', 'node-runtime', 'agent-runtime', 'runtime-config', 'gateway-service', 'health'], ms: 83_100 });
    });
  });
});
