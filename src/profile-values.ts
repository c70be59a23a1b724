import { readTemplate } from './assets.js';

/**
 * The service profile's values as given, not yet validated: the embedded defaults
 * (templates/service-profile.json) < overrides recorded by the install < the environment.
 * profile.ts validates them (loadProfile); this file has no validator so that the CLI's
 * help can show profile values (the voice platforms) without loading one.
 */

/** Environment overrides, one per profile field. */
export const PROFILE_ENV = {
  SERVICE_SETUP_URL: 'setupUrl',
  SERVICE_AI_GATEWAY_URL: 'aiGatewayUrl',
  SERVICE_AI_GATEWAY_API: 'aiGatewayApi',
  SERVICE_GATEWAY_PROVIDER: 'gatewayProviderName',
  SERVICE_DEFAULT_MODEL: 'defaultModelId',
  SERVICE_HEARTBEAT_MODEL: 'heartbeatModelId',
  SERVICE_MCP_URL: 'mcpUrl',
  SERVICE_PARTNER_API_URL: 'partnerApiUrl',
  SERVICE_VOICE_PROVIDERS: 'voiceProviders',
} as const satisfies Record<string, string>;

/** The profile overrides set in `env` (variable name -> value). */
export function profileOverrides(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.keys(PROFILE_ENV).flatMap((name) => (env[name] ? [[name, env[name]!]] : [])));
}

/** The merged values, unvalidated (loadProfile in profile.ts checks them). */
export function profileValues(env: NodeJS.ProcessEnv = process.env, recorded: Record<string, string> = {}): Record<string, unknown> {
  const raw = JSON.parse(readTemplate('service-profile.json')) as Record<string, unknown>;
  delete raw.$comment;
  const effective = { ...recorded, ...profileOverrides(env) };
  for (const [name, key] of Object.entries(PROFILE_ENV)) {
    const value = effective[name];
    if (value === undefined || value === '') continue;
    raw[key] = key === 'voiceProviders' ? value.split(',').map((s) => s.trim()) : value;
  }
  return raw;
}

/** The two voice platforms of the profile, as given (for help and completion). */
export function voiceProviders(env: NodeJS.ProcessEnv = process.env): string[] {
  const value = profileValues(env).voiceProviders;
  return Array.isArray(value) ? value.map(String) : [];
}
