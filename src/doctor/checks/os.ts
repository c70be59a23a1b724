import { isSupportedOs, readOs, supportedArch } from '../../host/os.js';
import { fail, pass, warn, type Check } from '../types.js';

export const osCheck: Check = {
  id: 'os',
  title: 'Operating system and architecture',
  async run({ host }) {
    const os = await readOs(host.files);
    const arch = supportedArch(process.arch);
    const problems: string[] = [];
    if (!isSupportedOs(os)) problems.push(`${os.prettyName || 'this OS'} is not supported`);
    if (!arch) problems.push(`CPU architecture ${process.arch} is not supported`);
    // The install accepts another OS when told to; doctor then warns instead of failing.
    if (problems.length > 0 && arch && host.env.SERVICE_ALLOW_UNSUPPORTED_OS === '1') {
      return warn(`${problems.join('; ')} (allowed by SERVICE_ALLOW_UNSUPPORTED_OS=1)`, 'supported: Ubuntu 22.04 or 24.04');
    }
    if (problems.length > 0) {
      return fail(problems.join('; '), 'run the agent on Ubuntu 22.04 or 24.04, on x86_64 or aarch64 (a new server, then the install)');
    }
    return pass(`${os.prettyName} on ${arch}`);
  },
};
