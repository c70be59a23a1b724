import { SERVE_HINT } from '../../steps/mesh-client.js';
import { fail, pass, type Check } from '../types.js';

export const meshCheck: Check = {
  id: 'mesh',
  title: 'Mesh client up, hostname, Serve/HTTPS',
  async run(ctx) {
    const [status, answers] = await Promise.all([ctx.mesh(), ctx.answers()]);
    if (!status.installed) return fail('the mesh client (tailscale) is not installed: the gateway UI is unreachable', 'run the install again with a mesh auth key', { commands: ['SERVICE_MESH_AUTH_KEY=... service-deploy install --non-interactive'] });
    if (!status.running) return fail('the mesh client is not logged in / not running', 'run the install again with a new mesh auth key (mesh admin settings, keys); check `systemctl status tailscaled`', { commands: ['systemctl status tailscaled', 'SERVICE_MESH_AUTH_KEY=... service-deploy install --non-interactive'] });
    const want = answers?.meshHostname;
    if (want && status.hostname !== want) {
      return fail(`the mesh hostname is ${status.hostname ?? '(none)'}, configured ${want}`, 'set the hostname back (or re-run the install)', { commands: [`tailscale set --hostname=${want}`] });
    }
    if (!status.serving) {
      return fail('the gateway is not served over the mesh (Serve/HTTPS off): the UI cannot be opened', `enable Serve and Funnel at the network level, then re-run the install: ${SERVE_HINT}`, { commands: ['service-deploy install'] });
    }
    return pass(`${status.hostname}${status.dnsName ? ` (https://${status.dnsName})` : ''}, serving the gateway`);
  },
};
