import type { Argv, CommandModule } from 'yargs';
import { withGlobals, type GlobalOptions } from './shared.js';

export interface DevicesArgs extends GlobalOptions {
  id?: string;
}

export const devicesCommand: CommandModule<object, GlobalOptions> = {
  command: 'devices',
  describe: 'Device pairing for the gateway UI: list | approve <id> | remove <device-id>',
  builder: (y) =>
    withGlobals(y)
      .command<DevicesArgs>({
        command: 'list',
        describe: 'List pending device approvals, then paired devices with their ids',
        handler: async (argv) => (await import('../ops/devices.js')).listDevices({ json: Boolean(argv.json), verbose: Boolean(argv.verbose) }),
      })
      .command<DevicesArgs>({
        command: 'approve <id>',
        describe: 'Approve a pending device by its request id (from `devices list`)',
        builder: (a) => a.positional('id', { type: 'string', demandOption: true }) as Argv<DevicesArgs>,
        handler: async (argv) => (await import('../ops/devices.js')).approveDevice(String(argv.id), { json: Boolean(argv.json), verbose: Boolean(argv.verbose) }),
      })
      .command<DevicesArgs>({
        command: 'remove <id>',
        describe: 'Revoke a paired device by its device id (from `devices list`): its device token stops working',
        builder: (a) => a.positional('id', { type: 'string', demandOption: true, describe: 'the device id, or its first 8 or more characters' }) as Argv<DevicesArgs>,
        handler: async (argv) => (await import('../ops/devices.js')).removeDevice(String(argv.id), { json: Boolean(argv.json), verbose: Boolean(argv.verbose) }),
      })
      .demandCommand(1, 'give a subcommand: list, approve <id> or remove <device-id>')
      .example('$0 devices list', 'Pending approvals with their request ids, paired devices with their device ids')
      .example('$0 devices approve 3f2a...', 'Approve one device')
      .example('$0 devices remove 64ad26a6', 'Revoke a paired device (a lost laptop, someone who left)') as Argv<GlobalOptions>,
  handler: () => {},
};
