import type { Argv, CommandModule } from 'yargs';
import { RENDER_TARGETS, type RenderTarget } from '../install/render-targets.js';
import { installOptions, installRequest, type InstallArgs } from './install.js';

export interface RenderArgs extends InstallArgs {
  file: RenderTarget;
  showSecrets?: boolean;
}

export const renderCommand: CommandModule<object, RenderArgs> = {
  command: 'render <file>',
  describe: 'Print a file exactly as the install would write it (secrets masked unless --show-secrets)',
  builder: (y) =>
    (installOptions(y) as Argv<InstallArgs>)
      .positional('file', { choices: RENDER_TARGETS, describe: 'Which file', demandOption: true })
      .option('show-secrets', { type: 'boolean', describe: 'Print secrets instead of ****' })
      .example('$0 render runtime-config', 'The openclaw.json this server would get')
      .example('$0 render nginx > site.conf', 'The channel endpoint nginx site')
      .example('$0 render firewall --channel-allow 203.0.113.0/24', "The channel port's nftables table") as Argv<RenderArgs>,
  handler: async (argv) => {
    const { answers, verbose, catalog, channel, channelAllow } = installRequest(argv);
    const render = await import('../install/render.js');
    await render.runRender({ file: argv.file, answers, verbose, channel: catalog || channel, showSecrets: argv.showSecrets, channelAllow: render.renderAllowList(channelAllow) });
  },
};
