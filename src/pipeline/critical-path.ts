import { LOCKS } from './step.js';

/** What the critical path reads of a step: its id and its `needs` (Step.needs). */
export interface NeedsOf {
  id: string;
  needs?: readonly string[];
}

export interface CriticalPath {
  /** The chain, first step first: each needs the one before it. */
  ids: string[];
  /** The sum of their durations. */
  ms: number;
}

/**
 * The steps each step waits for: its `needs` that name a step of the list. A lock
 * (LOCKS) orders nothing (it keeps two steps apart, in either order), and a name of no
 * listed step has nothing to wait for (needs.ts reports it).
 */
export function stepNeeds(steps: readonly NeedsOf[]): Map<string, string[]> {
  const ids = new Set(steps.map((s) => s.id));
  const locks = new Set<string>(Object.values(LOCKS));
  return new Map(steps.map((s) => [s.id, (s.needs ?? []).filter((n) => ids.has(n) && !locks.has(n) && n !== s.id)]));
}

/**
 * The longest chain of needs, each step weighted by its duration (ms; a step without
 * one, skipped or not reached, counts 0): the time an install that started every step
 * as soon as what it needs was done could not go below. The locks can only add to it.
 * Of chains equally long, the one ending at the later listed step (it goes on through
 * the steps that took no time), through the earlier listed need. The needs are assumed
 * free of circles (needs.ts); a circle's way back is not followed.
 */
export function criticalPath(steps: readonly NeedsOf[], durations: ReadonlyMap<string, number>): CriticalPath {
  const needs = stepNeeds(steps);
  const best = new Map<string, CriticalPath>();
  const open = new Set<string>();
  const longest = (id: string): CriticalPath => {
    const known = best.get(id);
    if (known) return known;
    open.add(id);
    let before: CriticalPath | undefined;
    for (const need of needs.get(id) ?? []) {
      if (open.has(need)) continue;
      const chain = longest(need);
      if (!before || chain.ms > before.ms) before = chain;
    }
    open.delete(id);
    const path = { ids: [...(before?.ids ?? []), id], ms: (before?.ms ?? 0) + Math.max(0, durations.get(id) ?? 0) };
    best.set(id, path);
    return path;
  };
  let result: CriticalPath | undefined;
  for (const step of steps) {
    const chain = longest(step.id);
    if (!result || chain.ms >= result.ms) result = chain;
  }
  return result ?? { ids: [], ms: 0 };
}

/**
 * The needs worth drawing: for each step, those not implied by another of its needs (a
 * step that needs A and B, where B needs A, is drawn after B only). The transitive
 * reduction of stepNeeds: the manifest step, which needs every step before it, is
 * drawn after the ones nothing else waits for.
 */
export function directNeeds(steps: readonly NeedsOf[]): Map<string, string[]> {
  const needs = stepNeeds(steps);
  const reach = new Map<string, Set<string>>();
  const reachable = (id: string, seen = new Set<string>()): Set<string> => {
    const known = reach.get(id);
    if (known) return known;
    const found = new Set<string>();
    seen.add(id);
    for (const need of needs.get(id) ?? []) {
      if (seen.has(need)) continue;
      found.add(need);
      for (const further of reachable(need, seen)) found.add(further);
    }
    reach.set(id, found);
    return found;
  };
  return new Map(
    [...needs].map(([id, list]) => [id, list.filter((need) => !list.some((other) => other !== need && reachable(other).has(need)))]),
  );
}
