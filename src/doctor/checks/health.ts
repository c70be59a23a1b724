import { healthUrl, probeHealth } from '../../steps/health.js';
import { fail, pass, type Check } from '../types.js';

export const healthCheck: Check = {
  id: 'health',
  title: 'Gateway /healthz answers',
  async run({ host }) {
    const probe = await probeHealth(host);
    if (probe.ok) return pass(`${healthUrl(host)}: ${probe.detail}`);
    return fail(`${healthUrl(host)} does not answer: ${probe.detail}`, 'the gateway takes 10-20 s after a start; if it stays down, read its log and restart it', {
      commands: ['service-deploy gateway logs', 'service-deploy gateway restart'],
    });
  },
};
