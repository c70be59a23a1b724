import type { Argv, CommandModule } from 'yargs';
import { numberOption, withGlobals, type GlobalOptions } from './shared.js';

export interface BackupArgs extends GlobalOptions {
  check?: boolean;
  every?: string;
  keep?: string;
}

export const backupCommand: CommandModule<object, BackupArgs> = {
  command: 'backup',
  describe: 'Write a verified backup now (the gateway pauses while its databases are copied; nothing is removed), or schedule one',
  builder: (y) =>
    withGlobals(y)
      .option('check', { type: 'boolean', describe: 'Show what would be backed up (or scheduled); change nothing' })
      .option('every', { type: 'string', describe: 'Schedule a backup every PERIOD (1h to 30d: 24h, 7d) as a systemd timer; off removes the schedule' })
      .option('keep', numberOption('Keep only the newest N backups in /var/backups/service-deploy (default 7 for a schedule)'))
      .example('$0 backup', 'A verified backup into /var/backups/service-deploy (0600 in a 0700 folder)')
      .example('$0 backup --every 24h --keep 7', 'A nightly backup, the newest 7 kept; doctor reports the age of the last one')
      .example('$0 backup --every off', 'Remove the schedule (the backups stay)') as Argv<BackupArgs>,
  handler: async (argv) => (await import('../install/backups.js')).runBackupCommand({ json: argv.json, verbose: argv.verbose, check: argv.check, every: argv.every, keep: argv.keep }),
};
