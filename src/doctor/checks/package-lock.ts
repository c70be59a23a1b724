import { describeHolders, packageLockHolders } from '../../steps/package-lock.js';
import { pass, warn, type Check } from '../types.js';

export const packageLockCheck: Check = {
  id: 'package-lock',
  title: 'Package manager lock',
  async run({ host }) {
    const holders = await packageLockHolders(host);
    if (holders.length === 0) return pass('free');
    return warn(`the package manager is locked: ${describeHolders(holders)}`, 'an install waits up to 5 minutes for it; usually cloud-init or unattended-upgrades finishing. If it never ends, look at the process', {
      commands: [`ps -o pid,etime,cmd -p ${[...new Set(holders.map((h) => h.pid))].join(',')}`],
    });
  },
};
