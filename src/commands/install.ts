import type { CommandModule } from 'yargs';
import { withGlobals } from './shared.js';

export const installCommand: CommandModule = {
  command: ['install', '$0'],
  describe: 'Install or update the agent on this server (the default command); a re-run converges it',
  builder: (y) => withGlobals(y),
  handler: async (argv) => (await import('../install/run.js')).runInstall(argv),
};
