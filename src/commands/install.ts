import type { Argv, CommandModule } from 'yargs';
import type { InstallRequest } from '../install/request.js';
import { answerFlags, answerOptions, numberOption, refuseSecretFlags, withGlobals, type AnswerArgs, type GlobalOptions } from './shared.js';

export interface InstallArgs extends GlobalOptions, AnswerArgs {
  nonInteractive?: boolean;
  yes?: boolean;
  catalog?: boolean;
  channel?: boolean;
  check?: boolean;
  diff?: boolean;
  resetClean?: boolean;
  rotateChannelSecrets?: boolean;
  lockTimeout?: string;
  serial?: boolean;
  channelAllow?: string;
  channelHost?: string[];
}

/** The install's request from its flags: the answers apart, every mode flag as given. */
export function installRequest(argv: InstallArgs): InstallRequest {
  refuseSecretFlags(argv);
  return {
    answers: { ...answerFlags(argv), ...(argv.channelHost ? { channelHost: argv.channelHost } : {}) },
    json: argv.json,
    verbose: argv.verbose,
    nonInteractive: argv.nonInteractive,
    yes: argv.yes,
    catalog: argv.catalog,
    channel: argv.channel,
    check: argv.check,
    diff: argv.diff,
    resetClean: argv.resetClean,
    rotateChannelSecrets: argv.rotateChannelSecrets,
    lockTimeout: argv.lockTimeout,
    serial: argv.serial,
    channelAllow: argv.channelAllow,
  };
}

/** Flags that may repeat and add up; any other repeated flag keeps the value given last. */
const REPEATABLE = new Set(['channel-host', 'channelHost', '_']);

function lastValueWins(argv: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(argv)) if (Array.isArray(value) && !REPEATABLE.has(key)) argv[key] = value.at(-1);
}

export function installOptions<T>(y: Argv<T>) {
  return answerOptions(withGlobals(y))
    .option('non-interactive', { type: 'boolean', describe: 'Never prompt; fail listing every missing answer', group: 'Mode:' })
    .option('yes', { alias: 'y', type: 'boolean', describe: 'Answer yes to confirmations (--reset-clean)', group: 'Mode:' })
    .option('catalog', { type: 'boolean', describe: "The portal's one-click deploy: non-interactive, channel endpoint, JSON result", group: 'Mode:' })
    .option('channel', { type: 'boolean', describe: 'Also configure the hardened channel endpoint (nginx on 18790 + plugin)', group: 'Mode:' })
    .option('check', { type: 'boolean', describe: 'Show what would change; write nothing (enforced: nothing can be written)', group: 'Mode:' })
    .option('diff', { type: 'boolean', describe: 'Like --check, with unified diffs of the file changes (secrets masked)', group: 'Mode:' })
    .option('reset-clean', { type: 'boolean', describe: 'Back up to /tmp/openclaw-backup-*.tar.gz (a copy in /var/backups/service-deploy), then remove runtime, mesh client, config and workspace', group: 'Mode:' })
    .option('rotate-channel-secrets', { type: 'boolean', describe: 'Generate a new channel token and knock', group: 'Mode:' })
    .option('channel-allow', { type: 'string', describe: "Only these addresses may reach the channel port 18790: CIDR[,CIDR] (the portal's egress), or 'any'; kept on re-runs", group: 'Mode:' })
    .option('channel-host', {
      type: 'string',
      array: true,
      nargs: 1,
      describe: "A name or address the portal reaches the channel by (a public address behind NAT, your domain): in its certificate and first in `channel show`; repeat for more, 'none' clears; kept on re-runs",
      group: 'Mode:',
    })
    // --channel-host repeats; every other flag given twice keeps its last value (cli.ts).
    .parserConfiguration({ 'duplicate-arguments-array': true })
    .middleware(lastValueWins, true)
    .option('lock-timeout', numberOption('Seconds to wait for the apt/dpkg lock (default 300)', { group: 'Mode:' }))
    .option('serial', { type: 'boolean', describe: 'Run the steps one at a time in their listed order (slower; for debugging and the install bench). Default: independent steps at once', group: 'Mode:' })
    .example('$0 install', 'Interactive install or update (prompts for the six answers)')
    .example('SERVICE_API_KEY=... SERVICE_MESH_AUTH_KEY=... SERVICE_MCP_TOKEN=... $0 install --customer-name "Acme" --non-interactive', 'Scripted install')
    .example('curl -fsSL https://<setup_url>/install.sh | sudo bash -s -- --answers /root/answers.env', 'The one-liner: answers in a 0600 file survive sudo')
    .example('$0 install --model new-model-id --non-interactive', 'Re-run: change only the model; everything else is kept')
    .example('$0 install --channel --channel-host agent.acme-dental.example', "The channel behind NAT or on the customer's domain: the name the portal uses goes into the certificate")
    .example('$0 install --check --diff', 'Review what a run would change')
    .example('$0 install --reset-clean', 'Back up, then remove the deployment');
}

export const installCommand: CommandModule<object, InstallArgs> = {
  command: ['install', '$0'],
  describe: 'Install or update the agent on this server (the default command); a re-run converges it',
  builder: (y) => installOptions(y) as Argv<InstallArgs>,
  handler: async (argv) => (await import('../install/install.js')).runInstall(installRequest(argv)),
};
