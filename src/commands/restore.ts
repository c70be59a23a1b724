import type { Argv, CommandModule } from 'yargs';
import { installOptions, installRequest, type InstallArgs } from './install.js';

export interface RestoreArgs extends InstallArgs {
  archive: string;
  maxEntryMib?: string;
  maxTotalMib?: string;
}

export const restoreCommand: CommandModule<object, RestoreArgs> = {
  command: 'restore <archive>',
  describe: 'Put a --reset-clean backup back, then re-run the install to bring the deployment up',
  builder: (y) =>
    (installOptions(y) as Argv<InstallArgs>)
      .positional('archive', { type: 'string', describe: 'The /tmp/openclaw-backup-*.tar.gz file', demandOption: true })
      .option('max-entry-mib', { type: 'string', describe: 'Largest file accepted from the archive, in MiB (default 512)', group: 'Archive:' })
      .option('max-total-mib', { type: 'string', describe: 'Most data accepted from the archive in total, in MiB (default 4096)', group: 'Archive:' })
      .example('$0 restore /tmp/openclaw-backup-20261122-101500.tar.gz --check', 'What would be put back (path, size, mode, new/same/differs); writes nothing')
      .example('SERVICE_MESH_AUTH_KEY=... $0 restore /tmp/openclaw-backup-20261122-101500.tar.gz', 'Restore; the mesh needs a fresh auth key after a reset') as Argv<RestoreArgs>,
  handler: async (argv) => (await import('../install/restore.js')).runRestore({ ...installRequest(argv), archive: argv.archive, maxEntryMib: argv.maxEntryMib, maxTotalMib: argv.maxTotalMib }),
};
