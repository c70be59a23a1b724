import { fail, pass, type Check } from '../types.js';

/** The system packages the install puts in (nginx, openssl, cron, ...) and the browser, from dpkg (one call). */
export const packagesCheck: Check = {
  id: 'packages',
  title: 'System packages and the browser installed',
  async run(ctx) {
    const { wanted, missing } = await ctx.packages();
    if (missing.length === 0) return pass(`${wanted.length} packages installed`);
    return fail(`not installed (dpkg): ${missing.join(', ')}`, 'run the install again: it installs them with apt', { commands: ['service-deploy install'] });
  },
};
