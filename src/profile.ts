import { z } from 'zod';
import { readTemplate } from './assets.js';
import { UsageError } from './errors.js';
import { MAX_MODEL_ID_LENGTH, MODEL_ID, SLUG, serviceUrlProblem, textProblem } from './input.js';

export { isLoopback } from './input.js';

const httpsOrLoopbackUrl = z
  .string()
  .superRefine((value, ctx) => {
    const problem = serviceUrlProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((value) => value.replace(/\/+$/, ''));

const slug = z.string().max(64).regex(SLUG, 'must be a lowercase slug');
const plainText = (max: number) =>
  z.string().superRefine((value, ctx) => {
    const problem = textProblem(value, max);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const ServiceProfileSchema = z.object({
  serviceName: plainText(80).pipe(z.string().min(1)),
  setupUrl: httpsOrLoopbackUrl,
  aiGatewayUrl: httpsOrLoopbackUrl,
  aiGatewayApi: slug,
  gatewayProviderName: slug,
  defaultModelId: plainText(MAX_MODEL_ID_LENGTH).pipe(z.string().regex(MODEL_ID, 'may contain only letters, digits and . _ : / @ -')),
  mcpUrl: httpsOrLoopbackUrl,
  partnerApiUrl: httpsOrLoopbackUrl,
  voiceProviders: z.tuple([slug, slug]),
  portalApiKeysPage: plainText(200),
  portalMcpTokensPage: plainText(200),
});
export type ServiceProfile = z.infer<typeof ServiceProfileSchema>;

/** Environment overrides, one per profile field. */
export const PROFILE_ENV: Record<string, keyof ServiceProfile> = {
  SERVICE_SETUP_URL: 'setupUrl',
  SERVICE_AI_GATEWAY_URL: 'aiGatewayUrl',
  SERVICE_AI_GATEWAY_API: 'aiGatewayApi',
  SERVICE_GATEWAY_PROVIDER: 'gatewayProviderName',
  SERVICE_DEFAULT_MODEL: 'defaultModelId',
  SERVICE_MCP_URL: 'mcpUrl',
  SERVICE_PARTNER_API_URL: 'partnerApiUrl',
  SERVICE_VOICE_PROVIDERS: 'voiceProviders',
};

/** The profile overrides set in `env` (variable name -> value). */
export function profileOverrides(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.keys(PROFILE_ENV).flatMap((name) => (env[name] ? [[name, env[name]!]] : [])));
}

/**
 * The profile in effect: embedded defaults < overrides recorded by the install on
 * this server (so the hourly guard, run by cron without them, keeps the deployment
 * as installed) < the environment.
 */
export function loadProfile(env: NodeJS.ProcessEnv = process.env, recorded: Record<string, string> = {}): ServiceProfile {
  const raw = JSON.parse(readTemplate('service-profile.json')) as Record<string, unknown>;
  delete raw.$comment;
  const effective = { ...recorded, ...profileOverrides(env) };
  for (const [name, key] of Object.entries(PROFILE_ENV)) {
    const value = effective[name];
    if (value === undefined || value === '') continue;
    raw[key] = key === 'voiceProviders' ? value.split(',').map((s) => s.trim()) : value;
  }
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
