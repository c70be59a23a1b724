import { fail, pass, type Check } from '../types.js';
import { listDrift, routingDrift } from '../config-findings.js';
import { guardFix } from './guard-cron.js';

export const gatewayAuthCheck: Check = {
  id: 'gateway-auth',
  title: 'gateway.auth present (no legacy gateway.token)',
  async run(ctx) {
    const drift = await routingDrift(ctx);
    if (!Array.isArray(drift)) return drift;
    const auth = drift.filter((r) => r.what === 'gateway.token' || r.what.startsWith('gateway.auth'));
    if (auth.length === 0) return pass('mode token, token = reference to the service API key');
    const legacy = auth.some((r) => r.what === 'gateway.token');
    return fail(
      `${listDrift(auth)}${legacy ? ' (the runtime 2026.5+ rejects the legacy key)' : ''}`,
      'put gateway.auth back (mode token, token = the service API key) and migrate gateway.token; the guard does this, then restarts the gateway (or re-run the catalog deploy)',
      { commands: ['service-deploy doctor --fix', 'bash /usr/local/bin/service-guard.sh'], action: guardFix },
    );
  },
};
