import { createHash } from '../host/crypto.js';
import { fillTemplate, renderTemplate } from '../render/template.js';
import { readTemplate } from '../assets.js';
import type { Cidr } from './allow.js';

/**
 * The channel port's per-address connection limits, in an nftables table of our own
 * (templates/service-channel-firewall.nft) loaded at boot by a oneshot unit
 * (templates/service-channel-firewall.service). Pure: the texts and their parsing.
 *
 * Why nftables, and a table of its own: Ubuntu 22.04 and 24.04 filter with nf_tables
 * (iptables there is iptables-nft; ufw and firewalld sit on it too). A table of our own
 * is evaluated beside theirs at the same hook: it can only refuse, never accept for
 * them, so it neither opens nor rewrites another firewall, and it is replaced or
 * removed whole in one transaction. The limits act on the SYN, before nginx accepts
 * the connection: before TLS, before a byte is read.
 */
export const FIREWALL_TABLE = 'service_deploy_channel';
export const FIREWALL_FAMILY = 'inet';

export interface FirewallLimits {
  /** Connections in progress per address (spec 8: 3 per client IP). */
  maxConnections: number;
  /** New connections per address and minute, with this burst. */
  newPerMinute: number;
  newBurst: number;
}

/**
 * 3 connections at once (spec 8). New connections: a burst of 20, then 20 a minute: a
 * chat is one connection (two with a retry), and at most 10 chats a minute are accepted
 * per address, so the portal never meets this limit; a handshake flood from one address
 * costs nginx at most 20 RSA handshakes, then one every 3 s.
 */
export const DEFAULT_LIMITS: FirewallLimits = { maxConnections: 3, newPerMinute: 20, newBurst: 20 };

export interface FirewallValues extends FirewallLimits {
  port: number;
  allow: readonly Cidr[];
}

/** The ruleset file (nft -f), with a marker naming its content's hash in a rule comment. */
export function renderFirewallRules(values: FirewallValues, unit: string): string {
  for (const n of [values.port, values.maxConnections, values.newPerMinute, values.newBurst]) {
    if (!Number.isInteger(n) || n <= 0) throw new Error(`internal: firewall value ${n} is not a positive integer`);
  }
  const v4 = values.allow.filter((c) => c.family === 4).map((c) => c.text);
  const v6 = values.allow.filter((c) => c.family === 6).map((c) => c.text);
  for (const text of [...v4, ...v6]) if (!/^[0-9a-f.:]+\/\d{1,3}$/.test(text)) throw new Error(`internal: allow list entry ${text} is not canonical`);
  const elements = (list: string[]) => (list.length > 0 ? ` elements = { ${list.join(', ')} }` : '');
  const allowSets =
    values.allow.length === 0
      ? '\t# No address allow list (install --channel-allow): any address may connect.'
      : [
          '\t# The portal\'s addresses (install --channel-allow): nobody else reaches the port.',
          `\tset allow_v4 { type ipv4_addr; flags interval;${elements(v4)} }`,
          `\tset allow_v6 { type ipv6_addr; flags interval;${elements(v6)} }`,
        ].join('\n');
  const allowRules =
    values.allow.length === 0
      ? '\t\t# (no allow list)'
      : ['\t\tmeta nfproto ipv4 ip saddr != @allow_v4 reject with tcp reset', '\t\tmeta nfproto ipv6 ip6 saddr != @allow_v6 reject with tcp reset'].join('\n');
  const fill = (marker: string) =>
    renderTemplate('service-channel-firewall.nft', {
      table: FIREWALL_TABLE,
      unit,
      port: values.port,
      allowSets,
      allowRules,
      maxConnections: values.maxConnections,
      newPerMinute: values.newPerMinute,
      newBurst: values.newBurst,
      marker,
    });
  return fill(firewallMarker(fill('service-deploy')));
}

/** `service-deploy sha256:<16 hex>` of the ruleset: what `nft list table` shows when this exact file is loaded. */
export function firewallMarker(textWithoutMarker: string): string {
  return `service-deploy sha256:${createHash('sha256').update(textWithoutMarker).digest('hex').slice(0, 16)}`;
}

/** The marker in a ruleset file or in `nft list table` output, or undefined. */
export function markerIn(text: string): string | undefined {
  return /comment "(service-deploy sha256:[0-9a-f]{16})"/.exec(text)?.[1];
}

/** The oneshot unit that loads the rules at boot. */
export function renderFirewallUnit(values: { nft: string; rules: string; port: number }): string {
  if (!/^\/[A-Za-z0-9/._-]+$/.test(values.nft) || !/^\/[A-Za-z0-9/._-]+$/.test(values.rules)) throw new Error('internal: firewall unit paths must be plain absolute paths');
  return fillTemplate(readTemplate('service-channel-firewall.service'), { table: FIREWALL_TABLE, ...values }, 'service-channel-firewall.service');
}

/** `ufw status` lines: whether ufw is active, and whether a rule allows the port over TCP. */
export function ufwStatus(output: string, port: number): { active: boolean; allows: boolean } {
  const active = /^Status:\s*active\b/m.test(output);
  const allows = output
    .split('\n')
    .some((line) => new RegExp(`^${port}(/tcp)?(\\s+\\(v6\\))?\\s+ALLOW(\\s+IN)?\\s+Anywhere(\\s+\\(v6\\))?(\\s|$)`).test(line.trim()));
  return { active, allows };
}
