import { renderTemplate } from '../render/template.js';
import { CHANNEL_PORT, GATEWAY_PORT, LAYOUT } from '../layout.js';
import { parseAllowList, type Cidr } from './allow.js';
import { SECRET_PATTERN } from './protocol.js';

/** The values of the nginx site; production defaults from PRODUCTION_SITE. */
export interface NginxSiteValues {
  /** nginx `listen` address: "0.0.0.0:18790" in production, a loopback port in tests. */
  listen: string;
  /** host:port of the gateway (or `unix:/path:` in tests). */
  upstream: string;
  cert: string;
  key: string;
  /** The knock secret (SERVICE_CHANNEL_KNOCK); pass a placeholder to print the site without it. */
  knock: string;
  /** The edge secret (SERVICE_CHANNEL_EDGE) nginx adds for the plugin. */
  edge: string;
  /** The portal's addresses (--channel-allow); empty: any address. */
  allow: readonly Cidr[];
  errorLog: string;
  accessLog: string;
}

export const NGINX_ERROR_LOG = '/var/log/nginx/error.log';
export const CHANNEL_ACCESS_LOG = '/var/log/nginx/service-channel.access.log';

export const PRODUCTION_SITE: Omit<NginxSiteValues, 'knock' | 'edge' | 'allow'> = {
  listen: `0.0.0.0:${CHANNEL_PORT}`,
  upstream: `127.0.0.1:${GATEWAY_PORT}`,
  cert: LAYOUT.tlsCert,
  key: LAYOUT.tlsKey,
  errorLog: NGINX_ERROR_LOG,
  accessLog: CHANNEL_ACCESS_LOG,
};

const SAFE_VALUE = /^[A-Za-z0-9._:/[\]-]+$/;

/**
 * The nginx site (templates/service-channel.nginx.conf): zones, maps and the server
 * block, for nginx's http context. Pure. Values are checked so nothing can break out
 * of the nginx string or directive they land in.
 */
export function renderNginxSite(values: NginxSiteValues): string {
  if (!SECRET_PATTERN.test(values.knock)) throw new Error('internal: the knock must match SECRET_PATTERN (no quotes, spaces, $ or ;)');
  if (!SECRET_PATTERN.test(values.edge)) throw new Error('internal: the edge secret must match SECRET_PATTERN (no quotes, spaces, $ or ;)');
  for (const key of ['listen', 'upstream', 'cert', 'key', 'errorLog', 'accessLog'] as const) {
    if (!SAFE_VALUE.test(values[key])) throw new Error(`internal: nginx site value ${key} has characters nginx would misread: ${values[key]}`);
  }
  const { allow, ...rest } = values;
  for (const cidr of allow) {
    if (!/^[0-9a-f.:]+\/\d{1,3}$/.test(cidr.text)) throw new Error(`internal: allow list entry ${cidr.text} is not canonical`);
  }
  // Loopback stays allowed (the server's own `service-deploy chat`; nftables exempts it too).
  const allowGeo = allow.length === 0 ? '    default 1;' : ['    default 0;', '    127.0.0.0/8 1;', '    ::1/128 1;', ...allow.map((c) => `    ${c.text} 1;`)].join('\n');
  return renderTemplate('service-channel.nginx.conf', { ...rest, allowGeo });
}

/** channel.env variables the site is made from. */
export interface ChannelSiteEnv {
  SERVICE_CHANNEL_KNOCK?: string;
  SERVICE_CHANNEL_EDGE?: string;
  SERVICE_CHANNEL_ALLOW?: string;
}

/**
 * The production site from channel.env's values (doctor --fix, render). Throws an
 * Error naming the variable that is missing or unusable.
 */
export function productionSiteFromEnv(env: ChannelSiteEnv): string {
  const knock = env.SERVICE_CHANNEL_KNOCK;
  const edge = env.SERVICE_CHANNEL_EDGE;
  if (!knock || !SECRET_PATTERN.test(knock)) throw new Error('SERVICE_CHANNEL_KNOCK is missing or unusable');
  if (!edge || !SECRET_PATTERN.test(edge)) throw new Error('SERVICE_CHANNEL_EDGE is missing or unusable');
  let allow: Cidr[] = [];
  if (env.SERVICE_CHANNEL_ALLOW) {
    try {
      allow = parseAllowList(env.SERVICE_CHANNEL_ALLOW);
    } catch (error) {
      throw new Error(`SERVICE_CHANNEL_ALLOW: ${(error as Error).message}`);
    }
  }
  return renderNginxSite({ ...PRODUCTION_SITE, knock, edge, allow });
}
