import type { Argv, CommandModule } from 'yargs';
import { answerFlags, answerOptions, numberOption, refuseSecretFlags, withGlobals, type AnswerArgs, type GlobalOptions } from './shared.js';

export interface RestoreArgs extends GlobalOptions, AnswerArgs {
  archive: string;
  check?: boolean;
  diff?: boolean;
  lockTimeout?: string;
  maxEntryMib?: string;
  maxTotalMib?: string;
}

/**
 * Restore takes the answers (to replace what a reset invalidated, like the mesh auth key),
 * the check modes and the lock wait; the channel and its allow list come from the backup.
 */
export const restoreCommand: CommandModule<object, RestoreArgs> = {
  command: 'restore <archive>',
  describe: 'Put a --reset-clean backup back, then re-run the install to bring the deployment up',
  builder: (y) =>
    (answerOptions(withGlobals(y)) as unknown as Argv<RestoreArgs>)
      .positional('archive', {
        type: 'string',
        describe: 'The backup: /tmp/openclaw-backup-*.tar.gz (written by --reset-clean and uninstall) or a copy in /var/backups/service-deploy (kept across reboots; also `backup`)',
        demandOption: true,
      })
      .option('check', { type: 'boolean', describe: 'Show what would be put back; write nothing', group: 'Mode:' })
      .option('diff', { type: 'boolean', describe: 'Like --check', group: 'Mode:' })
      .option('lock-timeout', numberOption('Seconds to wait for the apt/dpkg lock (default 300)', { group: 'Mode:' }))
      .option('max-entry-mib', numberOption('Largest file accepted from the archive, in MiB (default 512)', { group: 'Archive:' }))
      .option('max-total-mib', numberOption('Most data accepted from the archive in total, in MiB (default 4096)', { group: 'Archive:' }))
      .example('$0 restore /tmp/openclaw-backup-20261122-101500.tar.gz --check', 'What would be put back (path, size, mode, new/same/differs); writes nothing')
      .example('SERVICE_MESH_AUTH_KEY=... $0 restore /tmp/openclaw-backup-20261122-101500.tar.gz', 'Restore; the mesh needs a fresh auth key after a reset') as Argv<RestoreArgs>,
  handler: async (argv) => {
    refuseSecretFlags(argv);
    await (await import('../install/restore.js')).runRestore({
      answers: answerFlags(argv),
      json: argv.json,
      verbose: argv.verbose,
      check: argv.check,
      diff: argv.diff,
      lockTimeout: argv.lockTimeout,
      archive: argv.archive,
      maxEntryMib: argv.maxEntryMib,
      maxTotalMib: argv.maxTotalMib,
    });
  },
};
