import { GATEWAY_PORT } from '../../layout.js';
import { isLoopbackAddress } from '../context.js';
import { fail, pass, type Check } from '../types.js';
import { gatewayRestartFix } from './gateway-service.js';
import { guardFix } from './guard-cron.js';

export const gatewayBindCheck: Check = {
  id: 'gateway-bind',
  title: `Gateway bound to loopback only (port ${GATEWAY_PORT})`,
  async run(ctx) {
    const [{ config }, listeners] = await Promise.all([ctx.runtimeConfig(), ctx.listeners()]);
    const bind = (config as any)?.gateway?.bind;
    if (config && bind !== 'loopback') {
      return fail(`gateway.bind is ${JSON.stringify(bind ?? null)} in the config: the gateway would be reachable from the network`, 'set gateway.bind to "loopback" and restart the gateway (the mesh reaches it through Serve)', {
        commands: ['service-deploy doctor --fix', 'service-deploy guard'],
        action: guardFix,
      });
    }
    const ours = listeners.filter((l) => l.port === GATEWAY_PORT);
    const wide = ours.filter((l) => !isLoopbackAddress(l.address));
    if (wide.length > 0) {
      return fail(`port ${GATEWAY_PORT} is open on ${wide.map((l) => `${l.address}${l.process ? ` (${l.process})` : ''}`).join(', ')}, not only loopback`, 'restart the gateway so it binds as configured (loopback); if another program holds the port, stop it', {
        commands: ['service-deploy gateway restart'],
        action: gatewayRestartFix,
      });
    }
    return pass(ours.length ? `listening on ${ours.map((l) => l.address).join(', ')}` : 'not listening right now (see the health check); config says loopback');
  },
};
