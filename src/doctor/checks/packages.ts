import { missingPackages } from '../../host/apt.js';
import { readOs } from '../../host/os.js';
import { browserFor } from '../../steps/browser.js';
import { fail, pass, type Check } from '../types.js';

/** The system packages the install puts in (nginx, openssl, cron, ...) and the browser, from dpkg (one call). */
export const packagesCheck: Check = {
  id: 'packages',
  title: 'System packages and the browser installed',
  async run({ host, components }) {
    const os = await readOs(host.files);
    const browser = browserFor(os, components);
    // The install skips the browser where none is known for the OS, or Chrome on arm64.
    const browserSkipped = !browser || (browser.aptRepoUrl !== undefined && process.arch !== 'x64');
    const wanted = [...components.systemPackages, ...(browserSkipped ? [] : [browser.package])];
    const missing = await missingPackages(host, wanted);
    if (missing.length === 0) return pass(`${wanted.length} packages installed`);
    return fail(`not installed (dpkg): ${missing.join(', ')}`, 'run the install again: it installs them with apt', { commands: ['service-deploy install'] });
  },
};
