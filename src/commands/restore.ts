import type { Argv, CommandModule } from 'yargs';
import { installOptions, installRequest, type InstallArgs } from './install.js';

export interface RestoreArgs extends InstallArgs {
  archive: string;
}

export const restoreCommand: CommandModule<object, RestoreArgs> = {
  command: 'restore <archive>',
  describe: 'Put a --reset-clean backup back, then re-run the install to bring the deployment up',
  builder: (y) =>
    (installOptions(y) as Argv<InstallArgs>)
      .positional('archive', { type: 'string', describe: 'The /tmp/openclaw-backup-*.tar.gz file', demandOption: true })
      .example('SERVICE_MESH_AUTH_KEY=... $0 restore /tmp/openclaw-backup-20261122-101500.tar.gz', 'Restore; the mesh needs a fresh auth key after a reset') as Argv<RestoreArgs>,
  handler: async (argv) => (await import('../install/restore.js')).runRestore({ ...installRequest(argv), archive: argv.archive }),
};
