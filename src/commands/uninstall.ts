import type { Argv, CommandModule } from 'yargs';
import type { UninstallRequest } from '../install/uninstall.js';
import { withGlobals, type GlobalOptions } from './shared.js';

interface UninstallArgs extends GlobalOptions, UninstallRequest {}

export const uninstallCommand: CommandModule<object, UninstallArgs> = {
  command: 'uninstall',
  describe: 'Back up, then remove everything the install added (units, cron, nginx site, apt sources and keys, packages it added, binary, state, logs); lists what it removed and what it left',
  builder: (y) =>
    withGlobals(y)
      .option('yes', { alias: 'y', type: 'boolean', describe: 'Confirm without a prompt' })
      .option('check', { type: 'boolean', describe: 'Show what would be backed up, removed, purged and left; change nothing' })
      .option('non-interactive', { type: 'boolean', describe: 'Never prompt (then --yes is needed)' })
      .example('$0 uninstall --check', 'What would go and what would stay')
      .example('$0 uninstall --yes', 'Back up to /tmp and /var/backups/service-deploy, then remove everything') as Argv<UninstallArgs>,
  handler: async (argv) =>
    (await import('../install/uninstall.js')).runUninstall({ yes: argv.yes, check: argv.check, json: argv.json, verbose: argv.verbose, nonInteractive: argv.nonInteractive }),
};
