import * as z from '../zod.js';
import { environmentProblems } from '../environment.js';
import { UsageError } from '../errors.js';
import { MAX_MODEL_ID_LENGTH, MODEL_ID, textProblem } from '../input.js';
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

/** Lowercase ASCII slug: "Café Müller GmbH" -> "cafe-muller-gmbh". */
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
      z.refine((name: string) => slugify(name).length > 0, 'customer name needs at least one letter or digit (it becomes the slug)'),
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
  meshAuthKey: token('mesh network auth key', 'meshAuthKey'),
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
}

export function defaultMeshHostname(customerName: string): string {
  return `openclaw-${slugify(customerName)}`.slice(0, 63).replace(/-+$/g, '');
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
  for (const [name, value] of Object.entries(stored.serviceOverrides ?? {})) {
    if (!(name in PROFILE_ENV)) refuse(`serviceOverrides.${name}`, `not a service profile variable (known: ${Object.keys(PROFILE_ENV).join(', ')})`);
    const problem = environmentProblems({ [name]: value })[0];
    if (problem) refuse(`serviceOverrides.${name}`, problem.slice(name.length + 1));
  }
  return stored;
}
