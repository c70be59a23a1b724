import { CHANNEL_PORT } from '../../layout.js';
import { hostFirewalls } from '../../steps/channel-firewall.js';
import { NOT_CONFIGURED } from './channel-env.js';
import { fail, pass, skip, type Check } from '../types.js';

/** Where ufw or firewalld is active, it lets the portal reach 18790/tcp. */
export const channelPortCheck: Check = {
  id: 'channel-port',
  title: `Port ${CHANNEL_PORT}/tcp open in an active ufw/firewalld`,
  async run(ctx) {
    if (!(await ctx.channelConfigured())) return skip(NOT_CONFIGURED);
    const fw = await hostFirewalls(ctx.host, async (unit) => (await ctx.unit('system', unit)).active);
    if (fw.ufw?.active && !fw.ufw.allows) {
      return fail(`ufw is active and does not allow ${CHANNEL_PORT}/tcp: the portal cannot reach the channel`, 'allow the port (only that), or re-run the install, which does it', { commands: [`ufw allow ${CHANNEL_PORT}/tcp`] });
    }
    if (fw.firewalld?.running && !(fw.firewalld.runtime && fw.firewalld.permanent)) {
      return fail(`firewalld is running and port ${CHANNEL_PORT}/tcp is not open${fw.firewalld.runtime ? ' permanently' : ''}: the portal cannot reach the channel`, 'add the port (runtime and permanent), or re-run the install, which does it', {
        commands: [`firewall-cmd --add-port=${CHANNEL_PORT}/tcp`, `firewall-cmd --permanent --add-port=${CHANNEL_PORT}/tcp`],
      });
    }
    const parts = [
      fw.ufw ? (fw.ufw.active ? `ufw allows ${CHANNEL_PORT}/tcp` : 'ufw inactive') : 'no ufw',
      fw.firewalld ? (fw.firewalld.running ? `firewalld has ${CHANNEL_PORT}/tcp` : 'firewalld not running') : 'no firewalld',
    ];
    return pass(parts.join('; '));
  },
};
