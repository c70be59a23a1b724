import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import * as z from 'zod';
import { UsageError } from '../errors.js';

/**
 * Request bodies of the partner API (SPEC 2.1-2.3), validated before any request is
 * made so that a bad body never reaches the server. The schemas are strict; the
 * onboarding body from `--body` may carry fields the spec does not show (SPEC 2.1:
 * "other optional fields: not shown"): `splitOnboardExtras` passes those on, but still
 * refuses one within a typo's distance of a known field (`allowPortalAcess` would
 * otherwise silently send no portal invite).
 */

const requiredText = z.string().trim().min(1, 'is required');

const email = z.email({ error: 'must be an e-mail address like name@example.com' });

/**
 * An international phone number, checked against the numbering plan of its country
 * (libphonenumber's full metadata), and sent in E.164 form (`+14155552671`).
 * A number without a leading `+` and country code is refused rather than guessed.
 */
export const internationalPhone = z.string().transform((value, ctx) => {
  const trimmed = value.trim();
  const parsed = trimmed.startsWith('+') ? parsePhoneNumberFromString(trimmed) : undefined;
  if (parsed?.ext) {
    // E.164 has no extension: sending the number alone would drop it without a word.
    ctx.addIssue({
      code: 'custom',
      message: `"${trimmed}" has an extension (${parsed.ext}); the API takes one phone number in international format: give the number without the extension`,
    });
    return z.NEVER;
  }
  if (!parsed?.isValid()) {
    ctx.addIssue({
      code: 'custom',
      message: trimmed.startsWith('+')
        ? `"${trimmed}" is not a valid phone number for its country code`
        : 'must be in international format: + and country code, e.g. +14155552671',
    });
    return z.NEVER;
  }
  return parsed.number;
});

export const profitMultiplier = z
  .number({ error: 'must be a number, e.g. 1.5' })
  .refine((value) => Number.isFinite(value) && value > 0, 'must be a positive finite number, e.g. 1.5');

/** SPEC 2.1. */
export const OnboardBodySchema = z.strictObject({
  basic: z.strictObject({
    email,
    firstName: requiredText,
    lastName: requiredText,
    businessPhone: internationalPhone,
  }),
  business: z.strictObject({ companyName: requiredText }),
  isQuickOnboarding: z.boolean().optional(),
  allowPortalAccess: z.boolean().optional(),
});
export type OnboardBody = z.infer<typeof OnboardBodySchema>;

/** SPEC 2.2. */
export const MapAgentBodySchema = z.strictObject({
  customerId: requiredText,
  profitMultiplier,
});
export type MapAgentBody = z.infer<typeof MapAgentBodySchema>;

/**
 * SPEC 2.3. The allowed roles beyond `member` are not published (SPEC 2.5), so any
 * lowercase word passes and the server decides; `member` is the default.
 */
export const TeamMemberBodySchema = z.strictObject({
  email,
  name: requiredText,
  role: z
    .string()
    .regex(/^[a-z][a-z_-]*$/, 'must be a lowercase role name such as member')
    .default('member'),
});
export type TeamMemberBody = z.infer<typeof TeamMemberBodySchema>;

/** The path parameters of agent mapping; `provider` must be one of the profile's two. */
export function agentTargetSchema(voiceProviders: readonly [string, string]) {
  return z.strictObject({
    provider: z.enum(voiceProviders, { error: `must be one of: ${voiceProviders.join(', ')}` }),
    agentId: requiredText,
  });
}

/** `onboard-flow --body file.json`: the three steps of the recommended order. */
export function onboardFlowSchema(voiceProviders: readonly [string, string]) {
  return z.strictObject({
    customer: OnboardBodySchema,
    agent: agentTargetSchema(voiceProviders).extend({ profitMultiplier }),
    members: z.array(TeamMemberBodySchema).default([]),
  });
}
export type OnboardFlowInput = z.infer<ReturnType<typeof onboardFlowSchema>>;

/**
 * The onboarding answer carries the customer id (SPEC 4.3); other fields are not
 * published and are passed through untouched.
 */
export type OnboardResponse = Record<string, unknown> & { id: string };

const idValue = z.union([z.string().trim().min(1), z.number().finite()]).transform(String);

/**
 * The customer id in an onboarding answer: `id` at the top level, or the one `id` of an
 * object one level down (`{"customer": {"id": ...}}`, `{"data": {"id": ...}}`).
 * Undefined when there is none, or more than one candidate one level down (which one
 * is the customer's cannot be known).
 */
export function findCustomerId(answer: unknown): string | undefined {
  if (!isRecord(answer)) return undefined;
  const top = idValue.safeParse(answer.id);
  if (top.success) return top.data;
  if (answer.id !== undefined) return undefined;
  const nested = Object.values(answer)
    .filter(isRecord)
    .map((inner) => idValue.safeParse(inner.id))
    .filter((result) => result.success);
  return nested.length === 1 ? nested[0]!.data : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The fields SPEC 2.1 shows, per object of the onboarding body. */
const ONBOARD_KNOWN: Record<string, readonly string[]> = {
  '': ['basic', 'business', 'isQuickOnboarding', 'allowPortalAccess'],
  basic: ['email', 'firstName', 'lastName', 'businessPhone'],
  business: ['companyName'],
};

export interface ExtraField {
  /** Dotted path in the body, e.g. `basic.title`. */
  path: string;
  value: unknown;
}

/**
 * Takes the fields SPEC 2.1 does not show out of an onboarding body read from JSON, so
 * the strict schema can check the rest; `mergeOnboardExtras` puts them back for sending.
 * A field that looks like a misspelt known one (edit distance up to 2, or the same but
 * for case) is refused, naming the field it resembles: exit 2, nothing sent.
 */
export function splitOnboardExtras(body: unknown, what: string, prefix = ''): { known: unknown; extras: ExtraField[] } {
  if (!isRecord(body)) return { known: body, extras: [] };
  const extras: ExtraField[] = [];
  const problems: string[] = [];
  const known: Record<string, unknown> = {};
  const take = (object: Record<string, unknown>, level: string, into: Record<string, unknown>) => {
    for (const [key, value] of Object.entries(object)) {
      const path = level ? `${level}.${key}` : key;
      if (ONBOARD_KNOWN[level]!.includes(key)) {
        if (level === '' && (key === 'basic' || key === 'business') && isRecord(value)) {
          const inner: Record<string, unknown> = {};
          take(value, key, inner);
          into[key] = inner;
        } else into[key] = value;
        continue;
      }
      if (key === '__proto__' || key === 'constructor' || key === 'prototype') {
        problems.push(`${prefix}${path}: not an acceptable field name`);
        continue;
      }
      const like = ONBOARD_KNOWN[level]!.find((name) => looksLikeTypo(key, name));
      if (like) problems.push(`${prefix}${path}: unknown field; did you mean ${prefix}${level ? `${level}.` : ''}${like}?`);
      else extras.push({ path, value });
    }
  };
  take(body, '', known);
  if (problems.length > 0) {
    throw new UsageError(`invalid ${what}: ${problems.join('; ')}`, 'fix the field named above; nothing was sent to the partner API');
  }
  return { known, extras };
}

/** The validated body with the extra fields put back where they were. */
export function mergeOnboardExtras<T extends OnboardBody>(body: T, extras: readonly ExtraField[]): T {
  const out = structuredClone(body) as Record<string, any>;
  for (const { path, value } of extras) {
    const parts = path.split('.');
    const key = parts.pop()!;
    const target = parts.length ? out[parts[0]!] : out;
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out as T;
}

/** Optimal string alignment distance <= 2, or equal ignoring case and `_`/`-`. */
export function looksLikeTypo(candidate: string, known: string): boolean {
  const fold = (text: string) => text.toLowerCase().replace(/[_-]/g, '');
  if (fold(candidate) === fold(known)) return true;
  const a = candidate.toLowerCase();
  const b = known.toLowerCase();
  if (Math.abs(a.length - b.length) > 2 || Math.min(a.length, b.length) < 4) return false;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]! <= 2;
}

/**
 * Validates `value`, or throws a UsageError naming every bad field (and the flag that
 * set it, when the body was built from flags).
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  flagOf: Record<string, string> = {},
): z.output<S> {
  // reportInput: lets describeIssue tell a missing field from a wrong one (never printed).
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.map(String).join('.') || '(body)';
    const flag = flagOf[field];
    return `${field}${flag ? ` (${flag})` : ''}: ${describeIssue(issue)}`;
  });
  throw new UsageError(
    `invalid ${what}: ${problems.join('; ')}`,
    'fix the field named above; nothing was sent to the partner API',
  );
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s) ${issue.keys.join(', ')}`;
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'is required';
  return issue.message;
}

/**
 * `--member email:name[:role]`. The e-mail ends at the first colon; a role, when given,
 * is the last segment, so a display name may itself contain colons.
 */
export function parseMemberSpec(spec: string): { email: string; name: string; role?: string } {
  const parts = spec.split(':');
  if (parts.length < 2) {
    throw new UsageError(`--member "${spec}": expected email:name[:role]`, 'e.g. --member ana@example.com:"Ana Diaz":member');
  }
  const [memberEmail, ...rest] = parts as [string, ...string[]];
  if (rest.length === 1) return { email: memberEmail, name: rest[0]! };
  const role = rest.pop()!;
  return { email: memberEmail, name: rest.join(':'), role };
}
