import { LAYOUT } from '../../layout.js';
import { fail, lazyFix, pass, type Check } from '../types.js';
import { filesFix } from './files.js';

/** The one gateway restart, last: also when an earlier fix changed what the gateway reads. */
export const gatewayRestartFix = lazyFix(
  { id: 'gateway-restart', title: 'enable linger and the gateway unit, reload the user units and restart the gateway', phase: 'restart', alsoWhen: (ctx) => ctx.gatewayRestartWanted },
  async () => (await import('../fixes.js')).restartGateway,
);

export const RESTART_COMMANDS = [
  'XDG_RUNTIME_DIR=/run/user/0 systemctl --user daemon-reload',
  `XDG_RUNTIME_DIR=/run/user/0 systemctl --user restart ${LAYOUT.gatewayUnit}`,
];

export const gatewayServiceCheck: Check = {
  id: 'gateway-service',
  title: 'Gateway user service active',
  fixes: [gatewayRestartFix],
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
        ...(byFiles ? { action: filesFix } : {}),
      });
    }
    if (!active) {
      return fail(`${LAYOUT.gatewayUnit} (root's user service) is not active`, 'start it (service-deploy gateway restart); if it stops again, read its log (service-deploy gateway logs)', {
        commands: ['service-deploy gateway restart', ...RESTART_COMMANDS],
        action: gatewayRestartFix,
      });
    }
    if (!enabled) {
      return fail(`${LAYOUT.gatewayUnit} is not enabled: it does not start when root's user manager starts (at boot)`, 'enable it', {
        commands: [`XDG_RUNTIME_DIR=/run/user/0 systemctl --user enable ${LAYOUT.gatewayUnit}`],
        action: gatewayRestartFix,
      });
    }
    if (!linger) {
      return fail('linger is off for root: the gateway stops when root logs out and does not start at boot', 'enable linger for root', {
        commands: ['loginctl enable-linger root'],
        action: gatewayRestartFix,
      });
    }
    return pass(`${LAYOUT.gatewayUnit} active (pid ${(await ctx.gatewayPid()) ?? 'unknown'})`);
  },
};
