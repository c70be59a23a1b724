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
    const [active, linger, unit, enabled] = await Promise.all([
      ctx.gatewayActive(),
      host.files.exists(LAYOUT.lingerFile),
      host.files.exists(LAYOUT.gatewayUnitFile),
      ctx.unit('user', LAYOUT.gatewayUnit).then((u) => u.enabled),
    ]);
    if (!unit) {
      const byFiles = await ctx.repairedByFiles(LAYOUT.gatewayUnitFile);
      return fail(`${LAYOUT.gatewayUnitFile} is missing: the gateway does not start again after a stop or a reboot`, 'write the unit again (doctor --fix or the install), reload the user units and restart the gateway', {
        commands: byFiles ? ['service-deploy doctor --fix'] : ['service-deploy install'],
        ...(byFiles ? { action: 'files' as const } : {}),
      });
    }
    if (!active) {
      return fail(`${LAYOUT.gatewayUnit} (root's user service) is not active`, 'start it (service-deploy gateway restart); if it stops again, read its log (service-deploy gateway logs)', {
        commands: ['service-deploy gateway restart', ...RESTART_COMMANDS],
        action: 'gateway-restart',
      });
    }
    if (!enabled) {
      return fail(`${LAYOUT.gatewayUnit} is not enabled: it does not start when root's user manager starts (at boot)`, 'enable it', {
        commands: [`XDG_RUNTIME_DIR=/run/user/0 systemctl --user enable ${LAYOUT.gatewayUnit}`],
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
