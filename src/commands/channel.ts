import type { Argv, CommandModule } from 'yargs';
import { UsageError } from '../errors.js';
import { withGlobals, type GlobalOptions } from './shared.js';

export interface ChannelArgs extends GlobalOptions {
  action?: string;
  showSecrets?: boolean;
}

/** `service-deploy channel show`: the portal handoff (URL, certificate pin, token and knock). */
export const channelCommand: CommandModule<object, ChannelArgs> = {
  command: 'channel <action>',
  describe: "The channel endpoint's handoff to the portal: show (URL, certificate SHA-256 pin; token and knock with --show-secrets)",
  builder: (y) =>
    withGlobals(y)
      .positional('action', { type: 'string', choices: ['show'], describe: 'show' })
      .option('show-secrets', { type: 'boolean', describe: 'Also print the bearer token and the knock (secrets: hand them to the portal only)' })
      .example('$0 channel show', 'URL and certificate pin')
      .example('$0 channel show --json --show-secrets', 'Everything the portal needs, as one JSON') as Argv<ChannelArgs>,
  handler: async (argv) => {
    if (argv.action !== 'show') throw new UsageError(`unknown action ${argv.action}`, 'use: channel show');
    await (await import('../ops/channel.js')).runChannelShow(argv);
  },
};
