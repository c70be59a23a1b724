import { LAYOUT } from '../../layout.js';
import { channelDropInFile } from '../../steps/channel.js';
import { RESTART_COMMANDS } from './gateway-service.js';
import { CHANNEL_VARIABLES, NOT_CONFIGURED } from './channel-env.js';
import { fail, pass, skip, warn, type Check } from '../types.js';
import { gatewayRestartFix } from './gateway-service.js';
import { guardFix } from './guard-cron.js';

const SYMPTOM = 'every chat call fails with 503 "misconfigured"';

/**
 * The drop-in exists AND the running gateway has the variables: read from the
 * process environment (/proc/<MainPID>/environ), since a drop-in written without
 * `daemon-reload` + restart is on disk but not in the process.
 */
export const channelDropInCheck: Check = {
  id: 'channel-drop-in',
  title: 'Channel drop-in loaded into the running gateway',
  async run(ctx) {
    const { host } = ctx;
    if (!(await ctx.channelConfigured())) return skip(NOT_CONFIGURED);
    const desired = channelDropInFile();
    const current = await host.files.read(desired.path);
    if (current !== desired.content) {
      return fail(`${desired.path} is ${current === undefined ? 'missing' : 'not the one the install writes'}: the gateway does not load channel.env, so ${SYMPTOM}`, 'restore the drop-in, then reload the units and restart the gateway (the guard does all three)', {
        commands: ['service-deploy doctor --fix', ...RESTART_COMMANDS],
        action: guardFix,
      });
    }
    const pid = await ctx.gatewayPid();
    if (!pid) return warn('the gateway is not running, so its environment cannot be checked', 'start it (see gateway-service), then run doctor again', { commands: ['service-deploy gateway restart'], action: gatewayRestartFix });
    const environ = await host.proc.environ(pid);
    if (!environ) return warn(`gateway pid ${pid} vanished while checking`, 'run doctor again', { commands: ['service-deploy doctor'] });
    const missing = CHANNEL_VARIABLES.filter((name) => !environ.get(name));
    if (missing.length > 0) {
      return fail(`the running gateway (pid ${pid}) lacks ${missing.join(', ')}: ${SYMPTOM}`, `the drop-in ${desired.path} is on disk but was not loaded: reload the user units and restart the gateway (XDG_RUNTIME_DIR=/run/user/0)`, {
        commands: RESTART_COMMANDS,
        action: gatewayRestartFix,
      });
    }
    const file = (await ctx.channelEnv()) ?? {};
    const stale = CHANNEL_VARIABLES.filter((name) => file[name] !== undefined && environ.get(name) !== file[name]);
    if (stale.length > 0) {
      return fail(`the running gateway (pid ${pid}) has older values of ${stale.join(', ')} than ${LAYOUT.channelEnv}: the portal's calls are rejected`, 'restart the gateway so it reads the current channel.env', {
        commands: RESTART_COMMANDS,
        action: gatewayRestartFix,
      });
    }
    return pass(`gateway pid ${pid} has ${CHANNEL_VARIABLES.join(', ')}`);
  },
};
