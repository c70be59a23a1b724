import { SERVE_HINT, type MeshStatus } from '../../steps/mesh-client.js';
import { fail, pass, warn, type Check } from '../types.js';

/** Doctor warns this long before the mesh node's key expires. */
export const KEY_EXPIRY_WARN_DAYS = 30;

const DAY_MS = 24 * 3600_000;
const REJOIN = 'SERVICE_MESH_AUTH_KEY=... service-deploy install --non-interactive';

export const meshCheck: Check = {
  id: 'mesh',
  title: 'Mesh client up, hostname, Serve/HTTPS, node key expiry',
  async run(ctx) {
    const [status, answers] = await Promise.all([ctx.mesh(), ctx.answers()]);
    if (!status.installed) return fail('the mesh client (tailscale) is not installed: the gateway UI is unreachable', 'run the install again with a mesh auth key', { commands: [REJOIN] });
    const key = keyState(status, ctx.host.now());
    const host = status.hostname ?? answers?.meshHostname ?? 'this server';
    // Before "running": a node whose key expired is logged out (NeedsLogin), and the expiry is why.
    if (key.kind === 'expired') {
      return fail(
        `the mesh node key of ${host} expired${key.at ? ` on ${day(key.at)}` : ''}: the server is off the partner's mesh (the gateway UI is unreachable over it)`,
        `in the mesh's admin console, Machines, ${host}: "Temporarily extend key", then "Disable key expiry"; or join again with a new tagged, pre-approved auth key, from the server's console or ssh (not over the mesh)`,
        { commands: [REJOIN] },
      );
    }
    if (!status.running) return fail('the mesh client is not logged in / not running', 'run the install again with a new mesh auth key (mesh admin settings, keys); check `systemctl status tailscaled`', { commands: ['systemctl status tailscaled', REJOIN] });
    const want = answers?.meshHostname;
    if (want && status.hostname !== want) {
      return fail(`the mesh hostname is ${status.hostname ?? '(none)'}, configured ${want}`, 'set the hostname back (or re-run the install)', { commands: [`tailscale set --hostname=${want}`] });
    }
    if (!status.serving) {
      return fail('the gateway is not served over the mesh (Serve/HTTPS off): the UI cannot be opened', `enable Serve and Funnel at the network level, then re-run the install: ${SERVE_HINT}`, { commands: ['service-deploy install'] });
    }
    if (key.kind === 'expires' && key.inDays <= KEY_EXPIRY_WARN_DAYS) {
      return warn(
        `the mesh node key of ${host} expires on ${day(key.at)} (in ${key.inDays} ${key.inDays === 1 ? 'day' : 'days'}): then the server drops off the partner's mesh (it joined with an untagged auth key)`,
        `in the mesh's admin console, Machines, ${host}: "Disable key expiry" (nothing changes on the server), or give the machine an ACL tag (tagged nodes do not expire); join new servers with a tagged, pre-approved auth key (docs/quickstart.md)`,
        { commands: ['service-deploy doctor mesh'] },
      );
    }
    const expiry = key.kind === 'expires' ? `node key expires ${day(key.at)} (in ${key.inDays} days)` : `node key does not expire${status.tags.length > 0 ? ` (tagged ${status.tags.join(', ')})` : ''}`;
    return pass(`${status.hostname}${status.dnsName ? ` (https://${status.dnsName})` : ''}, serving the gateway; ${expiry}`);
  },
};

type KeyState = { kind: 'never' } | { kind: 'expired'; at?: Date } | { kind: 'expires'; at: Date; inDays: number };

/** The node key's expiry from the client's status; a value it cannot read counts as none. */
export function keyState(status: Pick<MeshStatus, 'keyExpiry' | 'keyExpired'>, now: Date): KeyState {
  const ms = status.keyExpiry === undefined ? NaN : Date.parse(status.keyExpiry);
  const at = Number.isNaN(ms) ? undefined : new Date(ms);
  if (status.keyExpired || (at && at.getTime() <= now.getTime())) return { kind: 'expired', ...(at ? { at } : {}) };
  if (!at) return { kind: 'never' };
  return { kind: 'expires', at, inDays: Math.floor((at.getTime() - now.getTime()) / DAY_MS) };
}

function day(at: Date): string {
  return at.toISOString().slice(0, 10);
}
