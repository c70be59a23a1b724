import { z } from 'zod';

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

const token = (what: string) =>
  z.string().min(1, `${what} is empty`).regex(/^\S+$/, `${what} must not contain spaces`);
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const AnswerSchemas = {
  customerName: z
    .string()
    .trim()
    .min(1, 'customer name is empty: give the customer or company name')
    .max(80, 'customer name is longer than 80 characters')
    .refine((name) => slugify(name).length > 0, 'customer name needs at least one letter or digit (it becomes the slug)'),
  apiKey: token('service API key')
    .refine((key) => key.startsWith('pkt_'), 'service API key must start with pkt_ (Partner Portal > Settings > API Keys)')
    .refine((key) => key.length >= 12, 'service API key is too short to be a real key'),
  modelId: z
    .string()
    .trim()
    .min(1, 'model ID is empty')
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/, 'model ID may contain only letters, digits and . _ : / @ -'),
  meshAuthKey: token('mesh network auth key'),
  meshHostname: z
    .string()
    .trim()
    .regex(DNS_LABEL, 'mesh network hostname must be a DNS label: lowercase letters, digits and -, 1-63 characters, not starting or ending with -'),
  mcpToken: token('service MCP token'),
} satisfies Record<AnswerField, z.ZodType<string>>;

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
export const StoredAnswersSchema = z.object({
  customerName: z.string(),
  apiKey: z.string(),
  modelId: z.string(),
  meshHostname: z.string(),
  mcpToken: z.string(),
  /** Service profile overrides (SERVICE_* URLs) in effect at install; see loadProfile. */
  serviceOverrides: z.record(z.string(), z.string()).optional(),
});
export type StoredAnswers = z.infer<typeof StoredAnswersSchema>;
