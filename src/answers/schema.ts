import * as z from '../zod.js';
import { environmentProblems } from '../environment.js';
import { UsageError } from '../errors.js';
import { MAX_MODEL_ID_LENGTH, MODEL_ID, parseChannelHosts, textProblem } from '../input.js';
import { PROFILE_ENV } from '../profile.js';

/** The six answers of the install (spec 1.2), in prompt order. */
export const ANSWER_FIELDS = ['customerName', 'apiKey', 'modelId', 'meshAuthKey', 'meshHostname', 'mcpToken'] as const;
export type AnswerField = (typeof ANSWER_FIELDS)[number];
export const SECRET_FIELDS = new Set<AnswerField>(['apiKey', 'meshAuthKey', 'mcpToken']);

/** Human names and where each answer can come from when there is no terminal. */
export const ANSWER_SOURCES: Record<AnswerField, { label: string; sources: string }> = {
  customerName: { label: 'customer name', sources: '--customer-name or SERVICE_CUSTOMER_NAME' },
  apiKey: { label: 'service API key', sources: 'SERVICE_API_KEY or --api-key-file' },
  modelId: { label: 'model ID', sources: '--model or SERVICE_MODEL' },
  meshAuthKey: { label: 'mesh network auth key', sources: 'SERVICE_MESH_AUTH_KEY or --mesh-auth-key-file' },
  meshHostname: { label: 'mesh network hostname', sources: '--mesh-hostname or SERVICE_MESH_HOSTNAME' },
  mcpToken: { label: 'service MCP token', sources: 'SERVICE_MCP_TOKEN or --mcp-token-file' },
};

/**
 * Lowercase ASCII slug: "Café Müller GmbH" -> "cafe-muller-gmbh" (accents dropped, the
 * Latin letters kept). A name with no Latin letter or digit ("東京歯科クリニック") has an
 * empty slug: it is still a fine display name, and the mesh hostname is then given.
 */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
}

/** Longest value accepted for each answer (outside text is always bounded). */
export const ANSWER_MAX_LENGTH: Record<AnswerField, number> = {
  customerName: 80,
  apiKey: 512,
  modelId: MAX_MODEL_ID_LENGTH,
  meshAuthKey: 512,
  meshHostname: 63,
  mcpToken: 1024,
};

/** The rules every answer meets first: no control or bidi characters, bounded length. */
const text = (what: string, field: AnswerField) =>
  z.string().check(
    z.superRefine((value: string, ctx) => {
      const problem = textProblem(value, ANSWER_MAX_LENGTH[field]);
      if (problem) ctx.addIssue({ code: 'custom', message: `${what} ${problem}`, abort: true });
    }),
  );
const token = (what: string, field: AnswerField) =>
  z.pipe(text(what, field), z.string().check(z.minLength(1, `${what} is empty`), z.regex(/^\S+$/, `${what} must not contain spaces`)));
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const AnswerSchemas = {
  customerName: z.pipe(
    text('customer name', 'customerName'),
    z.string().check(
      z.trim(),
      z.minLength(1, 'customer name is empty: give the customer or company name'),
    ),
  ),
  apiKey: token('service API key', 'apiKey').check(
    z.refine((key: string) => key.startsWith('pkt_'), 'service API key must start with pkt_ (Partner Portal > Settings > API Keys)'),
    z.refine((key: string) => key.length >= 12, 'service API key is too short to be a real key'),
  ),
  modelId: z.pipe(
    text('model ID', 'modelId'),
    z.string().check(z.trim(), z.minLength(1, 'model ID is empty'), z.regex(MODEL_ID, 'model ID may contain only letters, digits and . _ : / @ -')),
  ),
  meshAuthKey: token('mesh network auth key', 'meshAuthKey').check(
    z.superRefine((key: string, ctx) => {
      const problem = meshAuthKeyProblem(key);
      if (problem) ctx.addIssue({ code: 'custom', message: `mesh network auth key ${problem}` });
    }),
  ),
  meshHostname: z.pipe(
    text('mesh network hostname', 'meshHostname'),
    z.string().check(
      z.trim(),
      z.regex(DNS_LABEL, 'mesh network hostname must be a DNS label: lowercase letters, digits and -, 1-63 characters, not starting or ending with -'),
    ),
  ),
  mcpToken: token('service MCP token', 'mcpToken'),
} satisfies Record<AnswerField, z.ZodMiniType<string, string>>;

export interface Answers {
  customerName: string;
  customerSlug: string;
  apiKey: string;
  modelId: string;
  /** Only needed when the mesh client must log in; never stored. */
  meshAuthKey?: string;
  meshHostname: string;
  mcpToken: string;
  /**
   * The channel's public names (--channel-host): in its certificate and first in
   * `channel show`. Not one of the six prompts: given or kept, never asked.
   */
  channelHosts?: string[];
}

/** openclaw-<customer-slug>, or undefined when the name has no slug (then the hostname must be given). */
export function defaultMeshHostname(customerName: string): string | undefined {
  const slug = slugify(customerName);
  return slug ? `openclaw-${slug}`.slice(0, 63).replace(/-+$/g, '') : undefined;
}

/**
 * The form of a mesh auth key (the mesh service's docs, "Key prefixes"): `tskey-` then the
 * key type. Only a pre-authentication key (`tskey-auth-...`) logs a server in with
 * `tailscale up --auth-key` as the install runs it; an OAuth client secret
 * (`tskey-client-...`) would also need --advertise-tags and is refused with the others,
 * as is what is clearly another secret pasted into the wrong field. Checked before
 * anything changes, so a wrong key no longer fails at `tailscale up`, after the packages.
 */
export const MESH_AUTH_KEY_PREFIX = 'tskey-auth-';
const OTHER_MESH_KEYS: Record<string, string> = {
  api: 'an API access token',
  client: 'an OAuth client secret',
  scim: 'a SCIM key',
  webhook: 'a webhook secret',
};
const MESH_KEYS_PAGE = 'the mesh network admin console, Settings > Keys > Generate auth key';

export function meshAuthKeyProblem(key: string): string | undefined {
  if (key.startsWith('pkt_')) return `is a service API key (pkt_...), not a mesh key: the mesh auth key comes from ${MESH_KEYS_PAGE} (${MESH_AUTH_KEY_PREFIX}...)`;
  const other = /^tskey-([a-z]+)-/.exec(key)?.[1];
  if (other && other !== 'auth') {
    return `is ${OTHER_MESH_KEYS[other] ?? `a tskey-${other}- key`} (tskey-${other}-...), not an auth key: create an auth key in ${MESH_KEYS_PAGE} (${MESH_AUTH_KEY_PREFIX}...)`;
  }
  if (!key.startsWith(MESH_AUTH_KEY_PREFIX)) return `must start with ${MESH_AUTH_KEY_PREFIX} (an auth key from ${MESH_KEYS_PAGE})`;
  if (key.length === MESH_AUTH_KEY_PREFIX.length) return `is only its prefix ${MESH_AUTH_KEY_PREFIX}: paste the whole key`;
  return undefined;
}

/** Validates one answer; returns the cleaned value or the message naming the field. */
export function validateAnswer(field: AnswerField, value: string): { ok: true; value: string } | { ok: false; message: string } {
  const parsed = AnswerSchemas[field].safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, message: parsed.error.issues[0]!.message };
}

/** The answers kept on the server for the next run (mesh auth key excluded: single-use). */
export const StoredAnswersSchema = z.strictObject({
  customerName: z.string(),
  apiKey: z.string(),
  modelId: z.string(),
  meshHostname: z.string(),
  mcpToken: z.string(),
  /** The channel's public names (--channel-host), canonical; absent: none. */
  channelHosts: z.optional(z.array(z.string())),
  /** Service profile overrides (SERVICE_* URLs) in effect at install; see loadProfile. */
  serviceOverrides: z.optional(z.record(z.string(), z.string())),
});
export type StoredAnswers = z.infer<typeof StoredAnswersSchema>;

const STORED_FIELDS = ['customerName', 'apiKey', 'modelId', 'meshHostname', 'mcpToken'] as const satisfies readonly AnswerField[];

/**
 * Parses a stored answers file (answers.json on the server, or the one in a backup)
 * under the install's own rules: every answer as if it had been typed, every profile
 * override as if it came from its environment variable. A bad file is refused (exit
 * 2) naming the file and the field; a secret's value is never repeated.
 */
export function parseStoredAnswers(text: string, where: string): StoredAnswers {
  const refuse = (field: string, problem: string): never => {
    throw new UsageError(`${where}: ${field}: ${problem}`, `fix ${where} (or remove it and give the answers again), then run again; nothing was changed`);
  };
  if (text.length > 65_536) refuse('(file)', 'is larger than 64 KiB');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return refuse('(file)', `not valid JSON: ${(error as Error).message}`);
  }
  const shape = StoredAnswersSchema.safeParse(raw);
  if (!shape.success) {
    const issue = shape.error.issues[0]!;
    const field = issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : issue.path.join('.') || '(file)';
    refuse(field, issue.code === 'unrecognized_keys' ? 'unknown field' : issue.message);
  }
  const stored = shape.data!;
  for (const field of STORED_FIELDS) {
    const checked = validateAnswer(field, stored[field]);
    if (!checked.ok) refuse(field, checked.message);
    else stored[field] = checked.value;
  }
  if (stored.channelHosts !== undefined) {
    try {
      stored.channelHosts = parseChannelHosts(stored.channelHosts);
    } catch (error) {
      refuse('channelHosts', (error as Error).message);
    }
  }
  for (const [name, value] of Object.entries(stored.serviceOverrides ?? {})) {
    if (!(name in PROFILE_ENV)) refuse(`serviceOverrides.${name}`, `not a service profile variable (known: ${Object.keys(PROFILE_ENV).join(', ')})`);
    const problem = environmentProblems({ [name]: value })[0];
    if (problem) refuse(`serviceOverrides.${name}`, problem.slice(name.length + 1));
  }
  return stored;
}
