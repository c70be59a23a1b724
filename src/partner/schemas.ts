import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { z } from 'zod';
import { UsageError } from '../errors.js';

/**
 * Request bodies of the partner API (SPEC 2.1-2.3), validated before any request is
 * made so that a bad body never reaches the server. Objects are strict: the spec names
 * no other fields, and a typo such as `allowPortalAcess` must fail here instead of
 * silently sending no portal invite.
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
 * The onboarding answer must carry the customer id (SPEC 4.3); other fields are not
 * published and are passed through untouched.
 */
export const OnboardResponseSchema = z.looseObject({
  id: z.union([z.string().min(1), z.number()]).transform(String),
});
export type OnboardResponse = z.infer<typeof OnboardResponseSchema>;

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
