import { renderTemplate } from '../render/template.js';
import { CHANNEL_PORT, GATEWAY_PORT, LAYOUT } from '../layout.js';
import { SECRET_PATTERN } from './protocol.js';

/** The values of the nginx site; production defaults from PRODUCTION_SITE. */
export interface NginxSiteValues {
  /** nginx `listen` address: "0.0.0.0:18790" in production, a loopback port in tests. */
  listen: string;
  /** host:port of the gateway. */
  upstream: string;
  cert: string;
  key: string;
  /** The knock secret (SERVICE_CHANNEL_KNOCK); pass a placeholder to print the site without it. */
  knock: string;
}

export const PRODUCTION_SITE: Omit<NginxSiteValues, 'knock'> = {
  listen: `0.0.0.0:${CHANNEL_PORT}`,
  upstream: `127.0.0.1:${GATEWAY_PORT}`,
  cert: LAYOUT.tlsCert,
  key: LAYOUT.tlsKey,
};

const SAFE_VALUE = /^[A-Za-z0-9._:/[\]-]+$/;

/**
 * The nginx site (templates/service-channel.nginx.conf): zones and the server block,
 * for nginx's http context. Pure. Values are checked so nothing can break out of
 * the nginx string or directive they land in.
 */
export function renderNginxSite(values: NginxSiteValues): string {
  if (!SECRET_PATTERN.test(values.knock)) throw new Error('internal: the knock must match SECRET_PATTERN (no quotes, spaces, $ or ;)');
  for (const key of ['listen', 'upstream', 'cert', 'key'] as const) {
    if (!SAFE_VALUE.test(values[key])) throw new Error(`internal: nginx site value ${key} has characters nginx would misread: ${values[key]}`);
  }
  return renderTemplate('service-channel.nginx.conf', { ...values });
}
