import * as z from './zod.js';
import { UsageError } from './errors.js';
import { MAX_MODEL_ID_LENGTH, MODEL_ID, SLUG, serviceUrlProblem, textProblem } from './input.js';
import { PROFILE_ENV, profileValues } from './profile-values.js';

export { isLoopback } from './input.js';

const httpsOrLoopbackUrl = z.pipe(
  z.string().check(
    z.superRefine((value: string, ctx) => {
      const problem = serviceUrlProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  ),
  z.transform((value: string) => value.replace(/\/+$/, '')),
);

const slug = z.string().check(z.maxLength(64), z.regex(SLUG, 'must be a lowercase slug'));
const plainText = (max: number) =>
  z.string().check(
    z.superRefine((value: string, ctx) => {
      const problem = textProblem(value, max);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  );

const modelId = z.pipe(plainText(MAX_MODEL_ID_LENGTH), z.string().check(z.regex(MODEL_ID, 'may contain only letters, digits and . _ : / @ -')));

export const ServiceProfileSchema = z.object({
  serviceName: z.pipe(plainText(80), z.string().check(z.minLength(1))),
  setupUrl: httpsOrLoopbackUrl,
  aiGatewayUrl: httpsOrLoopbackUrl,
  aiGatewayApi: slug,
  gatewayProviderName: slug,
  defaultModelId: modelId,
  /**
   * The model of the heartbeat (SPEC 2.7's 30-minute health check), on the same gateway
   * provider: a smaller one than the chat's keeps the idle cost down
   * (docs/components.md, "The heartbeat"). Optional: without it, or when it is the
   * customer's chat model, the heartbeat runs on the chat model.
   */
  heartbeatModelId: z.optional(modelId),
  mcpUrl: httpsOrLoopbackUrl,
  partnerApiUrl: httpsOrLoopbackUrl,
  voiceProviders: z.tuple([slug, slug]),
  portalApiKeysPage: plainText(200),
  portalMcpTokensPage: plainText(200),
});
export type ServiceProfile = z.infer<typeof ServiceProfileSchema>;

export { PROFILE_ENV, profileOverrides } from './profile-values.js';

/**
 * The profile in effect, validated: embedded defaults < overrides recorded by the install
 * on this server (so the hourly guard, run by cron without them, keeps the deployment
 * as installed) < the environment (profile-values.ts).
 */
export function loadProfile(env: NodeJS.ProcessEnv = process.env, recorded: Record<string, string> = {}): ServiceProfile {
  const raw = profileValues(env, recorded);
  const parsed = ServiceProfileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0] ?? '');
    const envName = Object.entries(PROFILE_ENV).find(([, k]) => k === key)?.[0];
    const fromEnv = envName !== undefined && Boolean(env[envName]);
    const where = envName ? `${envName} (service profile ${key}${fromEnv ? '' : ', recorded in answers.json'})` : `service profile ${key}`;
    throw new UsageError(`${where} ${issue.message}`, envName ? `fix or unset ${envName} and run again; nothing was changed` : undefined);
  }
  return parsed.data;
}
