import type { Argv, CommandModule } from 'yargs';
import { UsageError } from '../errors.js';
import { numberOption, withGlobals, type GlobalOptions } from './shared.js';

export interface GatewayArgs extends GlobalOptions {
  action?: string;
  lines?: string;
}

const ACTIONS = ['status', 'restart', 'logs'] as const;

export const gatewayCommand: CommandModule<object, GatewayArgs> = {
  command: 'gateway <action>',
  describe: "Operate the agent's gateway: status | restart | logs (root's user service, XDG_RUNTIME_DIR set for you)",
  builder: (y) =>
    withGlobals(y)
      .positional('action', { type: 'string', choices: ACTIONS, describe: 'status, restart or logs' })
      .option('lines', numberOption('logs: how many lines, 1 to 100000 (default 200)', { alias: 'n' }))
      .example('$0 gateway status', 'Service state and the runtime\'s own gateway status')
      .example('$0 gateway restart', 'daemon-reload, restart, wait for /healthz')
      .example('$0 gateway logs -n 50', 'The last 50 lines of the gateway journal') as Argv<GatewayArgs>,
  handler: async (argv) => {
    const { runGatewayAction } = await import('../ops/gateway.js');
    if (!argv.action || !(ACTIONS as readonly string[]).includes(argv.action)) throw new UsageError(`unknown action ${argv.action}`, `use one of: ${ACTIONS.join(', ')}`);
    await runGatewayAction(argv.action as (typeof ACTIONS)[number], { json: Boolean(argv.json), verbose: Boolean(argv.verbose), lines: argv.lines });
  },
};
