import type { CommandModule } from 'yargs';
import { withGlobals, type GlobalOptions } from './shared.js';

export const statusCommand: CommandModule<object, GlobalOptions> = {
  command: 'status',
  describe: 'Show what is deployed on this server: customer, model, component versions, services',
  builder: (y) => withGlobals(y).example('$0 status --json', 'The same as data, for scripts'),
  handler: async (argv) => (await import('../ops/status.js')).runStatus(argv),
};
