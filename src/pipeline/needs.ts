import { LOCKS, type Step } from './step.js';

/**
 * What is wrong with the steps' `needs` (Step.needs): a name that is neither a step of
 * the list nor a lock, a step that needs itself or a later step, a cycle, a step that
 * does not wait (directly or through what it needs) for a barrier listed before it
 * (Step.barrier: whether the install may change anything). Empty when a runner can start each
 * step once everything it needs is done (the listed order is one such order).
 */
export function needsProblems(steps: readonly Step[]): string[] {
  const ids = new Set(steps.map((s) => s.id));
  const locks = new Set<string>(Object.values(LOCKS));
  const problems: string[] = [];
  for (const id of ids) if (locks.has(id)) problems.push(`step ${id} has the name of a lock`);
  for (const [index, step] of steps.entries()) {
    for (const need of step.needs ?? []) {
      if (locks.has(need)) continue;
      if (!ids.has(need)) problems.push(`step ${step.id} needs ${need}, which is neither a step nor a lock (${[...locks].join(', ')})`);
      else if (steps.findIndex((s) => s.id === need) >= index) problems.push(`step ${step.id} needs ${need}, which runs ${need === step.id ? 'as itself' : 'after it'}`);
    }
  }
  const cycle = findCycle(steps);
  if (cycle) problems.push(`the steps need each other in a circle: ${cycle.join(' -> ')}`);
  else {
    for (const [index, barrier] of steps.entries()) {
      if (!barrier.barrier) continue;
      for (const step of steps.slice(index + 1)) {
        if (!neededBy(steps, step.id).has(barrier.id)) problems.push(`step ${step.id} does not wait for ${barrier.id}, which every later step waits for (barrier)`);
      }
    }
  }
  return problems;
}

/** A circle of steps needing each other (depth-first), or undefined. */
function findCycle(steps: readonly Step[]): string[] | undefined {
  const needs = new Map(steps.map((s) => [s.id, (s.needs ?? []).filter((n) => steps.some((t) => t.id === n))]));
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined;
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'open');
    path.push(id);
    for (const next of needs.get(id) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const step of steps) {
    const found = visit(step.id);
    if (found) return found;
  }
  return undefined;
}

/** Every step `id` waits for, directly or through what it needs (no circle). */
export function neededBy(steps: readonly Step[], id: string): Set<string> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const found = new Set<string>();
  const visit = (current: string) => {
    for (const need of byId.get(current)?.needs ?? []) {
      if (!byId.has(need) || found.has(need)) continue;
      found.add(need);
      visit(need);
    }
  };
  visit(id);
  return found;
}
