import { DEFAULT_SITE_LINK, defaultSite, nginxIsOurs } from '../../steps/nginx-hardening.js';
import { pass, skip, warn, type Check } from '../types.js';
import { nginxHardeningFix } from './nginx-hardening.js';

const DISABLE = [`rm ${DEFAULT_SITE_LINK}`, 'nginx -t', 'systemctl reload nginx'];

/**
 * Issue 27 item 4: nothing of the deployment listens on port 80 (spec: no public exposure).
 * The install disables Debian's default site when it brought nginx; where nginx was on
 * the server before, the site is the customer's and is left alone: doctor notes it.
 */
export const nginxDefaultSiteCheck: Check = {
  id: 'nginx-default-site',
  title: "nginx: Debian's default site (port 80) not enabled",
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.exec.which('nginx'))) return skip('nginx is not installed');
    const [site, ours] = await Promise.all([defaultSite(host), nginxIsOurs(host)]);
    if (site.state === 'disabled') return pass(`${DEFAULT_SITE_LINK} is not enabled`);
    if (site.state === 'changed') return pass(`a default site of the server's own is enabled (${site.why}): left as it is`);
    if (ours) {
      return warn(`Debian's default site is enabled again: nginx answers "Welcome to nginx!" on port 80, which the deployment does not need`, 'disable it again (doctor --fix; the install does it too)', {
        commands: ['service-deploy doctor --fix'],
        action: nginxHardeningFix,
      });
    }
    return warn(
      `Debian's default site is enabled: nginx answers "Welcome to nginx!" on port 80. nginx was on this server before the install, so it is left as it is`,
      'if nothing on this server needs it, disable it',
      { commands: DISABLE },
    );
  },
};
