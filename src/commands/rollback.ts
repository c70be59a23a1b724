import type { Argv, CommandModule } from 'yargs';
import { withGlobals, type GlobalOptions } from './shared.js';

export interface RollbackArgs extends GlobalOptions {
  yes?: boolean;
  check?: boolean;
  nonInteractive?: boolean;
}

export const rollbackCommand: CommandModule<object, RollbackArgs> = {
  command: 'rollback',
  describe: 'Go back to the OpenClaw package (or Node) and the state from before the last upgrade (the pre-upgrade backup)',
  builder: (y) =>
    withGlobals(y)
      .option('yes', { alias: 'y', type: 'boolean', describe: 'Confirm without a prompt (what changed since the upgrade is lost)' })
      .option('check', { type: 'boolean', describe: 'Show what would be rolled back; change nothing' })
      .option('non-interactive', { type: 'boolean', describe: 'Never prompt' })
      .example('$0 rollback --check', 'Which versions and which backup a rollback would bring back')
      .example('$0 rollback --yes', 'Roll back now') as Argv<RollbackArgs>,
  handler: async (argv) => {
    const [{ createHost, readOnlyHost }, { runRollback }] = await Promise.all([import('../host/index.js'), import('../install/upgrade.js')]);
    const host = createHost({ verbose: argv.verbose, quiet: argv.json });
    await runRollback(argv.check ? readOnlyHost(host) : host, { json: argv.json, verbose: argv.verbose, yes: argv.yes, check: argv.check, nonInteractive: argv.nonInteractive });
  },
};
