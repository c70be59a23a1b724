import { HEALTH_VERDICT_TIMEOUT_MS, healthUrl, probeHealth } from '../../steps/health.js';
import { fail, pass, type Check } from '../types.js';


export const healthCheck: Check = {
  id: 'health',
  title: 'Gateway /healthz answers',
  async run({ host }) {
    // One probe, but patient: a gateway that is down refuses at once, while a live one on
    // a busy small server has been seen taking more than 3 s to answer (doctor and
    // status would then call a working agent broken).
    const probe = await probeHealth(host, HEALTH_VERDICT_TIMEOUT_MS);
    if (probe.ok) return pass(`${healthUrl(host)}: ${probe.detail}`);
    return fail(`${healthUrl(host)} does not answer: ${probe.detail}`, 'the gateway takes 10-20 s after a start; if it stays down, read its log and restart it', {
      commands: ['service-deploy gateway logs', 'service-deploy gateway restart'],
    });
  },
};
