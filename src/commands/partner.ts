import type { Argv, CommandModule } from 'yargs';
import { UsageError } from '../errors.js';
import type { PartnerContext } from '../partner/flow.js';
import { voiceProviders } from '../profile-values.js';
import { numberOption, withGlobals } from './shared.js';

/**
 * `service-deploy partner <subcommand>`: the partner API (docs/partner-api.md).
 * Only flag declarations live here; the client, zod and the phone metadata are
 * imported when a subcommand actually runs, so they cost nothing at cold start.
 */

const EPILOG = `The API key comes from SERVICE_PARTNER_API_KEY or --api-key-file, never from a flag.
The API base URL comes from the service profile, or SERVICE_PARTNER_API_URL.
Exit codes: 10 e-mail exists, 11 API key missing/invalid/refused, 12 agent not imported,
13 team-member limit, 14 try later (5xx, network, 429 rate limit), 15 outcome unknown (timeout,
or a success answer without a customer id: check before retrying); 1 any other refusal (the
API's message shown as sent); 2 bad input (nothing sent).`;

function withConnection<T>(yargs: Argv<T>) {
  return withGlobals(yargs)
    .option('body', { type: 'string', nargs: 1, describe: 'Read the request body as JSON from this file (- for stdin) instead of flags' })
    .option('api-key-file', { type: 'string', describe: 'File holding the partner API key (default: $SERVICE_PARTNER_API_KEY)' })
    .option('timeout', numberOption('Seconds to wait for each answer, at most 600 (default 30)'))
    // Declared only so that it is refused with a reason instead of "unknown argument".
    .option('api-key', { type: 'string', hidden: true })
    .epilog(EPILOG);
}

/**
 * --help groups the flags by whether a request needs them: yargs' own `demandOption`
 * cannot say "unless the body comes from --body", and the check is the zod schema's,
 * which names every missing field at once (src/partner/schemas.ts).
 */
const REQUIRED = 'Required:';
const REQUIRED_BODY = 'Required unless the body comes from --body:';

function withCustomerFlags<T>(yargs: Argv<T>) {
  return yargs
    .option('email', { type: 'string', describe: "Customer's e-mail (unique; becomes the portal login)", group: REQUIRED_BODY })
    .option('first-name', { type: 'string', describe: "Contact's first name", group: REQUIRED_BODY })
    .option('last-name', { type: 'string', describe: "Contact's last name", group: REQUIRED_BODY })
    .option('phone', { type: 'string', describe: 'Business phone, international format (+14155552671)', group: REQUIRED_BODY })
    .option('company', { type: 'string', describe: 'Company name', group: REQUIRED_BODY })
    .option('quick', { type: 'boolean', describe: 'Quick onboarding: skip the extended intake questions' })
    .option('portal-access', { type: 'boolean', describe: 'Send the portal invite e-mail with credentials (default: no invite)' });
}

/** `pathGroup`: the agent is in the path (always a flag), but in onboard-flow's --body it is in `agent`. */
function withAgentFlags<T>(yargs: Argv<T>, pathGroup = REQUIRED) {
  return yargs
    .option('provider', { type: 'string', describe: `Voice platform: ${voiceProviders().join(' or ')} (the service profile's two)`, group: pathGroup })
    .option('agent-id', { type: 'string', describe: "The platform's agent id (already imported into the account)", group: pathGroup })
    .option('profit-multiplier', { type: 'number', describe: 'Multiplier over base call cost billed to the customer, e.g. 1.5', group: REQUIRED_BODY });
}

/** Runs `name` from src/partner/flow.ts with this process as its context. */
async function run(name: 'runOnboard' | 'runMapAgent' | 'runAddMember' | 'runOnboardFlow', argv: unknown): Promise<void> {
  const flow = await import('../partner/flow.js');
  const context: PartnerContext = await flow.processContext();
  await (flow[name] as (options: unknown, context: PartnerContext) => Promise<void>)(argv, context);
}

const onboard: CommandModule = {
  command: 'onboard',
  describe: 'Create a customer; prints its id (--json: the whole answer)',
  builder: (y) => withCustomerFlags(withConnection(y)),
  handler: (argv) => run('runOnboard', argv),
};

const mapAgent: CommandModule = {
  command: 'map-agent',
  describe: "Map an imported voice agent to a customer, with the customer's profit multiplier",
  builder: (y) => withAgentFlags(withConnection(y)).option('customer-id', { type: 'string', describe: 'The id onboarding returned', group: REQUIRED_BODY }),
  handler: (argv) => run('runMapAgent', argv),
};

const addMember: CommandModule = {
  command: 'add-member',
  describe: "Add a portal user to a customer's team",
  builder: (y) =>
    withConnection(y)
      .option('customer-id', { type: 'string', describe: 'The id onboarding returned', group: REQUIRED })
      .option('email', { type: 'string', describe: "Member's e-mail (their portal login)", group: REQUIRED_BODY })
      .option('name', { type: 'string', describe: 'Display name', group: REQUIRED_BODY })
      .option('role', { type: 'string', describe: 'Role (default: member; the API decides which others exist)' }),
  handler: (argv) => run('runAddMember', argv),
};

const onboardFlow: CommandModule = {
  command: 'onboard-flow',
  describe: 'Onboard, map the agent to the new customer, add members; prints how to resume if a step fails',
  builder: (y) =>
    withAgentFlags(withCustomerFlags(withConnection(y)), REQUIRED_BODY)
      // --member repeats (the CLI otherwise keeps only the last value of a repeated flag).
      .parserConfiguration({ 'duplicate-arguments-array': true })
      .option('member', {
      type: 'string',
      array: true,
      nargs: 1,
      describe: 'Team member as email:name[:role]; repeat for more',
    }),
  handler: (argv) => run('runOnboardFlow', argv),
};

export const partnerCommand: CommandModule = {
  command: 'partner',
  describe: 'Partner API: onboard customers, map voice agents, add team members',
  builder: (y) =>
    y
      .command(onboard)
      .command(mapAgent)
      .command(addMember)
      .command(onboardFlow)
      .demandCommand(1, 'name a partner subcommand: onboard, map-agent, add-member or onboard-flow'),
  // demandCommand refuses a missing or unknown subcommand before this could run.
  handler: () => {
    throw new UsageError('name a partner subcommand', 'see `service-deploy partner --help`');
  },
};
