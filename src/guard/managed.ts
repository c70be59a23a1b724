import { displayNameOf, managedHeartbeat, managedToolsByProvider, sameConfig, setDisplayName, type HeartbeatSettings, type RuntimeConfig } from '../config/runtime-config.js';
import type { Restoration } from './routing.js';

/**
 * The managed agent settings beside the routing (issue 18): the display name (prompt 1,
 * from the stored answers) and the heartbeat (internal-only, light, isolated, on the
 * profile's heartbeat model with its one tool: issue 26 item 6). Pure, like
 * enforceRouting, and defined by the same functions desiredRuntimeConfig uses, so the
 * install and the hourly guard agree. Returns the config with them put back and what
 * was restored.
 */
export function enforceManagedAgent(
  current: RuntimeConfig,
  answers: { customerName?: string; modelId: string },
  profile: HeartbeatSettings['profile'],
): { config: RuntimeConfig; restorations: Restoration[] } {
  const config = structuredClone(current) as Record<string, any>;
  const restorations: Restoration[] = [];
  if (answers.customerName !== undefined) {
    const before = displayNameOf(config);
    if (before !== answers.customerName) {
      restorations.push({ what: 'agent display name', before: before === undefined ? '(unset)' : String(before), after: answers.customerName });
      setDisplayName(config, answers.customerName);
    }
  }
  const settings: HeartbeatSettings = { profile, modelId: answers.modelId };
  const agents = isObj(config.agents) ? config.agents : {};
  const defaults = isObj(agents.defaults) ? agents.defaults : {};
  const heartbeat = isObj(defaults.heartbeat) ? defaults.heartbeat : {};
  const wanted = managedHeartbeat(heartbeat, settings);
  const wrong = [...new Set([...Object.keys(wanted), ...Object.keys(heartbeat)])].filter((key) => !sameConfig(heartbeat[key], wanted[key]));
  if (wrong.length > 0) {
    restorations.push({ what: 'agents.defaults.heartbeat', before: wrong.map((key) => `${key} ${shown(heartbeat[key])}`).join(', '), after: wrong.map((key) => `${key} ${shown(wanted[key])}`).join(', ') });
    config.agents = { ...agents, defaults: { ...defaults, heartbeat: wanted } };
  }
  const tools = isObj(config.tools) ? config.tools : undefined;
  const byProvider = isObj(tools?.byProvider) ? tools.byProvider : {};
  const wantedByProvider = managedToolsByProvider(tools?.byProvider, settings) ?? {};
  const wrongTools = [...new Set([...Object.keys(wantedByProvider), ...Object.keys(byProvider)])].filter((key) => !sameConfig(byProvider[key], wantedByProvider[key]));
  const notAnObject = tools?.byProvider !== undefined && !isObj(tools.byProvider);
  if (wrongTools.length > 0 || notAnObject) {
    if (notAnObject) restorations.push({ what: 'tools.byProvider', before: shown(tools!.byProvider), after: 'an object' });
    for (const key of wrongTools) restorations.push({ what: `tools.byProvider.${key}`, before: shown(byProvider[key]), after: shown(wantedByProvider[key]) });
    const { byProvider: _old, ...rest } = tools ?? {};
    config.tools = { ...rest, ...(Object.keys(wantedByProvider).length > 0 ? { byProvider: wantedByProvider } : {}) };
  }
  return { config, restorations };
}

function shown(value: unknown): string {
  return value === undefined ? '(unset)' : JSON.stringify(value);
}

function isObj(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
