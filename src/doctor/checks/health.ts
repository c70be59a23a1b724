import { GATEWAY_REFUSAL_EXIT, HEALTH_VERDICT_TIMEOUT_MS, gatewayStartRefusal, healthUrl, probeHealth } from '../../steps/health.js';
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
    // A gateway that stopped itself (exit 78) is not restarted by systemd: say why, and
    // whether a start is the fix (a busy start) or a person must act first.
    const refusal = await gatewayStartRefusal(host);
    if (refusal?.transient) {
      return fail(`${healthUrl(host)} does not answer: the gateway stopped itself at its start, the server too busy (${refusal.reason}); systemd does not restart it`, 'start it again (the hourly guard does too)', {
        commands: ['service-deploy gateway restart'],
      });
    }
    if (refusal) {
      return fail(`${healthUrl(host)} does not answer: the gateway stopped itself (${GATEWAY_REFUSAL_EXIT}): ${refusal.reason}`, 'fix what it names (its log says more), then restart it; a start alone stops again', {
        commands: ['service-deploy gateway logs', 'service-deploy gateway restart'],
      });
    }
    return fail(`${healthUrl(host)} does not answer: ${probe.detail}`, 'the gateway takes 10-20 s after a start; if it stays down, read its log and restart it', {
      commands: ['service-deploy gateway logs', 'service-deploy gateway restart'],
    });
  },
};
