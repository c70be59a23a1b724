import fs from 'node:fs';
import { DeployError, UsageError } from '../errors.js';
import { fileErrorText, numberTextProblem, shown } from '../input.js';
import { Logger } from '../host/log.js';
import { Redactor } from '../host/redact.js';
import { loadProfile, type ServiceProfile } from '../profile.js';
import { DEFAULT_TIMEOUT_MS, PartnerClient, resolveApiKey, type RetryPolicy } from './client.js';
import { OnboardFlowError } from './errors.js';
import { emitJson, errorBody, partnerAddMemberOutput, partnerMapAgentOutput, partnerOnboardFlowOutput, partnerOnboardOutput } from '../json/index.js';
import {
  MapAgentBodySchema,
  OnboardBodySchema,
  TeamMemberBodySchema,
  agentTargetSchema,
  mergeOnboardExtras,
  onboardFlowSchema,
  splitOnboardExtras,
  type ExtraField,
  parseInput,
  parseMemberSpec,
  type OnboardFlowInput,
  type OnboardResponse,
} from './schemas.js';

/**
 * The four `service-deploy partner` subcommands as functions of their options and a
 * context. The context is the only door to the outside (environment, files, stdin,
 * output, fetch, clock), so tests pass fakes and the yargs handlers pass the process.
 */

export interface PartnerContext {
  env: NodeJS.ProcessEnv;
  readFile(path: string): string;
  readStdin(): Promise<string>;
  /** Data: the customer id, or JSON with --json. */
  stdout(line: string): void;
  /** Everything for humans: progress, warnings, resume commands. */
  stderr(line: string): void;
  fetch?: typeof globalThis.fetch;
  sleep?: (ms: number) => Promise<void>;
  retry?: Partial<RetryPolicy>;
}

export interface CommonOptions {
  json?: boolean;
  verbose?: boolean;
  body?: string;
  apiKeyFile?: string;
  /** Seconds, as typed (text) or a number. */
  timeout?: string | number;
  /** Declared only to refuse it with a clear message: a key in argv is visible to every user. */
  apiKey?: unknown;
}

export interface CustomerFlags {
  email?: string;
  firstName?: string;
  lastName?: string;
  phone?: string;
  company?: string;
  quick?: boolean;
  portalAccess?: boolean;
}

export interface AgentFlags {
  provider?: string;
  agentId?: string;
  profitMultiplier?: number;
}

export type OnboardOptions = CommonOptions & CustomerFlags;
export type MapAgentOptions = CommonOptions & AgentFlags & { customerId?: string };
export type AddMemberOptions = CommonOptions & { customerId?: string; email?: string; name?: string; role?: string };
export type OnboardFlowOptions = CommonOptions & CustomerFlags & AgentFlags & { member?: string[] };

/** Body field -> the flag that sets it, so validation messages name what the user typed. */
const CUSTOMER_FLAG_OF: Record<string, string> = {
  'basic.email': '--email',
  'basic.firstName': '--first-name',
  'basic.lastName': '--last-name',
  'basic.businessPhone': '--phone',
  'business.companyName': '--company',
};
const MAP_FLAG_OF = { customerId: '--customer-id', profitMultiplier: '--profit-multiplier', provider: '--provider', agentId: '--agent-id' };
const MEMBER_FLAG_OF = { email: '--email', name: '--name', role: '--role' };

export async function runOnboard(options: OnboardOptions, context: PartnerContext): Promise<void> {
  let body;
  if (options.body) {
    const { known, extras } = splitOnboardExtras(await readJsonBody(options, context, customerFlagNames), 'onboarding body');
    body = mergeOnboardExtras(parseInput(OnboardBodySchema, known, 'onboarding body'), extras);
    noticeExtras(context, extras);
  } else body = parseInput(OnboardBodySchema, customerBodyFromFlags(options), 'onboarding body', CUSTOMER_FLAG_OF);
  const { client } = prepare(options, context);
  const customer = await client.onboard(body);
  if (options.json) emitJson(partnerOnboardOutput, { ok: true, customerId: customer.id, customer }, context.stdout);
  else {
    context.stderr(`Onboarded ${body.basic.email} as customer ${customer.id}`);
    context.stdout(customer.id);
  }
}

export async function runMapAgent(options: MapAgentOptions, context: PartnerContext): Promise<void> {
  const profile = loadProfile(context.env);
  const json = options.body ? await readJsonBody(options, context, ['customerId', 'profitMultiplier']) : undefined;
  // The agent (flags) and the body (flags or --body) are checked together: every bad field in one message.
  const [target, body] = allOrRefuse([
    () => parseInput(agentTargetSchema(profile.voiceProviders), { provider: options.provider, agentId: options.agentId }, 'agent', MAP_FLAG_OF),
    () =>
      options.body
        ? parseInput(MapAgentBodySchema, json, 'agent mapping body')
        : parseInput(MapAgentBodySchema, { customerId: options.customerId, profitMultiplier: options.profitMultiplier }, 'agent mapping body', MAP_FLAG_OF),
  ] as const);
  const { client } = prepare(options, context, profile);
  const answer = await client.mapAgent(target.provider, target.agentId, body);
  context.stderr(`Mapped ${target.provider} agent ${target.agentId} to customer ${body.customerId} (profit multiplier ${body.profitMultiplier})`);
  if (options.json) {
    const mapped = { provider: target.provider, agentId: target.agentId, customerId: body.customerId, profitMultiplier: body.profitMultiplier };
    emitJson(partnerMapAgentOutput, { ok: true, ...mapped, response: answer ?? null }, context.stdout);
  }
}

export async function runAddMember(options: AddMemberOptions, context: PartnerContext): Promise<void> {
  const json = options.body ? await readJsonBody(options, context, ['email', 'name', 'role']) : undefined;
  const [{ customerId }, body] = allOrRefuse([
    () => parseInput(MapAgentBodySchema.pick({ customerId: true }), { customerId: options.customerId }, 'customer id', MAP_FLAG_OF),
    () =>
      options.body
        ? parseInput(TeamMemberBodySchema, json, 'team member body')
        : parseInput(TeamMemberBodySchema, { email: options.email, name: options.name, role: options.role }, 'team member body', MEMBER_FLAG_OF),
  ] as const);
  const { client } = prepare(options, context);
  const answer = await client.addTeamMember(customerId, body);
  context.stderr(`Added ${body.email} (${body.role}) to customer ${customerId}`);
  if (options.json) emitJson(partnerAddMemberOutput, { ok: true, customerId, email: body.email, role: body.role, response: answer ?? null }, context.stdout);
}

export async function runOnboardFlow(options: OnboardFlowOptions, context: PartnerContext): Promise<void> {
  const profile = loadProfile(context.env);
  const schema = onboardFlowSchema(profile.voiceProviders);
  let input: OnboardFlowInput;
  if (options.body) {
    const raw = await readJsonBody(options, context, [...customerFlagNames, 'provider', 'agentId', 'profitMultiplier', 'member']);
    const record = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
    const { known, extras } = splitOnboardExtras(record?.customer, 'onboard-flow body', 'customer.');
    input = parseInput(schema, record ? { ...record, customer: known } : raw, 'onboard-flow body');
    input = { ...input, customer: mergeOnboardExtras(input.customer, extras) };
    noticeExtras(context, extras.map((extra) => ({ ...extra, path: `customer.${extra.path}` })));
  } else
    input = parseInput(schema, flowInputFromFlags(options), 'onboard-flow input', {
        ...Object.fromEntries(Object.entries(CUSTOMER_FLAG_OF).map(([field, flag]) => [`customer.${field}`, flag])),
        ...Object.fromEntries(Object.entries(MAP_FLAG_OF).map(([field, flag]) => [`agent.${field}`, flag])),
      });
  const { client } = prepare(options, context, profile);
  try {
    const result = await onboardFlow(client, input, (line) => context.stderr(line), resumeFlagsOf(options));
    if (options.json) emitJson(partnerOnboardFlowOutput, { ok: true, ...result, members: result.members.map((m) => ({ ...m, response: m.response ?? null })) }, context.stdout);
    else context.stdout(result.customerId);
  } catch (error) {
    if (options.json) {
      emitJson(partnerOnboardFlowOutput, error instanceof OnboardFlowError ? error.toJSON() : onboardFailureJson(error), context.stdout);
    }
    throw error;
  }
}

export interface OnboardFlowResult {
  customerId: string;
  customer: OnboardResponse;
  agentMapping: unknown;
  members: Array<{ email: string; role: string; response: unknown }>;
}

/**
 * SPEC 4.3's recommended order: onboard, map the agent to the returned id, add members.
 * Onboarding happens exactly once; if a later step fails, the error carries the customer
 * id and the commands that finish the remaining steps.
 */
export async function onboardFlow(
  client: PartnerClient,
  input: OnboardFlowInput,
  report: (line: string) => void,
  resumeFlags: readonly string[] = [],
): Promise<OnboardFlowResult> {
  const customer = await step(report, 'onboard', () => client.onboard(input.customer), (answer) => `customer ${answer.id} created for ${input.customer.basic.email}`);
  const customerId = customer.id;
  const completed = ['onboard'];
  const { provider, agentId, profitMultiplier } = input.agent;
  const remaining = [
    {
      name: 'map-agent',
      run: () => client.mapAgent(provider, agentId, { customerId, profitMultiplier }),
      done: `${provider} agent ${agentId} mapped to ${customerId} (profit multiplier ${profitMultiplier})`,
      resume: shellCommand(['partner', 'map-agent', '--provider', provider, '--agent-id', agentId, '--customer-id', customerId, '--profit-multiplier', String(profitMultiplier), ...resumeFlags]),
    },
    ...input.members.map((member) => ({
      name: `add-member ${member.email}`,
      run: () => client.addTeamMember(customerId, member),
      done: `added as ${member.role}`,
      resume: shellCommand(['partner', 'add-member', '--customer-id', customerId, '--email', member.email, '--name', member.name, '--role', member.role, ...resumeFlags]),
    })),
  ];
  const answers: unknown[] = [];
  for (const [index, pending] of remaining.entries()) {
    try {
      answers.push(await step(report, pending.name, pending.run, () => pending.done));
      completed.push(pending.name);
    } catch (error) {
      if (!(error instanceof DeployError)) throw error;
      throw new OnboardFlowError(customerId, pending.name, completed, remaining.slice(index).map((later) => later.resume), error);
    }
  }
  return {
    customerId,
    customer,
    agentMapping: answers[0],
    members: input.members.map((member, index) => ({ email: member.email, role: member.role, response: answers[index + 1] })),
  };
}

async function step<T>(report: (line: string) => void, name: string, run: () => Promise<T>, done: (answer: T) => string): Promise<T> {
  try {
    const answer = await run();
    report(`✓ ${name}: ${done(answer)}`);
    return answer;
  } catch (error) {
    report(`✗ ${name}: failed`);
    throw error;
  }
}

/** SPEC 2.1: other optional fields exist but are not shown; they are sent, and said so. */
function noticeExtras(context: PartnerContext, extras: readonly ExtraField[]): void {
  if (extras.length === 0) return;
  context.stderr(
    `note: sending field(s) the spec does not show, as given: ${extras.map((extra) => extra.path).join(', ')} (the partner API decides what they mean)`,
  );
}

/** --json answer when onboarding itself failed: no customer id, nothing to resume. */
function onboardFailureJson(error: unknown) {
  return { ok: false, customerId: null, completedSteps: [], failedStep: 'onboard', resumeCommands: [], error: errorBody(error) };
}

/** Flags that must reappear in a resume command for it to run the same way (never the key itself). */
function resumeFlagsOf(options: CommonOptions): string[] {
  return [
    ...(options.apiKeyFile !== undefined ? ['--api-key-file', options.apiKeyFile] : []),
    ...(options.timeout !== undefined ? ['--timeout', String(options.timeout)] : []),
  ];
}

/** `service-deploy <args>`, each argument quoted for a POSIX shell only when it needs it. */
export function shellCommand(args: readonly string[]): string {
  return ['service-deploy', ...args.map(shellQuote)].join(' ');
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

const customerFlagNames = ['email', 'firstName', 'lastName', 'phone', 'company', 'quick', 'portalAccess'];

function customerBodyFromFlags(flags: CustomerFlags) {
  return {
    basic: { email: flags.email, firstName: flags.firstName, lastName: flags.lastName, businessPhone: flags.phone },
    business: { companyName: flags.company },
    ...(flags.quick !== undefined && { isQuickOnboarding: flags.quick }),
    ...(flags.portalAccess !== undefined && { allowPortalAccess: flags.portalAccess }),
  };
}

function flowInputFromFlags(options: OnboardFlowOptions) {
  return {
    customer: customerBodyFromFlags(options),
    agent: { provider: options.provider, agentId: options.agentId, profitMultiplier: options.profitMultiplier },
    members: (options.member ?? []).map(parseMemberSpec),
  };
}

/**
 * Runs every check and returns their results, or throws one UsageError naming every
 * problem they found (a user fixes all of them in one go, not one per run).
 */
function allOrRefuse<T extends readonly (() => unknown)[]>(checks: T): { -readonly [K in keyof T]: ReturnType<T[K]> } {
  const results: unknown[] = [];
  const problems: string[] = [];
  for (const check of checks) {
    try {
      results.push(check());
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length > 0) throw new UsageError(problems.join('; '), 'fix the fields named above; nothing was sent to the partner API');
  return results as { -readonly [K in keyof T]: ReturnType<T[K]> };
}

/** Reads --body (a file, or `-` for stdin) as JSON; body flags alongside it would be ambiguous. */
async function readJsonBody(options: CommonOptions, context: PartnerContext, bodyFlags: readonly string[]): Promise<unknown> {
  const source = options.body!;
  const clashing = bodyFlags.filter((name) => (options as Record<string, unknown>)[name] !== undefined);
  if (clashing.length > 0) {
    throw new UsageError(
      `--body cannot be combined with ${clashing.map((name) => `--${kebab(name)}`).join(', ')}`,
      'put every field in the JSON body, or pass them all as flags',
    );
  }
  let text: string;
  try {
    text = source === '-' ? await context.readStdin() : context.readFile(source);
  } catch (error) {
    throw new UsageError(`cannot read --body ${source}: ${fileErrorText(error)}`, 'pass a readable JSON file, or - for stdin; nothing was sent to the partner API');
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--body ${source === '-' ? 'from stdin' : source} is not valid JSON: ${(error as Error).message}`, 'fix the JSON; nothing was sent');
  }
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

/** The longest --timeout: ten minutes for one answer. */
const MAX_TIMEOUT_S = 600;

/** Options -> a client with a redacting logger. The key is resolved only after the input is valid. */
function prepare(options: CommonOptions, context: PartnerContext, profile: ServiceProfile = loadProfile(context.env)) {
  if (options.apiKey !== undefined) {
    throw new UsageError(
      '--api-key is not accepted: process arguments are visible to every user on this machine',
      'set SERVICE_PARTNER_API_KEY, or pass --api-key-file <path> (mode 0600)',
    );
  }
  const timeoutProblem = options.timeout === undefined ? undefined : numberTextProblem(String(options.timeout), { min: 0, max: MAX_TIMEOUT_S, aboveMin: true });
  if (timeoutProblem) throw new UsageError(`--timeout ${shown(String(options.timeout))}: ${timeoutProblem} (seconds)`, 'e.g. --timeout 30; nothing was sent to the partner API');
  const timeoutMs = options.timeout === undefined ? DEFAULT_TIMEOUT_MS : Number(options.timeout) * 1000;
  const redactor = new Redactor();
  const log = new Logger(redactor, { verbose: options.verbose, stderr: (line) => context.stderr(line) });
  const apiKey = resolveApiKey({
    env: context.env,
    apiKeyFile: options.apiKeyFile,
    portalApiKeysPage: profile.portalApiKeysPage,
    readFile: context.readFile,
    warn: (line) => log.warn(line),
  });
  redactor.add(apiKey);
  const baseUrl = apiBaseUrl(profile.partnerApiUrl, (line) => context.stderr(line));
  const client = new PartnerClient({
    baseUrl,
    apiKey,
    portalApiKeysPage: profile.portalApiKeysPage,
    timeoutMs,
    retry: context.retry,
    fetch: context.fetch,
    sleep: context.sleep,
    log,
  });
  log.debug(`partner API ${baseUrl}, timeout ${timeoutMs / 1000} s`);
  return { client, profile };
}

/**
 * The API base URL: the client adds `/api/v1/mcp/...` itself. A base that already ends
 * in `/api/v1` is normalised (with a note), never sent as `/api/v1/api/v1/...` whose 404
 * would read as a missing agent; one ending in another part of the API path is refused.
 */
export function apiBaseUrl(configured: string, note: (line: string) => void): string {
  const url = new URL(configured);
  const path = url.pathname.replace(/\/+$/, '');
  if (/\/api\/v1$/i.test(path)) {
    const base = `${url.origin}${path.replace(/\/api\/v1$/i, '')}`;
    note(`note: SERVICE_PARTNER_API_URL ${configured} ends in /api/v1; using ${base} (the client adds /api/v1/mcp/... itself)`);
    return base;
  }
  if (/\/api(\/v\d+)?(\/mcp)?$/i.test(path)) {
    throw new UsageError(
      `SERVICE_PARTNER_API_URL ${configured} ends in a part of the API path (${path.match(/\/api(\/v\d+)?(\/mcp)?$/i)![0]})`,
      `set it to the API's base URL, without /api/v1 (e.g. ${url.origin}); nothing was sent`,
    );
  }
  return configured;
}

/** The context of a real run: this process's environment, files, stdin and streams. */
export async function processContext(): Promise<PartnerContext> {
  return {
    env: process.env,
    readFile: (path) => fs.readFileSync(path, 'utf8'),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
  };
}
