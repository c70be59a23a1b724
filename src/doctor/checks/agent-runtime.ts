import { GLOBAL_MODULES, installedPackageVersion } from '../../runtime/openclaw.js';
import { fail, pass, type Check } from '../types.js';

export const agentRuntimeCheck: Check = {
  id: 'agent-runtime',
  title: 'Agent runtime installed at the pinned version',
  async run({ host, components }) {
    const { package: name, version: want } = components.openclaw;
    const have = await installedPackageVersion(host, GLOBAL_MODULES, name);
    if (have === want) return pass(`OpenClaw ${have}`);
    return fail(
      have ? `OpenClaw ${have} is installed, this service-deploy pins ${want}` : 'OpenClaw is not installed',
      `run \`service-deploy install\`: it installs OpenClaw ${want} and restarts the gateway`,
      { commands: ['service-deploy install'] },
    );
  },
};
