import { LAYOUT } from '../../layout.js';
import { EXPOSURE_TARGET, parseExposure } from '../../steps/gateway-service.js';
import { fail, pass, skip, warn, type Check } from '../types.js';

/**
 * Issue 13: the agent runs confined. `systemd-analyze security` rates the unit as
 * root's user manager loaded it (drop-ins included); above the target the sandbox has
 * drifted (an edited unit, an override drop-in).
 */
export const gatewaySandboxCheck: Check = {
  id: 'gateway-sandbox',
  title: `Gateway sandbox (systemd-analyze security exposure <= ${EXPOSURE_TARGET})`,
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.files.exists(LAYOUT.gatewayUnitFile))) return skip(`${LAYOUT.gatewayUnitFile} is missing (see gateway-service)`);
    const result = await host.exec
      .run('systemd-analyze', ['security', '--user', '--no-pager', LAYOUT.gatewayUnit], {
        env: { XDG_RUNTIME_DIR: '/run/user/0', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/0/bus' },
        allowFailure: true,
        timeoutMs: 60_000,
      })
      .catch((error: Error) => ({ exitCode: 127, stdout: '', stderr: error.message }));
    const exposure = parseExposure(result.stdout);
    if (exposure === undefined) {
      return warn(`systemd-analyze security gave no rating: ${(result.stderr.trim() || result.stdout.trim()).split('\n').slice(-2).join(' ')}`, 'run it by hand to see why', {
        commands: [`XDG_RUNTIME_DIR=/run/user/0 systemd-analyze security --user ${LAYOUT.gatewayUnit}`],
      });
    }
    if (exposure > EXPOSURE_TARGET) {
      return fail(
        `exposure ${exposure.toFixed(1)} is above ${EXPOSURE_TARGET}: the gateway's sandbox was weakened (an edited unit or a drop-in)`,
        `re-run the install to write the unit again; look for drop-ins in ${LAYOUT.gatewayDropInDir} other than service-env.conf`,
        { commands: ['service-deploy install', `XDG_RUNTIME_DIR=/run/user/0 systemd-analyze security --user ${LAYOUT.gatewayUnit}`] },
      );
    }
    return pass(`exposure ${exposure.toFixed(1)} (target <= ${EXPOSURE_TARGET})`);
  },
};
