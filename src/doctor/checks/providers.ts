import { fail, pass, type Check } from '../types.js';
import { listDrift, routingDrift } from '../config-findings.js';
import { guardFix } from './guard-cron.js';

export const providersCheck: Check = {
  id: 'providers',
  title: "Model providers: only the service's AI gateway",
  async run(ctx) {
    const drift = await routingDrift(ctx);
    if (!Array.isArray(drift)) return drift;
    const routing = drift.filter((r) => r.what.startsWith('models') || r.what.startsWith('agents'));
    if (routing.length === 0) return pass(`only ${ctx.profile.gatewayProviderName} (${ctx.profile.aiGatewayUrl}); default model uses it`);
    return fail(
      `the agent is not routed only through the service's AI gateway: ${listDrift(routing)}`,
      "restore the single service provider and the default model (the hourly guard does this; run it now), then the gateway restarts",
      { commands: ['service-deploy doctor --fix', 'bash /usr/local/bin/service-guard.sh'], action: guardFix },
    );
  },
};
