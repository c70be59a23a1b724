import { MANAGED_HEARTBEAT, displayNameOf, managedHeartbeat, setDisplayName, type RuntimeConfig } from '../config/runtime-config.js';
import type { Restoration } from './routing.js';

/**
 * The managed agent settings beside the routing (issue 18): the display name (prompt 1,
 * from the stored answers) and the heartbeat (internal-only, light, isolated). Pure, like
 * enforceRouting, and defined by the same functions desiredRuntimeConfig uses, so the
 * install and the hourly guard agree. Returns the config with them put back and what
 * was restored.
 */
export function enforceManagedAgent(current: RuntimeConfig, answers: { customerName?: string }): { config: RuntimeConfig; restorations: Restoration[] } {
  const config = structuredClone(current) as Record<string, any>;
  const restorations: Restoration[] = [];
  if (answers.customerName !== undefined) {
    const before = displayNameOf(config);
    if (before !== answers.customerName) {
      restorations.push({ what: 'agent display name', before: before === undefined ? '(unset)' : String(before), after: answers.customerName });
      setDisplayName(config, answers.customerName);
    }
  }
  const agents = isObj(config.agents) ? config.agents : {};
  const defaults = isObj(agents.defaults) ? agents.defaults : {};
  const heartbeat = isObj(defaults.heartbeat) ? defaults.heartbeat : {};
  const wrong = (Object.keys(MANAGED_HEARTBEAT) as Array<keyof typeof MANAGED_HEARTBEAT>).filter((key) => heartbeat[key] !== MANAGED_HEARTBEAT[key]);
  if (wrong.length > 0) {
    restorations.push({
      what: 'agents.defaults.heartbeat',
      before: wrong.map((key) => `${key} ${heartbeat[key] === undefined ? '(unset)' : JSON.stringify(heartbeat[key])}`).join(', '),
      after: wrong.map((key) => `${key} ${JSON.stringify(MANAGED_HEARTBEAT[key])}`).join(', '),
    });
    config.agents = { ...agents, defaults: { ...defaults, heartbeat: managedHeartbeat(heartbeat) } };
  }
  return { config, restorations };
}

function isObj(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
