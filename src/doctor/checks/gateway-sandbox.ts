import { LAYOUT } from '../../layout.js';
import { EXPOSURE_TARGET, gatewayUnitFile, parseExposure } from '../../steps/gateway-service.js';
import { fail, pass, skip, warn, type Check } from '../types.js';
import { filesFix } from './files.js';

/**
 * Issue 13: the agent runs confined. `systemd-analyze security` rates the unit as
 * root's user manager loaded it (drop-ins included); above the target the sandbox has
 * drifted (an edited unit, an override drop-in). A unit file that is not the one the
 * install writes is rated for nothing: its sandbox comes back when the files action
 * writes it again (the manifest names it), and is rated after that.
 */
export const gatewaySandboxCheck: Check = {
  id: 'gateway-sandbox',
  title: `Gateway sandbox (systemd-analyze security exposure <= ${EXPOSURE_TARGET})`,
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.files.exists(LAYOUT.gatewayUnitFile))) return skip(`${LAYOUT.gatewayUnitFile} is missing (see gateway-service)`);
    if ((await host.files.read(LAYOUT.gatewayUnitFile)) !== gatewayUnitFile().content) {
      if (!(await ctx.repairedByFiles(LAYOUT.gatewayUnitFile))) return skip(`${LAYOUT.gatewayUnitFile} is not the unit the install writes (see files)`);
      return fail(`${LAYOUT.gatewayUnitFile} is not the unit the install writes: its sandbox is unknown until the unit is written again`, 'write the unit again (doctor --fix), reload the user units and restart the gateway', {
        commands: ['service-deploy doctor --fix'],
        action: filesFix,
      });
    }
    const result = await ctx.sandboxRating();
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
