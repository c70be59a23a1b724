import { z } from 'zod';
import { readTemplate } from './assets.js';
import { UsageError } from './errors.js';

const httpsOrLoopbackUrl = z
  .string()
  .url()
  .refine((value) => {
    const url = new URL(value);
    return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname));
  }, 'must be an https URL (plain http only for a loopback stand-in)')
  .transform((value) => value.replace(/\/+$/, ''));

const slug = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be a lowercase slug');

export const ServiceProfileSchema = z.object({
  serviceName: z.string().min(1),
  setupUrl: httpsOrLoopbackUrl,
  aiGatewayUrl: httpsOrLoopbackUrl,
  aiGatewayApi: z.string().min(1),
  gatewayProviderName: slug,
  defaultModelId: z.string().min(1),
  mcpUrl: httpsOrLoopbackUrl,
  partnerApiUrl: httpsOrLoopbackUrl,
  voiceProviders: z.tuple([slug, slug]),
  portalApiKeysPage: z.string(),
  portalMcpTokensPage: z.string(),
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
    throw new UsageError(
      `service profile: ${key} ${issue.message}`,
      envName ? `check the ${envName} environment variable` : undefined,
    );
  }
  return parsed.data;
}

export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname === '::1' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}
