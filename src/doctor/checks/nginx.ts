import { CHANNEL_PORT, LAYOUT } from '../../layout.js';
import { siteFromEnv } from '../../steps/channel.js';
import { NOT_CONFIGURED } from './channel-env.js';
import { fail, lazyFix, pass, skip, type Check } from '../types.js';

export const nginxSiteFix = lazyFix(
  { id: 'nginx-site', title: 'write the channel nginx site from channel.env, nginx -t, restart nginx', phase: 'services' },
  async () => (await import('../fixes.js')).writeNginxSite,
);
export const nginxRestartFix = lazyFix(
  { id: 'nginx-restart', title: 'restart nginx (after nginx -t)', phase: 'services' },
  async () => (await import('../fixes.js')).restartNginx,
);

export const nginxCheck: Check = {
  id: 'nginx',
  title: `nginx config valid and listening on ${CHANNEL_PORT}`,
  fixes: [nginxSiteFix, nginxRestartFix],
  async run(ctx) {
    const { host } = ctx;
    if (!(await ctx.channelConfigured())) return skip(NOT_CONFIGURED);
    if (!(await host.files.exists(LAYOUT.nginxSite))) {
      return fail(`${LAYOUT.nginxSite} is missing: the channel endpoint is not served`, 'write the site again from channel.env and restart nginx', {
        commands: ['service-deploy doctor --fix'],
        action: nginxSiteFix,
      });
    }
    const [test, listeners] = await Promise.all([
      ctx.nginxTest(),
      ctx.listeners(),
    ]);
    const output = host.redactor.redact(`${test.stdout}${test.stderr}`.trim());
    if (test.exitCode !== 0) {
      const emerg = output.split('\n').filter((l) => /\[(emerg|alert|crit|error)\]/.test(l)).join(' ') || output.split('\n').slice(-3).join(' ');
      // Writing our site again helps only when our site is what differs.
      const site = siteFromEnv((await ctx.channelEnv()) ?? {});
      const ours = site !== undefined && (await host.files.read(LAYOUT.nginxSite)) === site;
      if (ours) {
        return fail(`nginx -t fails: ${emerg}`, `our site is as the install writes it: the fault is in what it loads (the channel certificate and key, see tls-cert) or another nginx file`, {
          commands: ['nginx -t', 'service-deploy install --channel'],
        });
      }
      return fail(`nginx -t fails: ${emerg}`, 'write our site again from channel.env, check it with nginx -t and restart nginx', {
        commands: ['service-deploy doctor --fix', 'nginx -t', 'systemctl restart nginx'],
        action: nginxSiteFix,
      });
    }
    const listening = listeners.filter((l) => l.port === CHANNEL_PORT);
    if (listening.length === 0) {
      return fail(`nothing listens on port ${CHANNEL_PORT}: the portal cannot reach the channel endpoint`, 'restart nginx (its config tests fine); if it stays down see `journalctl -u nginx`', {
        commands: ['systemctl restart nginx'],
        action: nginxRestartFix,
      });
    }
    return pass(`nginx -t ok; ${listening.map((l) => `${l.address}:${l.port}${l.process ? ` (${l.process})` : ''}`).join(', ')}`);
  },
};
