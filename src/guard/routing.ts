import { maskSecret } from '../host/redact.js';
import type { ServiceProfile } from '../profile.js';
import {
  MCP_SESSION_IDLE_TTL_MS,
  QMD_MCP_ENTRY,
  QMD_MCP_SERVER,
  SECRET_PROVIDER,
  SECRET_PROVIDER_CONFIG,
  SERVICE_API_KEY_REF,
  primaryModel,
  serviceProvider,
  sameConfig,
  withManagedMcp,
  type RuntimeConfig,
} from '../config/runtime-config.js';

/** One setting the enforcer put back, for the journal and guard.log (secrets masked). */
export interface Restoration {
  /** Config path or file, e.g. `models.providers.openai`. */
  what: string;
  before: string;
  after: string;
}

export interface RoutingAnswers {
  apiKey: string;
  modelId: string;
}

export interface RoutingResult {
  config: RuntimeConfig;
  restorations: Restoration[];
}

/**
 * Provider names of model vendors an agent could be pointed at directly, bypassing
 * the service's AI gateway (billing and policy live there). Any other extra provider
 * is removed too; these are only named as "direct model-vendor" in the log.
 */
const VENDOR_PROVIDERS = new Set([
  'anthropic', 'openai', 'openai-codex', 'google', 'gemini', 'google-vertex', 'vertex', 'mistral', 'groq', 'xai',
  'deepseek', 'openrouter', 'together', 'fireworks', 'perplexity', 'cohere', 'bedrock', 'amazon-bedrock',
  'azure', 'azure-openai', 'ollama', 'moonshot', 'minimax', 'cerebras', 'zai', 'qwen', 'huggingface',
]);
const VENDOR_HOSTS = /(^|\.)(openai\.com|anthropic\.com|googleapis\.com|mistral\.ai|groq\.com|x\.ai|deepseek\.com|openrouter\.ai|together\.xyz|fireworks\.ai|perplexity\.ai|cohere\.(ai|com)|amazonaws\.com|azure\.com|moonshot\.(ai|cn)|cerebras\.ai)$/i;

/**
 * The gateway enforcer's rules (spec 2.7), pure: given the parsed openclaw.json, the
 * stored answers and the service profile, returns the config with the agent routed
 * only through the service's AI gateway, and what had to be put back.
 *
 * - models.providers holds exactly the service provider (base URL, API type, the
 *   configured model and the profile's heartbeat model, its key as a reference to the secret source); direct vendor and
 *   any other providers are removed;
 * - models.mode is `replace`, so the runtime adds no implicit vendor providers;
 * - the default model (and any per-agent model) uses the service provider; fallbacks
 *   (which would reach other providers) are removed;
 * - gateway.auth is {mode: token, token: the reference to the service API key}; the
 *   legacy top-level gateway.token is migrated away; the gateway binds to loopback only;
 * - secrets.providers.service reads our root-only secret source and nothing else;
 * - the `qmd` MCP server is the resident QMD service, and MCP runtimes have their idle
 *   limit (without it the gateway's 256 runtimes fill up and sessions lose their tools).
 *
 * The result agrees with desiredRuntimeConfig on every setting both manage, so the
 * install and the hourly guard never fight (a test holds them to it).
 */
export function enforceRouting(current: RuntimeConfig, answers: RoutingAnswers, profile: ServiceProfile): RoutingResult {
  const config = structuredClone(current) as Record<string, any>;
  const restorations: Restoration[] = [];
  const restored = (what: string, before: unknown, after: unknown) => restorations.push({ what, before: show(before), after: show(after) });
  const name = profile.gatewayProviderName;
  const wanted = serviceProvider({ answers, profile });
  const primary = primaryModel(profile, answers.modelId);

  // models.providers: only ours, exactly as it should be.
  const models = obj(config.models);
  if (config.models !== undefined && !isObj(config.models)) restored('models', config.models, 'object');
  const providers = obj(models.providers);
  for (const [other, entry] of Object.entries(providers)) {
    if (other === name) continue;
    const kind = isVendor(other, entry) ? 'direct model-vendor provider' : 'extra provider';
    restored(`models.providers.${other}`, `${kind} (${describeProvider(entry)})`, 'removed');
  }
  const ours = providers[name];
  if (!isObj(ours)) {
    restored(`models.providers.${name}`, ours === undefined ? 'missing' : ours, `service provider (${describeProvider(wanted)})`);
  } else {
    const fields: Array<[string, unknown, unknown]> = [
      ['baseUrl', ours.baseUrl, wanted.baseUrl],
      ['api', ours.api, wanted.api],
    ];
    for (const [field, have, want] of fields) {
      if (have !== want) restored(`models.providers.${name}.${field}`, have, want);
    }
    if (!sameConfig(ours.apiKey, wanted.apiKey)) restored(`models.providers.${name}.apiKey`, secretShown(ours.apiKey), REF_SHOWN);
    if (!sameConfig(ours.models, wanted.models)) restored(`models.providers.${name}.models`, modelIds(ours.models), modelIds(wanted.models));
    for (const extra of Object.keys(ours).filter((k) => !(k in wanted))) {
      // Values not shown: an unknown key (headers, tokens) may carry a secret.
      restored(`models.providers.${name}.${extra}`, 'set', 'removed');
    }
  }
  if (models.mode !== 'replace') restored('models.mode', models.mode, 'replace');
  config.models = { ...models, mode: 'replace', providers: { [name]: wanted } };

  // The default model, and any per-agent override, go through our provider.
  const agents = obj(config.agents);
  const defaults = obj(agents.defaults);
  const model: Record<string, any> = isObj(defaults.model) ? { ...defaults.model } : typeof defaults.model === 'string' ? { primary: defaults.model } : {};
  if (model.primary !== primary) restored('agents.defaults.model.primary', model.primary, primary);
  if (model.fallbacks !== undefined) {
    restored('agents.defaults.model.fallbacks', Array.isArray(model.fallbacks) ? model.fallbacks.join(', ') || '[]' : model.fallbacks, 'removed');
    delete model.fallbacks;
  }
  model.primary = primary;
  const agentsOut: Record<string, any> = { ...agents, defaults: { ...defaults, model } };
  if (Array.isArray(agents.list)) {
    agentsOut.list = agents.list.map((agent: unknown, index: number) => {
      if (!isObj(agent) || agent.model === undefined) return agent;
      const ref = typeof agent.model === 'string' ? agent.model : isObj(agent.model) ? agent.model.primary : undefined;
      const hasFallbacks = isObj(agent.model) && agent.model.fallbacks !== undefined;
      if (typeof ref === 'string' && ref.startsWith(`${name}/`) && !hasFallbacks) return agent;
      const id = typeof agent.id === 'string' ? agent.id : String(index);
      restored(`agents.list[${id}].model`, ref ?? agent.model, `${primary} (the default)`);
      const { model: _dropped, ...rest } = agent;
      return rest;
    });
  }
  config.agents = agentsOut;

  // gateway.auth, the legacy gateway.token, loopback only.
  const gateway = obj(config.gateway);
  if (gateway.token !== undefined) {
    restored('gateway.token', `legacy top-level token (${secretShown(gateway.token)})`, 'migrated to gateway.auth.token');
    delete gateway.token;
  }
  const auth = obj(gateway.auth);
  if (!isObj(gateway.auth)) restored('gateway.auth', 'missing', `mode token, token ${REF_SHOWN}`);
  else {
    if (auth.mode !== 'token') restored('gateway.auth.mode', auth.mode, 'token');
    if (!sameConfig(auth.token, SERVICE_API_KEY_REF)) restored('gateway.auth.token', secretShown(auth.token), REF_SHOWN);
  }
  if (gateway.bind !== 'loopback') restored('gateway.bind', gateway.bind, 'loopback');
  config.gateway = { ...gateway, bind: 'loopback', auth: { ...auth, mode: 'token', token: { ...SERVICE_API_KEY_REF } } };

  // The references resolve from our root-only source and nowhere else: a provider
  // pointed at another file (or command) would hand the gateway someone else's key.
  const secrets = obj(config.secrets);
  const providersOfSecrets = obj(secrets.providers);
  if (!sameConfig(providersOfSecrets[SECRET_PROVIDER], SECRET_PROVIDER_CONFIG)) {
    restored(`secrets.providers.${SECRET_PROVIDER}`, describeSecretProvider(providersOfSecrets[SECRET_PROVIDER]), describeSecretProvider(SECRET_PROVIDER_CONFIG));
  }
  config.secrets = { ...secrets, providers: { ...providersOfSecrets, [SECRET_PROVIDER]: { ...SECRET_PROVIDER_CONFIG } } };

  const mcp = obj(config.mcp);
  const qmd = obj(mcp.servers)[QMD_MCP_SERVER];
  if (!sameConfig(qmd, QMD_MCP_ENTRY)) restored(`mcp.servers.${QMD_MCP_SERVER}`, describeMcpServer(qmd), describeMcpServer(QMD_MCP_ENTRY));
  if (mcp.sessionIdleTtlMs !== MCP_SESSION_IDLE_TTL_MS) restored('mcp.sessionIdleTtlMs', mcp.sessionIdleTtlMs, String(MCP_SESSION_IDLE_TTL_MS));
  config.mcp = withManagedMcp(config.mcp);

  return { config, restorations };
}

const REF_SHOWN = `reference ${SERVICE_API_KEY_REF.source}:${SERVICE_API_KEY_REF.provider}:${SERVICE_API_KEY_REF.id}`;

function describeSecretProvider(entry: unknown): string {
  if (!isObj(entry)) return show(entry);
  return `${show(entry.source)} ${show(entry.path ?? entry.command)}`;
}

function describeMcpServer(entry: unknown): string {
  if (!isObj(entry)) return show(entry);
  // A stdio server's arguments and environment, a URL's user info may carry secrets: not shown.
  const timeout = entry.requestTimeoutMs !== undefined ? `, requestTimeoutMs ${show(entry.requestTimeoutMs)}` : '';
  return entry.url !== undefined ? `${show(entry.transport)} ${withoutUserInfo(entry.url)}${timeout}` : `${show(entry.transport)} command ${show(entry.command)}${timeout}`;
}

function withoutUserInfo(url: unknown): string {
  if (typeof url !== 'string') return show(url);
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = '****';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}

function isVendor(name: string, entry: unknown): boolean {
  if (VENDOR_PROVIDERS.has(name.toLowerCase())) return true;
  const baseUrl = isObj(entry) && typeof entry.baseUrl === 'string' ? entry.baseUrl : '';
  try {
    return baseUrl !== '' && VENDOR_HOSTS.test(new URL(baseUrl).hostname);
  } catch {
    return false;
  }
}

function describeProvider(entry: unknown): string {
  if (!isObj(entry)) return show(entry);
  const parts = [`baseUrl ${show(entry.baseUrl)}`];
  if (entry.api !== undefined) parts.push(`api ${show(entry.api)}`);
  parts.push(`key ${secretShown(entry.apiKey)}`);
  return parts.join(', ');
}

function modelIds(models: unknown): string {
  if (!Array.isArray(models)) return show(models);
  return models.map((m) => (isObj(m) ? `${m.id}${m.contextWindow ? ` ctx ${m.contextWindow}` : ''}${m.maxTokens ? ` max ${m.maxTokens}` : ''}` : show(m))).join(', ') || '[]';
}

function secretShown(value: unknown): string {
  if (value === undefined) return '(unset)';
  if (typeof value === 'string') return `plaintext ${maskSecret(value)}`;
  if (isObj(value) && typeof value.source === 'string') return `reference ${show(value.source)}:${show(value.provider)}:${show(value.id)}`;
  return '(not a string)';
}

function show(value: unknown): string {
  if (value === undefined) return '(unset)';
  if (typeof value === 'string') return value;
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

function isObj(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function obj(value: unknown): Record<string, any> {
  return isObj(value) ? { ...value } : {};
}
