import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadComponents, type Components } from '../components.js';
import type { Host } from '../host/index.js';
import { loadProfile, type ServiceProfile } from '../profile.js';
import { answersFileProblem, parseAnswersFile, type FileField } from './file.js';
import { readStoredAnswers } from './stored.js';
import {
  ANSWER_FIELDS,
  ANSWER_SOURCES,
  SECRET_FIELDS,
  defaultMeshHostname,
  slugify,
  validateAnswer,
  type AnswerField,
  type Answers,
  type StoredAnswers,
} from './schema.js';
import { UsageError } from '../errors.js';
import { fileErrorText, parseChannelHosts } from '../input.js';

export interface AnswerFlags {
  customerName?: string;
  model?: string;
  meshHostname?: string;
  apiKeyFile?: string;
  meshAuthKeyFile?: string;
  mcpTokenFile?: string;
  answers?: string;
  /** --channel-host, as given (each may hold a comma-separated list; `none` clears). */
  channelHost?: string[];
}

/** Asks one question; injected so tests need no terminal. */
export interface Prompter {
  input(question: { message: string; default?: string; validate: (v: string) => true | string }): Promise<string>;
  secret(question: { message: string; keepCurrent: boolean; validate: (v: string) => true | string }): Promise<string>;
}

export interface AnswerInputs {
  flags: AnswerFlags;
  env: NodeJS.ProcessEnv;
  current?: StoredAnswers;
  defaultModelId: string;
  /**
   * Reads a file the user named (relative to the working directory, never the sandbox).
   * `private`: a file of secrets, refused (UsageError) unless it is the caller's and 0600.
   */
  readUserFile(path: string, options?: { private?: boolean }): Promise<string>;
  prompter?: Prompter;
  /** Whether the mesh auth key is needed (false: only files are rendered, nothing joins the mesh). */
  needMeshAuthKey?: boolean;
  /**
   * Ask only what has no value at all (check and diff modes: review what a run would
   * change): a stored answer or a default is taken without a question.
   */
  askOnlyMissing?: boolean;
}

const PROMPTS: Record<AnswerField, string> = {
  customerName: 'Customer name',
  apiKey: 'Service API key (pkt_...)',
  modelId: 'Model ID',
  meshAuthKey: 'Mesh network auth key',
  meshHostname: 'Mesh network hostname',
  mcpToken: 'Service MCP token',
};

/**
 * Resolves the six answers. Precedence, lowest first: built-in defaults < the current
 * deployment < answers file < environment < flags (for secrets: their files). Prompts
 * ask only what nothing else answered, in the spec's order; without a prompter every
 * missing answer is listed at once. Any bad value is a UsageError naming the field.
 */
export async function resolveAnswers(inputs: AnswerInputs): Promise<Answers> {
  const given = await collectGiven(inputs);
  const problems: string[] = [];
  const values: Partial<Record<AnswerField, string>> = {};

  for (const field of ANSWER_FIELDS) {
    const candidate = given[field];
    if (candidate === undefined) continue;
    const checked = validateAnswer(field, candidate.value);
    // The same secret in two fields: the one whose own form it fails is the wrong one
    // (a pkt_ key passes as the API key, not as the mesh key); both when it fits both.
    const same = sameSecretAs(field, candidate.value, (other) => given[other]?.value);
    const misplaced = same !== undefined && (!checked.ok || validateAnswer(same, candidate.value).ok === checked.ok);
    if (same && misplaced) problems.push(`${ANSWER_SOURCES[field].label} (from ${candidate.source}): is the ${ANSWER_SOURCES[same].label} (the value given for it, from ${given[same]!.source}): ${sameSecretHint(field)}`);
    else if (checked.ok) values[field] = checked.value;
    else problems.push(`${ANSWER_SOURCES[field].label} (from ${candidate.source}): ${checked.message}`);
  }
  const channelHosts = resolveChannelHosts(given.channelHosts, inputs.current, problems);
  if (problems.length > 0) throw new UsageError(`invalid answers:\n  - ${problems.join('\n  - ')}`, 'fix the values above and run again; nothing was changed');

  const current = inputs.current;
  const meshKeyOptional = current !== undefined || inputs.needMeshAuthKey === false;
  const defaults = (field: AnswerField): string | undefined => {
    if (field === 'meshAuthKey') return undefined;
    if (current) return current[field];
    if (field === 'modelId') return inputs.defaultModelId;
    if (field === 'meshHostname' && values.customerName) return defaultMeshHostname(values.customerName);
    return undefined;
  };

  for (const field of ANSWER_FIELDS) {
    if (values[field] !== undefined) continue;
    const fallback = defaults(field);
    const settled = fallback !== undefined || (field === 'meshAuthKey' && meshKeyOptional);
    if (inputs.prompter && !(inputs.askOnlyMissing && settled)) {
      values[field] = await ask(inputs.prompter, field, fallback);
    } else if (fallback !== undefined) {
      values[field] = fallback;
    }
  }

  // The mesh auth key is needed only to log the mesh client in: a re-run can do without.
  // The mesh hostname defaults from the customer name: missing only when a given name has no slug.
  const missing = ANSWER_FIELDS.filter(
    (f) => values[f] === undefined && !(f === 'meshAuthKey' && meshKeyOptional) && !(f === 'meshHostname' && values.customerName === undefined),
  );
  if (missing.length > 0) {
    throw new UsageError(
      `missing answers (no terminal to ask):\n  - ${missing.map((f) => `${ANSWER_SOURCES[f].label}: give ${ANSWER_SOURCES[f].sources}${f === 'meshHostname' ? ` (${noSlugNote(values.customerName!)})` : ''}`).join('\n  - ')}`,
      inputs.env.SUDO_USER
        ? 'sudo drops exported variables: put the answers in a 0600 file and pass --answers FILE (docs/quickstart.md); nothing was changed'
        : 'or pass --answers FILE with these fields; nothing was changed',
    );
  }
  const customerName = values.customerName!;
  return {
    customerName,
    // A name without Latin letters: the hostname the operator chose stands for it.
    customerSlug: slugify(customerName) || values.meshHostname!.replace(/^openclaw-/, ''),
    apiKey: values.apiKey!,
    modelId: values.modelId!,
    meshAuthKey: values.meshAuthKey,
    meshHostname: values.meshHostname!,
    mcpToken: values.mcpToken!,
    ...(channelHosts.length > 0 ? { channelHosts } : {}),
  };

  async function ask(prompter: Prompter, field: AnswerField, fallback: string | undefined): Promise<string | undefined> {
    const validate = (v: string) => {
      const r = validateAnswer(field, v);
      return r.ok ? true : r.message;
    };
    if (SECRET_FIELDS.has(field)) {
      // Enter keeps the current secret; for the mesh key on a re-run, the current login.
      const keep = fallback !== undefined || (field === 'meshAuthKey' && meshKeyOptional);
      const note = field === 'meshAuthKey' && fallback === undefined ? 'Enter keeps the current mesh login' : 'Enter keeps the current one';
      const answer = await prompter.secret({
        message: `${PROMPTS[field]}${keep ? ` (${note})` : ''}`,
        keepCurrent: keep,
        validate: (v) => {
          if (keep && v === '') return true;
          const same = sameSecretAs(field, v, (other) => values[other]);
          return same ? `this is the ${ANSWER_SOURCES[same].label} typed above: ${sameSecretHint(field)}` : validate(v);
        },
      });
      if (keep && answer === '') return fallback;
      return cleaned(field, answer);
    }
    // A name with no slug has no default hostname: say why it is asked without one.
    const why = field === 'meshHostname' && fallback === undefined && values.customerName !== undefined ? ` (${noSlugNote(values.customerName)})` : '';
    return cleaned(field, await prompter.input({ message: `${PROMPTS[field]}${why}`, default: fallback, validate }));
  }
}

/**
 * Which other secret answer `value` is, when it is one of them: a key pasted into the
 * wrong field (the MCP token as the mesh auth key) is refused naming what it is.
 */
function sameSecretAs(field: AnswerField, value: string, valueOf: (field: AnswerField) => string | undefined): AnswerField | undefined {
  if (!SECRET_FIELDS.has(field) || value === '') return undefined;
  return [...SECRET_FIELDS].find((other) => other !== field && valueOf(other) === value);
}

function sameSecretHint(field: AnswerField): string {
  return `each secret is a different one; the ${ANSWER_SOURCES[field].label} comes from ${SECRET_ORIGINS[field]}`;
}

const SECRET_ORIGINS: Partial<Record<AnswerField, string>> = {
  apiKey: 'Partner Portal > Settings > API Keys (pkt_..., AI Gateway scope)',
  meshAuthKey: 'the mesh network admin console, Settings > Keys (tskey-auth-...)',
  mcpToken: 'Partner Portal > Settings > MCP Tokens (one per customer)',
};

/**
 * The channel's public names: the given list (flag > environment > answers file; `none`
 * clears it), else the stored one, else none. A bad name joins the other problems.
 */
function resolveChannelHosts(given: Given | undefined, current: StoredAnswers | undefined, problems: string[]): string[] {
  if (!given) return current?.channelHosts ?? [];
  try {
    return parseChannelHosts(given.value);
  } catch (error) {
    problems.push(`channel host (from ${given.source}): ${(error as Error).message}`);
    return [];
  }
}

/** Why a customer name gives no default mesh hostname, and what to do. */
function noSlugNote(customerName: string): string {
  return `the customer name ${JSON.stringify(customerName)} has no Latin letter or digit to make the default openclaw-<customer-slug> from: choose one, e.g. openclaw-tokyo-dental`;
}

/** The prompt already validated the answer; this returns its normalised form. */
function cleaned(field: AnswerField, answer: string): string {
  const result = validateAnswer(field, answer);
  if (!result.ok) throw new UsageError(`${ANSWER_SOURCES[field].label}: ${result.message}`);
  return result.value;
}

interface Given {
  value: string;
  source: string;
}

async function collectGiven(inputs: AnswerInputs): Promise<Partial<Record<FileField, Given>>> {
  const { flags, env } = inputs;
  const given: Partial<Record<FileField, Given>> = {};
  const set = (field: FileField, value: string | undefined, source: string) => {
    if (value !== undefined) given[field] = { value, source };
  };

  // --answers wins over SERVICE_ANSWERS_FILE (which survives sudo on its command line:
  // `curl ... | sudo SERVICE_ANSWERS_FILE=/root/answers.env bash`).
  const file = flags.answers ?? (env.SERVICE_ANSWERS_FILE || undefined);
  if (file) {
    const flag = flags.answers ? '--answers' : 'SERVICE_ANSWERS_FILE';
    const source = flags.answers ? '--answers file' : 'SERVICE_ANSWERS_FILE';
    const text = await readOrFail(inputs, file, flag, { private: true });
    for (const [field, value] of Object.entries(await parseAnswersFile(text, `${flag} ${file}`))) set(field as FileField, value, source);
  }

  set('customerName', env.SERVICE_CUSTOMER_NAME || undefined, 'SERVICE_CUSTOMER_NAME');
  set('modelId', env.SERVICE_MODEL || undefined, 'SERVICE_MODEL');
  set('meshHostname', env.SERVICE_MESH_HOSTNAME || undefined, 'SERVICE_MESH_HOSTNAME');
  set('apiKey', env.SERVICE_API_KEY ?? undefined, 'SERVICE_API_KEY');
  set('meshAuthKey', env.SERVICE_MESH_AUTH_KEY ?? undefined, 'SERVICE_MESH_AUTH_KEY');
  set('mcpToken', env.SERVICE_MCP_TOKEN ?? undefined, 'SERVICE_MCP_TOKEN');
  set('channelHosts', env.SERVICE_CHANNEL_HOSTS || undefined, 'SERVICE_CHANNEL_HOSTS');

  set('customerName', flags.customerName, '--customer-name');
  set('modelId', flags.model, '--model');
  set('meshHostname', flags.meshHostname, '--mesh-hostname');
  if (flags.channelHost?.length) set('channelHosts', flags.channelHost.join(','), '--channel-host');
  if (flags.apiKeyFile) set('apiKey', firstLine(await readOrFail(inputs, flags.apiKeyFile, '--api-key-file')), '--api-key-file');
  if (flags.meshAuthKeyFile) set('meshAuthKey', firstLine(await readOrFail(inputs, flags.meshAuthKeyFile, '--mesh-auth-key-file')), '--mesh-auth-key-file');
  if (flags.mcpTokenFile) set('mcpToken', firstLine(await readOrFail(inputs, flags.mcpTokenFile, '--mcp-token-file')), '--mcp-token-file');
  return given;
}

async function readOrFail(inputs: AnswerInputs, path: string, flag: string, options?: { private?: boolean }): Promise<string> {
  try {
    return await inputs.readUserFile(path, options);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`${flag} ${path}: ${error.message}`, error.hint);
    throw new UsageError(`${flag} ${path}: ${fileErrorText(error)}`, `give the path of a readable file`);
  }
}

/** Files a user names hold a few answers: at most this many bytes. */
export const MAX_USER_FILE_BYTES = 65_536;

/**
 * Reads a file the user named: a regular file (not a FIFO or /dev/zero, which would
 * never end) of at most MAX_USER_FILE_BYTES, valid UTF-8.
 */
async function readBoundedFile(p: string, options: { private?: boolean } = {}): Promise<string> {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the stat below refuses it.
  const handle = await fs.open(p, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'not a regular file' });
    const problem = options.private ? answersFileProblem(st, process.geteuid?.() ?? st.uid) : undefined;
    if (problem) throw new UsageError(`refused: ${problem}`, `chown root:root ${p} && chmod 600 ${p}, then run again; nothing was changed`);
    if (st.size > MAX_USER_FILE_BYTES) throw Object.assign(new Error('too large'), { code: `larger than ${MAX_USER_FILE_BYTES / 1024} KiB` });
    const bytes = await handle.readFile();
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw Object.assign(new Error('not UTF-8'), { code: 'not valid UTF-8 text' });
    }
  } finally {
    await handle.close();
  }
}

function firstLine(text: string): string {
  return text.split(/\r?\n/)[0]!.trim();
}

/** What every command that acts on a deployment starts from: recorded state, profile, pins, answers. */
export interface DeploymentInputs {
  current?: StoredAnswers;
  profile: ServiceProfile;
  components: Components;
  answers: Answers;
}

export async function resolveDeploymentInputs(
  host: Host,
  flags: AnswerFlags,
  /** `current`: the stored answers to start from instead of the server's (restore: the backup's). */
  options: { prompter?: Prompter; needMeshAuthKey?: boolean; current?: StoredAnswers; askOnlyMissing?: boolean } = {},
): Promise<DeploymentInputs> {
  const current = options.current ?? (await readStoredAnswers(host));
  const profile = loadProfile(host.env, current?.serviceOverrides);
  const components = loadComponents(host.env);
  const answers = await resolveAnswers({
    flags,
    env: host.env,
    current,
    defaultModelId: profile.defaultModelId,
    readUserFile: (p, options) => readBoundedFile(path.resolve(p), options),
    prompter: options.prompter,
    needMeshAuthKey: options.needMeshAuthKey,
    askOnlyMissing: options.askOnlyMissing,
  });
  host.redactor.add(answers.apiKey, answers.meshAuthKey, answers.mcpToken);
  return { current, profile, components, answers };
}
