import { LAYOUT } from '../../layout.js';
import { planFile } from '../../pipeline/files.js';
import { nginxHardeningDropIn, nginxIsOurs } from '../../steps/nginx-hardening.js';
import { fail, lazyFix, pass, skip, type Check } from '../types.js';

export const nginxHardeningFix = lazyFix(
  { id: 'nginx-hardening', title: "disable Debian's default site and write nginx's sandbox drop-in (the nginx the install brought); nginx -t, restart nginx", phase: 'services' },
  async () => (await import('../fixes.js')).hardenNginx,
);

/**
 * Issue 27 item 5: the nginx the install brought runs sandboxed (its drop-in, exposure
 * under 5 instead of 9.6). nginx that was on the server before the install keeps the
 * customer's unit.
 */
export const nginxHardeningCheck: Check = {
  id: 'nginx-hardening',
  title: 'nginx sandbox drop-in (the nginx the install brought)',
  fixes: [nginxHardeningFix],
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.exec.which('nginx'))) return skip('nginx is not installed');
    if (!(await nginxIsOurs(host))) return skip('nginx was on this server before the install: its unit is left as it is');
    const drift = await planFile(host, nginxHardeningDropIn());
    if (!drift) return pass(`${LAYOUT.nginxHardeningDropIn} in place`);
    const missing = !(await host.files.exists(LAYOUT.nginxHardeningDropIn));
    return fail(
      `${missing ? `${LAYOUT.nginxHardeningDropIn} is missing` : drift.summary}: nginx runs ${missing ? 'without its sandbox (exposure 9.6)' : 'with a sandbox the install did not write'}`,
      'write the drop-in again, reload the units and restart nginx (after nginx -t)',
      { commands: ['service-deploy doctor --fix'], action: nginxHardeningFix },
    );
  },
};
