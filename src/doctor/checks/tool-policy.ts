import { NODE_TOOLS } from '../../config/runtime-config.js';
import { enforceConfinement } from '../../guard/confinement.js';
import { fail, pass, type Check } from '../types.js';
import { configFinding, listDrift } from '../config-findings.js';
import { guardFix } from './guard-cron.js';

/**
 * The agent's tool policy and the rest of its confinement in openclaw.json, as the install
 * writes them and the guard keeps them (docs/security.md): a widened policy (a tool
 * allowed again, `group:plugins` back, exec) is a way for a prompt injection to reach
 * the server.
 */
export const toolPolicyCheck: Check = {
  id: 'tool-policy',
  title: 'Tool policy: no shell, control-plane or node tools',
  async run(ctx) {
    const { config } = await ctx.runtimeConfig();
    if (!config) return configFinding(ctx);
    const { restorations } = enforceConfinement(config);
    if (restorations.length === 0) return pass(`profile minimal with the product's tools; denied: shell, control plane, sub-agents, ${NODE_TOOLS.join(', ')}`);
    return fail(
      `the agent's confinement was changed: ${listDrift(restorations)}`,
      'put the tool policy back (the hourly guard does this; run it now), then the gateway restarts',
      { commands: ['service-deploy doctor --fix', 'bash /usr/local/bin/service-guard.sh'], action: guardFix },
    );
  },
};
