import { applyConfinement, sameConfig, type RuntimeConfig } from '../config/runtime-config.js';
import type { Restoration } from './routing.js';

/** The confinement settings the guard compares, by config path (docs/security.md). */
const WATCHED: ReadonlyArray<readonly string[]> = [
  ['tools'],
  ['skills', 'workshop', 'autonomous', 'mode'],
  ['browser', 'extensionRelay', 'allowLegacyAuth'],
];

/**
 * The agent's confinement as the install writes it (config/runtime-config.ts
 * applyConfinement, one definition for both): the tool policy (tools.*, the node tools
 * denied), self-learning off, the browser's legacy relay auth off. Pure, like
 * enforceRouting: returns the config with them put back and what was restored. The
 * secret provider, also set by applyConfinement, is enforceRouting's to report.
 */
export function enforceConfinement(current: RuntimeConfig): { config: RuntimeConfig; restorations: Restoration[] } {
  const config = structuredClone(current) as Record<string, any>;
  applyConfinement(config);
  const restorations: Restoration[] = [];
  for (const where of WATCHED) {
    const before = at(current, where);
    const after = at(config, where);
    if (where[0] === 'tools') {
      restorations.push(...toolDrift(before, after));
      continue;
    }
    if (!sameConfig(before, after)) restorations.push({ what: where.join('.'), before: show(before), after: show(after) });
  }
  return { config, restorations };
}

/** One restoration per tools.* key that differs (tools.deny, tools.alsoAllow...), so the log says which. */
function toolDrift(before: unknown, after: unknown): Restoration[] {
  const was = isObj(before) ? before : {};
  const now = isObj(after) ? after : {};
  const keys = [...new Set([...Object.keys(was), ...Object.keys(now)])].sort();
  return keys.filter((key) => !sameConfig(was[key], now[key])).map((key) => ({ what: `tools.${key}`, before: show(was[key]), after: now[key] === undefined ? 'removed' : show(now[key]) }));
}

function at(config: unknown, where: readonly string[]): unknown {
  let value: unknown = config;
  for (const key of where) value = isObj(value) ? value[key] : undefined;
  return value;
}

function show(value: unknown): string {
  if (value === undefined) return '(unset)';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

function isObj(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
