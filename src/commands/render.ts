import type { Argv, CommandModule } from 'yargs';
import { RENDER_TARGETS, type RenderTarget } from '../install/render-targets.js';
import { answerFlags, answerOptions, refuseSecretFlags, withGlobals, type AnswerArgs, type GlobalOptions } from './shared.js';

export interface RenderArgs extends GlobalOptions, AnswerArgs {
  file: RenderTarget;
  channel?: boolean;
  channelAllow?: string;
  showSecrets?: boolean;
}

/** Only what changes the rendered text: the answers, the channel mode and its allow list. */
export const renderCommand: CommandModule<object, RenderArgs> = {
  command: 'render <file>',
  describe: 'Print a file exactly as the install would write it (secrets masked unless --show-secrets)',
  builder: (y) =>
    (answerOptions(withGlobals(y)) as unknown as Argv<RenderArgs>)
      .positional('file', { choices: RENDER_TARGETS, describe: 'Which file', demandOption: true })
      .option('channel', { type: 'boolean', describe: 'Render as with the channel endpoint (install --channel or --catalog)' })
      .option('channel-allow', { type: 'string', describe: 'The allow list the channel files would carry: CIDR[,CIDR] or any' })
      .option('show-secrets', { type: 'boolean', describe: 'Print secrets instead of ****' })
      .example('$0 render runtime-config', 'The openclaw.json this server would get')
      .example('$0 render nginx > site.conf', 'The channel endpoint nginx site')
      .example('$0 render firewall --channel-allow 203.0.113.0/24', "The channel port's nftables table") as Argv<RenderArgs>,
  handler: async (argv) => {
    refuseSecretFlags(argv);
    const render = await import('../install/render.js');
    await render.runRender({
      file: argv.file,
      answers: answerFlags(argv),
      verbose: argv.verbose,
      json: argv.json,
      channel: argv.channel,
      showSecrets: argv.showSecrets,
      channelAllow: render.renderAllowList(argv.channelAllow),
    });
  },
};
