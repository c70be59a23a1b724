import { LAYOUT } from '../../layout.js';
import { fail, pass, type Check } from '../types.js';

export const RESTART_COMMANDS = [
  'XDG_RUNTIME_DIR=/run/user/0 systemctl --user daemon-reload',
  `XDG_RUNTIME_DIR=/run/user/0 systemctl --user restart ${LAYOUT.gatewayUnit}`,
];

export const gatewayServiceCheck: Check = {
  id: 'gateway-service',
  title: 'Gateway user service active',
  async run(ctx) {
    const { host } = ctx;
    const [active, linger, unit] = await Promise.all([
      ctx.gatewayActive(),
      host.files.exists(LAYOUT.lingerFile),
      host.files.exists(LAYOUT.gatewayUnitFile),
    ]);
    if (!unit) return fail(`${LAYOUT.gatewayUnitFile} is missing`, 'run `service-deploy install` to write the unit again', { commands: ['service-deploy install'] });
    if (!active) {
      return fail(`${LAYOUT.gatewayUnit} (root's user service) is not active`, 'start it (service-deploy gateway restart); if it stops again, read its log (service-deploy gateway logs)', {
        commands: ['service-deploy gateway restart', ...RESTART_COMMANDS],
        action: 'gateway-restart',
      });
    }
    if (!linger) {
      return fail('linger is off for root: the gateway stops when root logs out and does not start at boot', 'enable linger for root', {
        commands: ['loginctl enable-linger root'],
        action: 'gateway-restart',
      });
    }
    return pass(`${LAYOUT.gatewayUnit} active (pid ${(await ctx.gatewayPid()) ?? 'unknown'})`);
  },
};
