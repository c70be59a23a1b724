import net from 'node:net';

/**
 * Rules for text that comes from outside (answers, environment variables, files a user
 * names, archives): the checks every such value passes before the program uses it.
 * Each returns a problem in words, or undefined when the value is fine; the caller
 * names the field or variable.
 */

/**
 * Characters refused in every answer and variable: C0 and C1 control characters and
 * DEL (escape sequences, newlines that would split a line of a file we write), the
 * Unicode characters that reorder or disguise text (bidi embeddings, overrides,
 * isolates and marks), line and paragraph separators, the BOM, and U+FFFD (what
 * invalid UTF-8 decodes to).
 */
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ufffd]/u;

function kindOf(ch: string): string {
  const code = ch.codePointAt(0)!;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  if (code <= 0x1f || code === 0x7f) return `a control character (${hex})`;
  if (code >= 0x80 && code <= 0x9f) return `a C1 control character (${hex})`;
  if (code === 0xfffd) return `invalid UTF-8 (${hex})`;
  if (code === 0x2028 || code === 0x2029) return `a line separator (${hex})`;
  if (code === 0xfeff) return `a byte order mark (${hex})`;
  return `a bidirectional text control (${hex})`;
}

/** The first forbidden character of `value` in words, or undefined. */
export function forbiddenCharacter(value: string): string | undefined {
  const match = FORBIDDEN.exec(value);
  return match ? kindOf(match[0]) : undefined;
}

/** Control characters, then length: the rules every piece of outside text meets. */
export function textProblem(value: string, maxLength: number): string | undefined {
  const bad = forbiddenCharacter(value);
  if (bad) return `contains ${bad}`;
  if (value.length > maxLength) return `is longer than ${maxLength} characters`;
  return undefined;
}

/** A secret or token: no whitespace or control characters, bounded. */
export function tokenProblem(value: string, maxLength = 1024): string | undefined {
  if (value === '') return 'is empty';
  const text = textProblem(value, maxLength);
  if (text) return text;
  if (/\s/u.test(value)) return 'must not contain spaces or line breaks';
  return undefined;
}

export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname === '::1' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

export const MAX_URL_LENGTH = 2048;

/** An https URL (plain http only to a loopback address: the test stand-ins), without credentials. */
export function serviceUrlProblem(value: string): string | undefined {
  const text = textProblem(value, MAX_URL_LENGTH);
  if (text) return text;
  if (/\s/u.test(value)) return 'must not contain spaces';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.username || url.password) return 'must not carry a user name or password';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && isLoopback(url.hostname)) return undefined;
  return 'must be an https URL (plain http only for a loopback stand-in)';
}

/** Model identifiers: what the service's AI gateway names models with. */
export const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/;
export const MAX_MODEL_ID_LENGTH = 200;

/** A lowercase slug (provider names, API kinds). */
export const SLUG = /^[a-z0-9][a-z0-9-]*$/;

/** Whole seconds or milliseconds given as text: digits only, within [min, max]. */
export function integerProblem(value: string, min: number, max: number): string | undefined {
  const trimmed = value.trim();
  if (trimmed === '') return 'is empty';
  if (!/^\d+$/.test(trimmed)) return 'must be a whole number';
  const n = Number(trimmed);
  if (!Number.isSafeInteger(n) || n < min || n > max) return `must be between ${min} and ${max}`;
  return undefined;
}

/**
 * A number typed on the command line, as text: plain decimal digits with an optional
 * fraction (no sign, exponent, hex, NaN or Infinity), within its range. `whole`: no
 * fraction; `aboveMin`: the minimum itself is refused (a timeout of 0). Returns the
 * problem in words, or undefined.
 */
export function numberTextProblem(value: string, range: { min: number; max: number; whole?: boolean; aboveMin?: boolean }): string | undefined {
  const text = value.trim();
  const span = range.whole ? `a whole number from ${range.aboveMin ? range.min + 1 : range.min} to ${range.max}` : `a number ${range.aboveMin ? 'above' : 'from'} ${range.min}${range.aboveMin ? ', at most' : ' to'} ${range.max}`;
  if (text === '') return `is empty: give ${span}`;
  if (!/^\d+(\.\d+)?$/.test(text)) return `${/^-\d/.test(text) ? 'is negative' : 'is not a number'}: give ${span}`;
  const n = Number(text);
  if ((range.whole && !Number.isInteger(n)) || n < range.min || (range.aboveMin && n === range.min) || n > range.max) return `must be ${span}`;
  return undefined;
}

const FILE_ERRORS: Record<string, string> = {
  ENOENT: 'there is no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a folder, not a file',
  ENOTDIR: 'a part of its path is not a folder',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
  EMFILE: 'too many files are open',
};

/** Why a file could not be read, in words (the system's code in brackets when it has no words here). */
export function fileErrorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code && FILE_ERRORS[code]) return FILE_ERRORS[code]!;
  // Our own readers' reasons ("not a regular file", "larger than 64 KiB") are words already.
  if (code && /\s/.test(code)) return code;
  if (code) return `cannot read it (${code})`;
  return error instanceof Error ? error.message : String(error);
}

/** `--flag "value": problem` (an empty value: `--flag is empty`), the form refusals name a given value in. */
export function givenProblem(name: string, value: string, problem: string): string {
  return value.trim() === '' ? `${name} ${problem}` : `${name} ${shown(value)}: ${problem}`;
}

/** Shows a value the user gave inside a message: escaped, shortened, never a secret. */
export function shown(value: string, max = 60): string {
  const json = JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
  // JSON escapes C0 controls; also escape what JSON leaves as is.
  return json.replace(/[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/gu, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

/**
 * A binary built from the repository carries the placeholder service profile
 * (`*.service.example`, a name reserved by RFC 2606 that never resolves): a failure to
 * reach it is not the network's fault. The hint for such a URL, or undefined.
 */
export function placeholderEndpointHint(url: string, variable?: string): string | undefined {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  if (host !== 'example' && !host.endsWith('.example')) return undefined;
  return `${host} is a placeholder (this binary was built from the repository without the service's real endpoints): use the binary from your setup URL, or set ${variable ?? 'the SERVICE_*_URL variables'} (\`service-deploy profile\` shows the endpoints in use)`;
}

/**
 * The channel's public names (`install --channel-host NAME|ADDRESS`, SERVICE_CHANNEL_HOSTS,
 * `channelHosts` in an answers file): the names the portal reaches the server by, which
 * the server cannot see itself (a public address behind 1:1 NAT, the custom domain of
 * SPEC 1.1). Each one is a DNS name or an IP address; `none` clears the list.
 */
export const CHANNEL_HOSTS_NONE = 'none';
export const MAX_CHANNEL_HOSTS = 16;
const DNS_NAME_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** One name or address in its canonical form (DNS lowercase, IPv6 compressed), or the problem in words. */
export function channelHost(entry: string): { host: string } | { problem: string } {
  const value = entry.trim();
  const bad = (why: string) => ({ problem: `${shown(value)} ${why}` });
  if (value === '') return { problem: 'an empty name' };
  const text = textProblem(value, 253);
  if (text) return bad(text);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return bad('is a URL: give only its host name (the channel is always https on port 18790)');
  const bare = /^\[(.*)\]$/.exec(value)?.[1] ?? value;
  if (net.isIPv4(bare)) return { host: bare };
  if (net.isIPv6(bare)) {
    if (bare.includes('%')) return bad('has a zone index (%...): a certificate cannot name it');
    return { host: new URL(`http://[${bare}]`).hostname.slice(1, -1) };
  }
  if (/^[^:]+:\d+$/.test(value) || /^\[.*\]:\d+$/.test(value)) return bad('has a port: give the name only (the channel is always on port 18790)');
  if (/[^\x00-\x7f]/.test(value)) return bad('is not ASCII: give an internationalised domain name in its xn-- form');
  if (value.includes('*')) return bad('is a wildcard: give the exact name the portal uses');
  const name = value.toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  if (!labels.every((l) => DNS_NAME_LABEL.test(l))) {
    return bad('is neither an IP address nor a DNS name (letters, digits and -, in labels of 1-63 characters separated by dots, none starting or ending with -)');
  }
  // An all-numeric last label is an address, not a name ("10.1.2" is read as one by resolvers).
  if (/^\d+$/.test(labels.at(-1)!)) return bad('is neither a valid IP address nor a DNS name (a DNS name does not end in a number)');
  return { host: name };
}

/**
 * A list of names and addresses (comma-separated, or given one by one), canonical,
 * without repeats, in the order given; [] for `none`. Throws an Error naming every bad
 * entry.
 */
export function parseChannelHosts(given: string | readonly string[]): string[] {
  const entries = (typeof given === 'string' ? [given] : [...given]).flatMap((g) => g.split(','));
  if (entries.length === 1 && entries[0]!.trim().toLowerCase() === CHANNEL_HOSTS_NONE) return [];
  const out: string[] = [];
  const problems: string[] = [];
  for (const entry of entries) {
    if (entry.trim().toLowerCase() === CHANNEL_HOSTS_NONE) {
      problems.push(`"${CHANNEL_HOSTS_NONE}" clears the list and goes alone`);
      continue;
    }
    const result = channelHost(entry);
    if ('problem' in result) problems.push(result.problem);
    else if (!out.includes(result.host)) out.push(result.host);
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
  if (out.length > MAX_CHANNEL_HOSTS) throw new Error(`${out.length} names: at most ${MAX_CHANNEL_HOSTS}`);
  return out;
}
