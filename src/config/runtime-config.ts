import type { Answers } from '../answers/index.js';
import type { Components } from '../components.js';
import type { ServiceProfile } from '../profile.js';
import { GATEWAY_PORT, LAYOUT, QMD_MCP_PORT } from '../layout.js';

/** Spec 2.7 defaults. */
export const RUNTIME_DEFAULTS = {
  contextWindow: 200_000,
  maxTokens: 16_000,
  gatewayPort: GATEWAY_PORT,
  heartbeatEvery: '30m',
  sessionIdleMinutes: 7 * 24 * 60,
} as const;

export const SERVICE_MCP_SERVER = 'service';
export const QMD_MCP_SERVER = 'qmd';
export const CHANNEL_PLUGIN_ID = 'service-channel';

export type RuntimeConfig = Record<string, unknown>;

export interface ManagedSettings {
  /** Only the model and the display name: secrets reach openclaw.json as references (see confinement below). */
  answers: Pick<Answers, 'modelId'> & Partial<Pick<Answers, 'customerName'>>;
  profile: ServiceProfile;
  components: Components;
  /** Load and enable the service-channel plugin (catalog deploy / --channel). */
  channel: boolean;
  /** The headless browser's executable, when the browser skill is installed. */
  browserExecutable?: string;
}

/**
 * Parses openclaw.json (JSON5: comments and trailing commas are allowed there). Plain
 * JSON, what we write, parses natively to the same value (JSON5 is a superset of JSON,
 * and both define every key as an own property, `__proto__` included); JSON5's parser,
 * many times slower, only reads a file that is not plain JSON, and is loaded only then
 * (a guard, doctor or re-run on a file we wrote never loads it).
 */
export async function parseRuntimeConfig(text: string): Promise<RuntimeConfig> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = (await import('json5')).default.parse(text);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('openclaw.json is not an object');
  return parsed as RuntimeConfig;
}

export function serializeRuntimeConfig(config: RuntimeConfig): string {
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** The one provider entry allowed in models.providers. */
export function serviceProvider(settings: Pick<ManagedSettings, 'answers' | 'profile'>) {
  const { answers, profile } = settings;
  return {
    baseUrl: profile.aiGatewayUrl,
    apiKey: SERVICE_API_KEY_REF,
    api: profile.aiGatewayApi,
    models: [answers.modelId, ...heartbeatOnlyModel(profile, answers.modelId)].map((id) => ({
      id,
      name: id,
      contextWindow: RUNTIME_DEFAULTS.contextWindow,
      maxTokens: RUNTIME_DEFAULTS.maxTokens,
    })),
  };
}

export function primaryModel(profile: ServiceProfile, modelId: string): string {
  return `${profile.gatewayProviderName}/${modelId}`;
}

/**
 * The config the deployment wants: the existing one (user keys kept) with every
 * managed setting put right, the legacy top-level gateway.token migrated away, and
 * models.providers reduced to the service provider. Pure: same input, same output.
 */
export function desiredRuntimeConfig(existing: RuntimeConfig | undefined, settings: ManagedSettings): RuntimeConfig {
  const config = structuredClone(existing ?? {}) as Record<string, any>;
  const { profile, answers, components } = settings;

  const gateway = obj(config.gateway);
  delete gateway.token; // legacy (before 2026.5): now gateway.auth.token
  config.gateway = {
    ...gateway,
    mode: 'local',
    port: RUNTIME_DEFAULTS.gatewayPort,
    bind: 'loopback',
    // Spec 2.7: token auth whose value is the service API key, by reference.
    auth: { ...obj(gateway.auth), mode: 'token', token: SERVICE_API_KEY_REF },
    trustedProxies: GATEWAY_TRUSTED_PROXIES,
  };

  config.models = {
    ...obj(config.models),
    mode: 'replace',
    providers: { [profile.gatewayProviderName]: serviceProvider(settings) },
  };

  const agents = obj(config.agents);
  const defaults = obj(agents.defaults);
  config.agents = {
    ...agents,
    defaults: {
      ...defaults,
      model: { ...obj(defaults.model), primary: primaryModel(profile, answers.modelId) },
    },
  };
  if (answers.customerName !== undefined) setDisplayName(config, answers.customerName);
  // A per-model fallback list pointing at other providers would bypass the gateway.
  delete config.agents.defaults.model.fallbacks;

  const session = obj(config.session);
  config.session = { ...session, reset: { ...obj(session.reset), mode: 'idle', idleMinutes: RUNTIME_DEFAULTS.sessionIdleMinutes } };
  config.session.maintenance = managedSessionMaintenance(session.maintenance);

  const mcp = obj(config.mcp);
  config.mcp = withManagedMcp({
    ...mcp,
    servers: {
      ...obj(mcp.servers),
      [SERVICE_MCP_SERVER]: {
        url: profile.mcpUrl,
        transport: 'streamable-http',
        headers: { Authorization: MCP_AUTHORIZATION_HEADER },
      },
    },
  });

  const plugins = obj(config.plugins);
  const engineId = components.losslessClaw.pluginId;
  const ours = [engineId, ...(settings.channel ? [CHANNEL_PLUGIN_ID] : [])];
  const paths = [`/opt/service-deploy/plugins/node_modules/${components.losslessClaw.package}`, ...(settings.channel ? [LAYOUT.channelPluginDir] : [])];
  const load = obj(plugins.load);
  const entries = obj(plugins.entries);
  config.plugins = {
    ...plugins,
    enabled: true,
    // plugins.allow is an allowlist that also gates bundled plugins: extend one the user
    // keeps, never start one.
    ...(Array.isArray(plugins.allow) ? { allow: union(plugins.allow, ours) } : {}),
    load: { ...load, paths: union(arr(load.paths), paths) },
    slots: { ...obj(plugins.slots), contextEngine: engineId },
    entries: {
      ...entries,
      ...Object.fromEntries(ours.map((id) => [id, { ...obj(entries[id]), enabled: true }])),
    },
  };

  if (settings.browserExecutable) {
    config.browser = { ...obj(config.browser), enabled: true, executablePath: settings.browserExecutable, headless: true, noSandbox: true };
  }
  applyConfinement(config);
  applyManagedHeartbeat(config, { profile, modelId: answers.modelId });
  return config;
}

// ---- MCP: QMD's resident server and the runtimes' idle limit (issue 26 item 1) ------
// The install, the guard (guard/routing.ts) and doctor share these definitions.

/** The resident QMD MCP server (qmd-mcp.service, steps/memory-service.ts). */
export const QMD_MCP_URL = `http://127.0.0.1:${QMD_MCP_PORT}/mcp`;
/**
 * requestTimeoutMs: the pinned OpenClaw gives a new session's MCP runtime 1.5 s to list
 * a server's tools (BUNDLE_MCP_CATALOG_LIST_TIMEOUT_MS in agents/agent-bundle-mcp-runtime)
 * unless the server has a requestTimeoutMs, and a turn whose listing ran out goes ahead
 * without that server's tools, saying so only in the gateway's log. Under load (36 new
 * portal sessions at once on a busy 2-core server, e2e 5c) QMD's listing took longer for
 * 2 turns. 60 s is the release's own default for a tool call, so only the listing changes.
 */
export const QMD_MCP_REQUEST_TIMEOUT_MS = 60_000;
export const QMD_MCP_ENTRY = { url: QMD_MCP_URL, transport: 'streamable-http', requestTimeoutMs: QMD_MCP_REQUEST_TIMEOUT_MS } as const;

/**
 * mcp.sessionIdleTtlMs: OpenClaw keeps a session's MCP runtime (its connections to the
 * `service` and `qmd` servers) until the session is reset or deleted, and a gateway
 * admits at most 256 live runtimes; after that new sessions get no MCP tools. Portal
 * sessions are never reset by the runtime, so only this idle limit retires them. Live
 * runtimes ~ new sessions per minute x (TTL + the 1-minute sweep): 5 minutes keeps one
 * portal address at the channel's rate limit (10 a minute) at 60, and the cap is only
 * reached above 42 new sessions a minute, sustained. A session that writes again after
 * 5 idle minutes gets a new runtime: an MCP initialize and tools/list on each server.
 * docs/components.md ("MCP runtimes") has the sizing; the soak measures it.
 */
export const MCP_SESSION_IDLE_TTL_MS = 5 * 60_000;

/** The mcp block with the managed values in place (other servers and keys kept). */
export function withManagedMcp(existing: unknown): Record<string, any> {
  const mcp = obj(existing);
  return { ...mcp, sessionIdleTtlMs: MCP_SESSION_IDLE_TTL_MS, servers: { ...obj(mcp.servers), [QMD_MCP_SERVER]: { ...QMD_MCP_ENTRY } } };
}
// ---- end of MCP ---------------------------------------------------------------------

// ------------------------------------------------------------- confinement (issue 20)
// What the agent may touch and where its secrets live. docs/security.md explains each
// choice; the guard (guard/routing.ts) holds the same values.

/** The file SecretRef provider reading the root-only secret source (LAYOUT.runtimeSecretsFile). */
export const SECRET_PROVIDER = 'service';

export const SECRET_PROVIDER_CONFIG = { source: 'file', path: LAYOUT.runtimeSecretsFile, mode: 'json', timeoutMs: 5000 } as const;

/** Keys of the secret source (a JSON object); each one a SecretRef id `/<key>`. */
export const SECRET_SOURCE_KEYS = { serviceApiKey: 'serviceApiKey' } as const;

/** gateway.auth.token and the provider's apiKey: both the service API key (spec 2.7). */
export const SERVICE_API_KEY_REF = { source: 'file', provider: SECRET_PROVIDER, id: `/${SECRET_SOURCE_KEYS.serviceApiKey}` } as const;

/**
 * mcp.servers.*.headers take no SecretRef (strings only, not on the pinned release's
 * SecretRef credential surface): an env placeholder, filled in the gateway's
 * environment from the same root-only source (LAYOUT.runtimeSecretsEnv via the unit).
 */
export const MCP_TOKEN_ENV = 'SERVICE_MCP_TOKEN';
export const MCP_AUTHORIZATION_HEADER = `Bearer \${${MCP_TOKEN_ENV}}`;

/** nginx (the channel proxy) on loopback is the only proxy in front of the gateway. */
export const GATEWAY_TRUSTED_PROXIES = ['127.0.0.1', '::1'];

/**
 * Tools of bundled plugins OpenClaw enables by default that reach paired nodes: the
 * file-transfer plugin's file_fetch, file_write, dir_list, dir_fetch and the ollama
 * plugin's node_inference. `group:nodes` does not cover them (only `nodes` and
 * `computer`); they came in through `group:plugins` (issue 27).
 */
export const NODE_TOOLS = ['file_fetch', 'file_write', 'dir_list', 'dir_fetch', 'node_inference'] as const;

/**
 * The tool policy of a business assistant that takes untrusted chat: the MCP tools
 * (CRM, calendar, SMS/e-mail, QMD memory), the browser, memory and files inside the
 * workspace. No shell or process tools, no elevated exec, no control-plane tools
 * (gateway, cron/automations, plugins, nodes), no sub-agents or cross-session sends.
 * Plugin tools by name, never `group:plugins`: that group admits every tool of every
 * plugin OpenClaw enables, today's node tools and whatever a later release adds.
 */
export const TOOL_POLICY = {
  profile: 'minimal',
  alsoAllow: ['group:fs', 'group:memory', 'browser', 'bundle-mcp', 'lossless-claw'],
  deny: ['group:runtime', 'group:automation', 'group:nodes', ...NODE_TOOLS, 'gateway', 'cron', 'sessions_spawn', 'sessions_send', 'subagents', 'terminal', 'canvas', 'code_execution'],
  fs: { workspaceOnly: true },
  // Every allowed tool offered directly (the list is short): no catalog search/call
  // tools that reach tools by name.
  toolSearch: false,
  // No tools.exec section: exec is denied above, and a configured exec section makes
  // the runtime's doctor suggest widening the profile.
  elevated: { enabled: false },
  agentToAgent: { enabled: false },
  sessions: { visibility: 'self' },
} as const;

/**
 * Puts the confinement settings in place, in place: managed values win, other user keys
 * stay. The install (desiredRuntimeConfig) and the hourly guard (guard/confinement.ts)
 * both call it, so they keep one tool policy.
 */
export function applyConfinement(config: Record<string, any>): void {
  const secrets = obj(config.secrets);
  config.secrets = { ...secrets, providers: { ...obj(secrets.providers), [SECRET_PROVIDER]: { ...SECRET_PROVIDER_CONFIG } } };
  const tools = obj(config.tools);
  config.tools = { ...tools, ...structuredClone(TOOL_POLICY), fs: { ...obj(tools.fs), ...TOOL_POLICY.fs } };
  delete config.tools.allow; // an allow list would widen the profile
  // No self-learning: a skill written from untrusted chat would steer every later session.
  const skills = obj(config.skills);
  const workshop = obj(skills.workshop);
  config.skills = { ...skills, workshop: { ...workshop, autonomous: { ...obj(workshop.autonomous), mode: 'off' } } };
  if (config.browser !== undefined) {
    // No Chrome extension relay here: its legacy (v1) authentication stays off.
    const browser = obj(config.browser);
    config.browser = { ...browser, extensionRelay: { ...obj(browser.extensionRelay), allowLegacyAuth: false } };
  }
}
// --------------------------------------------------------- end confinement (issue 20)
// ---- the session store's bound (issue 26 item 3) ---------------------------------

/** The sessions' disk budget below, in bytes (the doctor's `stores` check compares with it). */
export const SESSION_DISK_BUDGET_BYTES = 512 * 1024 ** 2;

/**
 * The runtime's own maintenance of the per-agent session store (the SQLite rows and
 * transcripts in agents/<id>/agent/openclaw-agent.sqlite, and agents/<id>/sessions/),
 * made a bound that holds for months of portal chats (docs/operations.md, "Stores"):
 *
 * - maxDiskBytes: the pinned release's default is 10 GB, more than the 3 GiB free disk
 *   preflight asks for, of which the deployment itself takes about half. 512 MiB leaves
 *   room for the journal, the logs and a few backups (each holds this store).
 * - pruneAfter: its default (30 d) archives an idle durable session "in place" with the
 *   reason age-retention, and the disk budget never deletes those (only sessions the
 *   maxEntries cap archived): every portal session would stay on disk forever. A span
 *   no deployment reaches turns that off; then the cap (maxEntries, default 5000
 *   unarchived sessions) archives the oldest, and the disk budget deletes them oldest
 *   first. Portal sessions end after 7 idle days anyway (session.reset).
 * - mode: enforce (the default, written so doctor names a change to warn-only).
 */
export const SESSION_MAINTENANCE = {
  mode: 'enforce',
  pruneAfter: '3650d',
  maxDiskBytes: `${SESSION_DISK_BUDGET_BYTES / 1024 ** 2}mb`,
} as const;

export function managedSessionMaintenance(existing: unknown): Record<string, unknown> {
  return { ...obj(existing), ...SESSION_MAINTENANCE };
}
// ---- end of the session store's bound ---------------------------------------------
// ---- display name and heartbeat (issue 18 items 1 and 3, issue 26 item 6) --------
// Kept together and apart from the rest so the install, the guard and doctor share one
// definition of these managed settings.

/**
 * The heartbeat (spec 2.7: every 30 minutes, "the agent's health check"): a real model
 * turn, at the least cost that keeps it one. `target: none` runs it internal-only (the
 * pinned OpenClaw's default target is the owner's DM, and this deployment has no
 * messaging channel, so every run was skipped with "no-route"); `lightContext` skips the
 * workspace bootstrap files and `isolatedSession` starts each run without the
 * conversation history, so its prompt does not grow with the conversation. No monitor
 * scratch is written: the runtime's default prompt alone is the smallest (an empty
 * scratch would skip the model call, which is no check). docs/components.md has the
 * measured cost.
 */
export const MANAGED_HEARTBEAT = {
  every: RUNTIME_DEFAULTS.heartbeatEvery,
  target: 'none',
  lightContext: true,
  isolatedSession: true,
} as const;

/**
 * The tools of a heartbeat run on its own model (`tools.byProvider["<provider>/<model>"]`,
 * the runtime's per-model restriction on top of the agent's policy; the heartbeat config
 * has no tool list of its own). One tool, because the runtime refuses a run with none
 * ("No callable tools remain") and then falls back to the chat model with all of them:
 * `session_status`, read-only. Without the read tool the runtime also leaves the skills
 * list and memory-recall guidance out of the system prompt. The chat keeps its tools:
 * this applies only to runs on the heartbeat's model.
 */
export const HEARTBEAT_TOOL_POLICY = { allow: ['session_status'] } as const;

export interface HeartbeatSettings {
  profile: Pick<ServiceProfile, 'gatewayProviderName' | 'heartbeatModelId'>;
  /** The customer's chat model (answers.modelId). */
  modelId: string;
}

/**
 * The profile's heartbeat model when it is not the chat model: the one extra model entry
 * of the service provider. Compared without case, as the runtime matches byProvider keys:
 * a restriction on "x" would also catch a chat model "X".
 */
function heartbeatOnlyModel(profile: HeartbeatSettings['profile'], modelId: string): string[] {
  const id = profile.heartbeatModelId;
  return id !== undefined && id.toLowerCase() !== modelId.toLowerCase() ? [id] : [];
}

/** `<provider>/<model>` of the heartbeat's own model, or undefined: the heartbeat runs on the chat model. */
export function heartbeatModel(settings: HeartbeatSettings): string | undefined {
  const [id] = heartbeatOnlyModel(settings.profile, settings.modelId);
  return id === undefined ? undefined : `${settings.profile.gatewayProviderName}/${id}`;
}

/**
 * agents.defaults.heartbeat as managed: the keys above, and `model` the heartbeat model
 * on the one service provider or none (a model elsewhere would leave the gateway, SPEC
 * 2.7). The user's other keys (activeHours, prompt...) stay.
 */
export function managedHeartbeat(existing: unknown, settings: HeartbeatSettings): Record<string, unknown> {
  const { model: _model, ...rest } = obj(existing);
  const model = heartbeatModel(settings);
  return { ...rest, ...MANAGED_HEARTBEAT, ...(model === undefined ? {} : { model }) };
}

/**
 * tools.byProvider as managed: the heartbeat model's entry is HEARTBEAT_TOOL_POLICY, and
 * an entry of ours left from an earlier heartbeat model is removed (above all one on
 * what is now the chat model, which would take the chat's tools away). The user's other
 * entries stay. Undefined: no byProvider at all.
 */
export function managedToolsByProvider(existing: unknown, settings: HeartbeatSettings): Record<string, unknown> | undefined {
  const model = heartbeatModel(settings);
  const kept = Object.fromEntries(Object.entries(obj(existing)).filter(([key, policy]) => key === model || !sameConfig(policy, HEARTBEAT_TOOL_POLICY)));
  const byProvider = model === undefined ? kept : { ...kept, [model]: structuredClone(HEARTBEAT_TOOL_POLICY) };
  return Object.keys(byProvider).length > 0 ? byProvider : undefined;
}

/** Puts the managed heartbeat and its tool restriction in place (the install; the guard applies the same two functions in guard/managed.ts). */
export function applyManagedHeartbeat(config: Record<string, any>, settings: HeartbeatSettings): void {
  const agents = obj(config.agents);
  const defaults = obj(agents.defaults);
  config.agents = { ...agents, defaults: { ...defaults, heartbeat: managedHeartbeat(defaults.heartbeat, settings) } };
  const { byProvider: existing, ...tools } = obj(config.tools);
  const byProvider = managedToolsByProvider(existing, settings);
  if (byProvider !== undefined || config.tools !== undefined) config.tools = { ...tools, ...(byProvider === undefined ? {} : { byProvider }) };
}

/** The agent entry whose identity the Control UI shows: the first configured one, else `main`. */
export function displayAgentId(config: RuntimeConfig): string {
  const agents = obj(config.agents);
  const entries = Object.keys(obj(agents.entries));
  if (entries.length > 0) return entries[0]!;
  const listed = arr(agents.list).find((entry) => typeof obj(entry).id === 'string');
  return listed ? (obj(listed).id as string) : 'main';
}

/** The display name the config carries now (agents.entries.<id>.identity.name, or a legacy agents.list entry's). */
export function displayNameOf(config: RuntimeConfig): unknown {
  const agents = obj(config.agents);
  const id = displayAgentId(config);
  const entry = obj(agents.entries)[id] ?? arr(agents.list).find((e) => obj(e).id === id);
  return obj(obj(entry).identity).name;
}

/**
 * Prompt 1 is the agent's display name (spec 1.2): the identity name the Control UI shows
 * as the assistant's name, and the entry's own name, of the agent OpenClaw resolves by
 * default. In place; other identity fields (emoji, avatar) and entry settings are kept.
 */
export function setDisplayName(config: Record<string, any>, name: string): void {
  const agents = obj(config.agents);
  const id = displayAgentId(config);
  if (Object.keys(obj(agents.entries)).length === 0 && Array.isArray(agents.list)) {
    agents.list = agents.list.map((entry: unknown) => (obj(entry).id === id ? named(entry, name) : entry));
  } else {
    const entries = obj(agents.entries);
    agents.entries = { ...entries, [id]: named(entries[id], name) };
  }
  config.agents = agents;
}

function named(entry: unknown, name: string): Record<string, unknown> {
  const current = obj(entry);
  return { ...current, name, identity: { ...obj(current.identity), name } };
}
// ---- end of display name and heartbeat --------------------------------------------

/** Deep equality of two parsed configs (key order ignored). */
export function sameConfig(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
  }
  return value;
}

function obj(value: unknown): Record<string, any> {
  return value && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
}

function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function union(existing: unknown[], wanted: string[]): unknown[] {
  return [...existing, ...wanted.filter((w) => !existing.includes(w))];
}
