import type { X509Certificate } from 'node:crypto';
import { x509Certificate } from '../host/crypto.js';
import { readStoredAnswers } from '../answers/index.js';
import { parseEnvFile } from '../channel/env-file.js';
import { CHANNEL_PATH, HEADER, SECRET_PATTERN } from '../channel/protocol.js';
import { DeployError } from '../errors.js';
import { createHost, readOnlyHost, type Host } from '../host/index.js';
import { CHANNEL_PORT, LAYOUT } from '../layout.js';
import { channelShowOutput, emitJson } from '../json/index.js';
import { printLine } from '../output.js';

/**
 * The portal handoff (`service-deploy channel show`): everything the portal (or a
 * partner's script) needs to reach this agent's channel endpoint, as one JSON. The
 * token and knock only with --show-secrets; read-only, from channel.env and the
 * certificate the install wrote.
 */
export interface ChannelHandoff {
  ok: true;
  /** The endpoint: on the first --channel-host, else the server's first public address (or the mesh name); `urls` lists every name the certificate carries. */
  url: string;
  urls: string[];
  certificate: {
    /** What `chat --pin` and the portal's pinning take: sha256:<64 hex>. */
    pin: string;
    /** The same as openssl prints it (AB:CD:...). */
    sha256: string;
    notAfter: string;
    names: string[];
  };
  /** The header nginx checks the knock in (spec 5.2). */
  knockHeader: string;
  /** Addresses allowed to reach the port (--channel-allow); empty: any. */
  allow: string[];
  meshHostname?: string;
  /** With --show-secrets only. */
  token?: string;
  knock?: string;
}

export async function channelHandoff(host: Host, options: { showSecrets?: boolean } = {}): Promise<ChannelHandoff> {
  const [envText, certPem] = await Promise.all([host.files.read(LAYOUT.channelEnv), host.files.read(LAYOUT.tlsCert)]);
  if (envText === undefined) {
    throw new DeployError(`no channel endpoint on this server (${LAYOUT.channelEnv} is missing)`, 'deploy it with: service-deploy install --channel (the catalog deploy does it)');
  }
  if (certPem === undefined) throw new DeployError(`${LAYOUT.tlsCert} is missing`, 'run the install again (or service-deploy doctor --fix)');
  const env = parseEnvFile(envText);
  let cert: X509Certificate;
  try {
    cert = x509Certificate(certPem);
  } catch {
    throw new DeployError(`${LAYOUT.tlsCert} is not a readable certificate`, 'run the install again to make a new one (clients that pinned the old one need the new pin)');
  }
  const names = (cert.subjectAltName ?? '').split(/,\s*/).map((s) => s.trim()).filter(Boolean).map((s) => s.replace(/^IP Address:/, 'IP:'));
  const sha256 = cert.fingerprint256;
  const secret = (name: 'SERVICE_CHANNEL_TOKEN' | 'SERVICE_CHANNEL_KNOCK'): string => {
    const value = env[name];
    if (!value || !SECRET_PATTERN.test(value)) throw new DeployError(`${LAYOUT.channelEnv}: ${name} is missing or not a usable secret`, 'run the install again with --channel (or --rotate-channel-secrets)');
    return value;
  };
  const token = secret('SERVICE_CHANNEL_TOKEN');
  const knock = secret('SERVICE_CHANNEL_KNOCK');
  const urls = endpointUrls(names, await channelHosts(host));
  return {
    ok: true,
    url: urls[0] ?? `https://127.0.0.1:${CHANNEL_PORT}${CHANNEL_PATH}`,
    urls,
    certificate: { pin: pinOf(cert), sha256, notAfter: new Date(cert.validTo).toISOString(), names },
    knockHeader: HEADER.knock,
    allow: (env.SERVICE_CHANNEL_ALLOW ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    ...(env.SERVICE_TS_HOSTNAME ? { meshHostname: env.SERVICE_TS_HOSTNAME } : {}),
    ...(options.showSecrets ? { token, knock } : {}),
  };
}

/**
 * The names given with --channel-host (stored with the answers), or none. The handoff
 * does not depend on the answers file: one it cannot read only loses this order.
 */
async function channelHosts(host: Host): Promise<string[]> {
  try {
    return (await readStoredAnswers(host))?.channelHosts ?? [];
  } catch {
    return [];
  }
}

/**
 * Endpoint URLs from the certificate's names: the --channel-host names first, in the
 * order given (the server cannot see a public address behind NAT nor know which of its
 * names the portal uses); then public IPv4, DNS names with a domain, private IPv4, other
 * IPv6, short names; loopback and `localhost` last (they only work on the server
 * itself). Node writes IPv6 names in full (0:0:0:0:0:0:0:1): the URL carries the usual
 * short form ([::1]), which is also how loopback is recognised.
 */
function endpointUrls(names: string[], given: readonly string[]): string[] {
  const hosts = names.map((n) => {
    const v = n.slice(n.indexOf(':') + 1);
    const ip = n.startsWith('IP:');
    const bare = ip && v.includes(':') ? new URL(`https://[${v}]/`).hostname.slice(1, -1) : v;
    return { ip, v6: ip && v.includes(':'), bare, host: ip && v.includes(':') ? `[${bare}]` : v };
  });
  const rank = ({ ip, v6, bare, host }: (typeof hosts)[number]): number => {
    const at = given.indexOf(bare);
    if (at >= 0) return at - given.length;
    if (host === 'localhost' || /^127\./.test(host) || host === '[::1]') return 5;
    if (ip && !v6) return isPrivateV4(host) ? 2 : 0;
    if (v6) return 3;
    return host.includes('.') ? 1 : 4;
  };
  return hosts.sort((a, b) => rank(a) - rank(b)).map(({ host }) => `https://${host}:${CHANNEL_PORT}${CHANNEL_PATH}`);
}

/** The pin of the channel certificate on disk (sha256:<hex>), or undefined when there is none or it is unreadable. */
export async function channelPin(host: Host): Promise<string | undefined> {
  const pem = await host.files.read(LAYOUT.tlsCert);
  if (pem === undefined) return undefined;
  try {
    return pinOf(x509Certificate(pem));
  } catch {
    return undefined;
  }
}

function pinOf(cert: X509Certificate): string {
  return `sha256:${cert.fingerprint256.replace(/:/g, '').toLowerCase()}`;
}

function isPrivateV4(ip: string): boolean {
  const [a, b] = ip.split('.').map(Number) as [number, number];
  return a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || a === 169;
}

export async function runChannelShow(args: { json?: boolean; verbose?: boolean; showSecrets?: boolean }): Promise<void> {
  const host = readOnlyHost(createHost({ verbose: args.verbose, quiet: args.json }));
  const handoff = await channelHandoff(host, { showSecrets: args.showSecrets });
  if (args.json) return emitJson(channelShowOutput, handoff);
  printLine(`url           ${handoff.url}`);
  for (const other of handoff.urls.slice(1)) printLine(`              ${other}`);
  printLine(`pin           ${handoff.certificate.pin}`);
  printLine(`certificate   SHA-256 ${handoff.certificate.sha256}, valid until ${handoff.certificate.notAfter}`);
  printLine(`knock header  ${handoff.knockHeader}`);
  printLine(`allow         ${handoff.allow.length > 0 ? handoff.allow.join(', ') : 'any address'}`);
  if (handoff.token !== undefined) {
    printLine(`token         ${handoff.token}`);
    printLine(`knock         ${handoff.knock}`);
  } else {
    printLine('token, knock  not shown: add --show-secrets (they are secrets: hand them to the portal only)');
  }
}
