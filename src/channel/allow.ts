import net from 'node:net';

/**
 * The channel's address allow list (`install --channel-allow CIDR[,CIDR]`): the portal's
 * egress addresses. Pure. An empty list means "any address" (the default: the channel
 * port is public, docs/channel-protocol.md "Public exposure").
 */

/** The words that clear the list: `--channel-allow any`. */
export const ALLOW_ANY = 'any';

export interface Cidr {
  family: 4 | 6;
  /** Canonical text: network address (IPv6 compressed, lowercase) and prefix length. */
  text: string;
}

/**
 * Parses a comma-separated list of addresses or CIDR blocks. A bare address is a /32
 * (/128). Host bits must be zero (198.18.0.5/15 is refused: it is almost always a typo
 * for 198.18.0.0/15, and nginx and nftables would read it differently). Returns the
 * canonical, de-duplicated, sorted list; throws an Error naming every bad entry.
 */
export function parseAllowList(text: string): Cidr[] {
  const trimmed = text.trim();
  if (trimmed.toLowerCase() === ALLOW_ANY) return [];
  const entries = trimmed.split(',').map((e) => e.trim());
  const bad: string[] = [];
  const out = new Map<string, Cidr>();
  for (const entry of entries) {
    const cidr = entry === '' ? undefined : parseCidr(entry);
    if (typeof cidr === 'string' || cidr === undefined) bad.push(cidr ?? `"${entry}" is empty`);
    else out.set(cidr.text, cidr);
  }
  if (bad.length > 0) throw new Error(bad.join('; '));
  if (out.size === 0) throw new Error('no address given');
  return [...out.values()].sort((a, b) => a.family - b.family || a.text.localeCompare(b.text));
}

/** The list as stored in channel.env (SERVICE_CHANNEL_ALLOW): "a/n,b/m", or "" for any. */
export function formatAllowList(list: readonly Cidr[]): string {
  return list.map((c) => c.text).join(',');
}

/** One entry, or a message saying what is wrong with it. */
export function parseCidr(entry: string): Cidr | string {
  const slash = entry.indexOf('/');
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const family = net.isIPv4(address) ? 4 : net.isIPv6(address) && !address.includes('%') ? 6 : 0;
  if (family === 0) return `"${entry}" is not an IPv4 or IPv6 address or CIDR block`;
  const bits = family === 4 ? 32 : 128;
  let prefix = bits;
  if (slash >= 0) {
    const p = entry.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > bits) return `"${entry}" has a prefix length other than 0-${bits}`;
    prefix = Number(p);
  }
  const value = family === 4 ? ipv4ToBigInt(address) : ipv6ToBigInt(address);
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  if ((value & hostMask) !== 0n) {
    const network = value & ~hostMask;
    return `"${entry}" has host bits set (the block is ${formatAddress(network, family)}/${prefix})`;
  }
  return { family, text: `${formatAddress(value, family)}/${prefix}` };
}

function ipv4ToBigInt(address: string): bigint {
  return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function ipv6ToBigInt(address: string): bigint {
  let text = address.toLowerCase();
  // An embedded IPv4 tail (::ffff:1.2.3.4) as two hex groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = ipv4ToBigInt(v4[1]!);
    text = `${text.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headParts = head ? head.split(':') : [];
  const tailParts = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const missing = 8 - headParts.length - tailParts.length;
  const parts = [...headParts, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...tailParts];
  return parts.reduce((acc, part) => (acc << 16n) | BigInt(parseInt(part, 16)), 0n);
}

function formatAddress(value: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt((7 - i) * 16)) & 0xffffn).toString(16));
  // The canonical compressed form (RFC 5952): the longest run of two or more zero groups becomes "::".
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best.length && j - i >= 2) best = { start: i, length: j - i };
    i = j;
  }
  if (best.start < 0) return groups.join(':');
  return `${groups.slice(0, best.start).join(':')}::${groups.slice(best.start + best.length).join(':')}`;
}
