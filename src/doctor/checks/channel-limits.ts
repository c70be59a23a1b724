import { DEFAULT_LIMITS, FIREWALL_TABLE, markerIn } from '../../channel/firewall.js';
import { CHANNEL_PORT, LAYOUT } from '../../layout.js';
import { loadedTable, nftUsable } from '../../steps/channel-firewall.js';
import { NOT_CONFIGURED } from './channel-env.js';
import { fail, lazyFix, pass, skip, warn, type Check } from '../types.js';

export const channelLimitsFix = lazyFix(
  { id: 'channel-limits', title: "load the channel port's connection limits again (nft -f of their file) and enable their unit", phase: 'services' },
  async () => (await import('../fixes.js')).loadChannelLimits,
);

const REINSTALL = 'service-deploy install --channel';
const WITHOUT = `nothing limits one address's connections to port ${CHANNEL_PORT} before TLS (nginx's timeouts and per-request limits still apply)`;

/**
 * The channel port's per-address connection limits (nftables table inet
 * service_deploy_channel): installed, enabled for boot, and loaded as written.
 * Where nftables cannot be used (a container without CAP_NET_ADMIN) it warns: the
 * install skipped the table there.
 */
export const channelLimitsCheck: Check = {
  id: 'channel-limits',
  title: `Per-address connection limits on ${CHANNEL_PORT} (nftables)`,
  fixes: [channelLimitsFix],
  async run(ctx) {
    const { host } = ctx;
    if (!(await ctx.channelConfigured())) return skip(NOT_CONFIGURED);
    // Everything asked at once; the table listed means nft works here (no probe of its own).
    const [unit, rules, table, enabled] = await Promise.all([
      host.files.exists(LAYOUT.channelFirewallUnitFile),
      host.files.read(LAYOUT.channelFirewallRules),
      loadedTable(host),
      ctx.unit('system', LAYOUT.channelFirewallUnit).then((u) => u.enabled),
    ]);
    const usable = table.listed ? { ok: true as const } : await nftUsable(host);
    if (!usable.ok) {
      return warn(`${usable.reason}: ${WITHOUT}`, unit ? 'run doctor as root on the server itself' : 'on a server that allows nftables (a VM rather than a container without CAP_NET_ADMIN), re-run the install to add the limits', {
        commands: unit ? ['sudo service-deploy doctor channel-limits'] : [REINSTALL],
      });
    }
    if (!unit || rules === undefined) {
      return warn(`the limits are not installed (${!unit ? LAYOUT.channelFirewallUnitFile : LAYOUT.channelFirewallRules} is missing): ${WITHOUT}`, 're-run the install with --channel: it writes and loads them', { commands: [REINSTALL] });
    }
    const loaded = table.marker;
    const want = markerIn(rules);
    if (loaded === undefined) {
      return fail(`the table inet ${FIREWALL_TABLE} is not loaded (flushed by \`nft flush ruleset\` or another firewall tool?): ${WITHOUT}`, `load it again from ${LAYOUT.channelFirewallRules}`, {
        commands: [`nft -f ${LAYOUT.channelFirewallRules}`],
        action: channelLimitsFix,
      });
    }
    if (loaded !== want) {
      return warn(`the loaded table inet ${FIREWALL_TABLE} is not the one in ${LAYOUT.channelFirewallRules}`, 'load the file again', { commands: [`nft -f ${LAYOUT.channelFirewallRules}`], action: channelLimitsFix });
    }
    if (!enabled) {
      return warn(`${LAYOUT.channelFirewallUnit} is not enabled: the limits are gone after the next reboot`, 'enable it', { commands: [`systemctl enable ${LAYOUT.channelFirewallUnit}`], action: channelLimitsFix });
    }
    const allow = /set allow_v4/.test(rules) ? 'only the --channel-allow addresses' : 'any address';
    return pass(`table inet ${FIREWALL_TABLE} loaded: ${DEFAULT_LIMITS.maxConnections} connections and ${DEFAULT_LIMITS.newPerMinute} new a minute (burst ${DEFAULT_LIMITS.newBurst}) per address; ${allow}`);
  },
};
