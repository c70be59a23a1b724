import { CHANNEL_PORT, LAYOUT } from '../../layout.js';
import { fail, pass, skip, warn, type Check } from '../types.js';
import { nginxRestartFix, nginxSiteFix } from './nginx.js';

export const NGINX_ERROR_LOG = '/var/log/nginx/error.log';
const ZONE_MISTAKE = /^\s*limit_conn\s+zone=/m;
const ZERO_SIZE = 'zero size shared memory zone';
/** Only the end of the error log is read: recent enough, and fast on a big log. */
const TAIL_BYTES = 256 * 1024;

/** Spec 7: `limit_conn zone=service_cn 3` (wrong) vs `limit_conn service_cn 3`. */
export const nginxLimitConnCheck: Check = {
  id: 'nginx-limit-conn',
  title: 'nginx limit_conn directive (no zone= prefix)',
  async run(ctx) {
    const { host } = ctx;
    const site = await host.files.read(LAYOUT.nginxSite);
    if (site === undefined) return (await ctx.channelConfigured()) ? skip(`${LAYOUT.nginxSite} is missing (see the nginx check)`) : skip('no nginx site for the channel on this server');
    if (ZONE_MISTAKE.test(site)) {
      return fail(`${LAYOUT.nginxSite} has \`limit_conn zone=...\`: nginx reads "zone=service_cn" as the zone name, fails with "${ZERO_SIZE}" and does not listen on ${CHANNEL_PORT}`, 'the correct form is `limit_conn service_cn 3;`: write the site again, validate it and restart nginx', {
        commands: ['service-deploy doctor --fix', 'nginx -t', 'systemctl restart nginx'],
        action: nginxSiteFix,
      });
    }
    const bytes = await host.files.readBytes(NGINX_ERROR_LOG);
    const tail = bytes ? bytes.subarray(Math.max(0, bytes.length - TAIL_BYTES)).toString('utf8') : '';
    if (!tail.includes(ZERO_SIZE)) return pass('limit_conn service_cn 3; no zero-size zone errors in the log');
    const listening = (await ctx.listeners()).some((l) => l.port === CHANNEL_PORT);
    if (listening) return pass(`the site is right; ${NGINX_ERROR_LOG} still shows an earlier "${ZERO_SIZE}"`);
    return warn(`${NGINX_ERROR_LOG} has "${ZERO_SIZE}" and nothing listens on ${CHANNEL_PORT}; the current site is right`, 'validate the config and restart nginx', {
      commands: ['nginx -t', 'systemctl restart nginx'],
      action: nginxRestartFix,
    });
  },
};
