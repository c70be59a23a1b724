import { LOCKS, type Step } from '../pipeline/step.js';
import { aptInstall, missingPackages } from '../host/apt.js';
import { recordAddedPackages } from '../pipeline/packages.js';

export const systemPackagesStep: Step = {
  id: 'system-packages',
  title: 'System packages',
  needs: ['preflight', 'package-lock', LOCKS.apt],
  async check({ host, components }) {
    const missing = await missingPackages(host, components.systemPackages);
    return missing.length === 0 ? { changes: [] } : { changes: [{ target: 'apt', summary: `install ${missing.join(' ')}` }], data: missing };
  },
  async apply({ host, options, progress }, plan) {
    await recordAddedPackages(host, await aptInstall(host, plan.data as string[], options.lockTimeoutMs / 1000, progress));
  },
  async verify({ host, components }) {
    const missing = await missingPackages(host, components.systemPackages);
    if (missing.length > 0) throw new Error(`still missing after apt-get install: ${missing.join(' ')}`);
  },
};
