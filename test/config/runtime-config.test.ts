import JSON5 from 'json5';
import { describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import {
  desiredRuntimeConfig,
  parseRuntimeConfig,
  sameConfig,
  serializeRuntimeConfig,
  type ManagedSettings,
} from '../../src/config/runtime-config.js';
import { loadProfile } from '../../src/profile.js';

const profile = loadProfile({});
const settings: ManagedSettings = {
  answers: { modelId: 'model-a' },
  profile,
  components: loadComponents({}),
  channel: false,
};

describe('display name (prompt 1)', () => {
  const named = { ...settings, answers: { ...settings.answers, customerName: 'Acme Dental GmbH' } };
  it('is the identity name and entry name of the default agent, main on a fresh config', () => {
    const c = desiredRuntimeConfig(undefined, named) as any;
    expect(c.agents.entries).toEqual({ main: { name: 'Acme Dental GmbH', identity: { name: 'Acme Dental GmbH' } } });
  });
  it('goes to the first configured agent, keeping its other settings and identity fields', () => {
    const c = desiredRuntimeConfig({ agents: { entries: { front: { workspace: '/w', identity: { name: 'Old', emoji: '🦷' } }, other: {} } } }, named) as any;
    expect(c.agents.entries.front).toEqual({ workspace: '/w', name: 'Acme Dental GmbH', identity: { name: 'Acme Dental GmbH', emoji: '🦷' } });
    expect(c.agents.entries.other).toEqual({});
  });
  it('a legacy agents.list is named in place (OpenClaw migrates it to entries)', () => {
    const c = desiredRuntimeConfig({ agents: { list: [{ id: 'helper', model: 'x' }] } }, named) as any;
    expect(c.agents.list).toEqual([{ id: 'helper', model: 'x', name: 'Acme Dental GmbH', identity: { name: 'Acme Dental GmbH' } }]);
    expect(c.agents.entries).toBeUndefined();
  });
  it('a heartbeat the user tuned keeps its other keys; the managed ones are put right', () => {
    const c = desiredRuntimeConfig({ agents: { defaults: { heartbeat: { every: '5m', target: 'owner', activeHours: { start: '08:00', end: '20:00' } } } } }, named) as any;
    expect(c.agents.defaults.heartbeat).toEqual({ every: '30m', target: 'none', lightContext: true, isolatedSession: true, model: `service/${profile.heartbeatModelId}`, activeHours: { start: '08:00', end: '20:00' } });
  });
});

describe('desiredRuntimeConfig', () => {
  it('writes the spec 2.7 defaults on an empty config', () => {
    const c = desiredRuntimeConfig(undefined, settings) as any;
    expect(c.gateway).toEqual({
      mode: 'local',
      port: 18789,
      bind: 'loopback',
      auth: { mode: 'token', token: { source: 'file', provider: 'service', id: '/serviceApiKey' } },
      trustedProxies: ['127.0.0.1', '::1'],
    });
    expect(c.models.providers.service.apiKey).toEqual({ source: 'file', provider: 'service', id: '/serviceApiKey' });
    expect(c.mcp.servers.service.headers).toEqual({ Authorization: 'Bearer ${SERVICE_MCP_TOKEN}' });
    expect(c.tools).toMatchObject({ elevated: { enabled: false }, fs: { workspaceOnly: true } });
    expect(c.tools.exec).toBeUndefined();
    expect(c.tools.deny).toEqual(expect.arrayContaining(['group:runtime', 'group:automation', 'gateway', 'cron']));
    expect(c.models.providers.service.models).toEqual([
      { id: 'model-a', name: 'model-a', contextWindow: 200000, maxTokens: 16000 },
      { id: profile.heartbeatModelId, name: profile.heartbeatModelId, contextWindow: 200000, maxTokens: 16000 },
    ]);
    expect(c.models.providers.service.baseUrl).toBe(profile.aiGatewayUrl);
    expect(c.agents.defaults.heartbeat).toEqual({ every: '30m', target: 'none', lightContext: true, isolatedSession: true, model: `service/${profile.heartbeatModelId}` });
    expect(c.tools.byProvider).toEqual({ [`service/${profile.heartbeatModelId}`]: { allow: ['session_status'] } });
    expect(c.session.reset).toEqual({ mode: 'idle', idleMinutes: 7 * 24 * 60 });
    // QMD: the one resident server over HTTP (no process per session), and the idle limit.
    expect(c.mcp.servers.qmd).toEqual({ url: 'http://127.0.0.1:18788/mcp', transport: 'streamable-http', requestTimeoutMs: 60000 });
    expect(c.mcp.sessionIdleTtlMs).toBe(300_000);
    expect(c.plugins.entries['service-channel']).toBeUndefined();
  });

  it('is idempotent: applying it to its own output changes nothing', () => {
    const once = desiredRuntimeConfig(undefined, { ...settings, channel: true });
    const twice = desiredRuntimeConfig(once, { ...settings, channel: true });
    expect(twice).toEqual(once);
    expect(sameConfig(once, twice)).toBe(true);
  });

  it('removes other providers, fallbacks and the legacy gateway.token, keeps user keys', async () => {
    const existing = await parseRuntimeConfig(`{
      // user comment
      gateway: { token: 'legacy', controlUi: { enabled: false } },
      models: { mode: 'merge', providers: { openai: { baseUrl: 'https://api.vendor.example/v1', apiKey: 'sk-x' }, service: { baseUrl: 'https://evil.example' } } },
      agents: { defaults: { model: { primary: 'openai/gpt', fallbacks: ['openai/gpt-mini'] }, workspace: '/srv/ws' } },
      mcp: { servers: { crm2: { url: 'https://crm.example/mcp' } } },
      plugins: { allow: ['my-plugin'], load: { paths: ['/opt/mine'] }, entries: { 'my-plugin': { enabled: true } } },
      channels: { telegram: { enabled: true } },
    }`);
    const c = desiredRuntimeConfig(existing, { ...settings, channel: true }) as any;
    expect(c.gateway.token).toBeUndefined();
    expect(c.gateway.controlUi).toEqual({ enabled: false });
    expect(Object.keys(c.models.providers)).toEqual(['service']);
    expect(c.models.providers.service.baseUrl).toBe(profile.aiGatewayUrl);
    expect(c.agents.defaults.model).toEqual({ primary: 'service/model-a' });
    expect(c.agents.defaults.workspace).toBe('/srv/ws');
    expect(Object.keys(c.mcp.servers).sort()).toEqual(['crm2', 'qmd', 'service']);
    expect(c.plugins.allow).toEqual(['my-plugin', 'lossless-claw', 'service-channel']);
    expect(c.plugins.load.paths[0]).toBe('/opt/mine');
    expect(c.plugins.entries['my-plugin']).toEqual({ enabled: true });
    expect(c.plugins.entries['service-channel']).toEqual({ enabled: true });
    expect(c.channels).toEqual({ telegram: { enabled: true } });
  });

  it('replaces a stdio qmd server (the install before issue 26) and a user\'s idle limit; keeps other MCP keys', () => {
    const existing = { mcp: { sessionIdleTtlMs: 0, servers: { qmd: { command: '/opt/service-deploy/qmd/node_modules/.bin/qmd', args: ['mcp'], transport: 'stdio' }, notes: { url: 'https://notes.example/mcp' } } } };
    const c = desiredRuntimeConfig(existing, settings) as any;
    expect(c.mcp.servers.qmd).toEqual({ url: 'http://127.0.0.1:18788/mcp', transport: 'streamable-http', requestTimeoutMs: 60000 });
    expect(c.mcp.servers.notes).toEqual({ url: 'https://notes.example/mcp' });
    expect(c.mcp.sessionIdleTtlMs).toBe(300_000);
  });

  it('does not mutate its input', () => {
    const existing = { gateway: { token: 'x' } };
    desiredRuntimeConfig(existing, settings);
    expect(existing).toEqual({ gateway: { token: 'x' } });
  });

  it('serializes to JSON that parses back equal (JSON is valid JSON5)', async () => {
    const c = desiredRuntimeConfig(undefined, settings);
    expect(await parseRuntimeConfig(serializeRuntimeConfig(c))).toEqual(c);
  });

  it('plain JSON (read natively) gives exactly what JSON5 gives, own __proto__ and duplicate keys included', async () => {
    const texts = [
      serializeRuntimeConfig(desiredRuntimeConfig(undefined, settings)),
      '{"a":1,"a":2,"__proto__":{"polluted":true},"n":[1e400,-0,0.1,"\\u00e9\\ud83d\\ude00"],"deep":{"x":null}}',
      '{ "unicode": "Grüße 日本語", "empty": {}, "list": [] }',
    ];
    for (const text of texts) {
      const native = await parseRuntimeConfig(text);
      const json5 = JSON5.parse(text);
      expect(native).toStrictEqual(json5);
      expect(Object.getPrototypeOf(native)).toBe(Object.prototype);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    }
    // JSON5 proper (comments, trailing commas, unquoted keys) still parses.
    expect(await parseRuntimeConfig('{ // ours\n  gateway: { token: "x", },\n}')).toEqual({ gateway: { token: 'x' } });
  });

  it('rejects a config that is not an object', async () => {
    await expect(parseRuntimeConfig('[1,2]')).rejects.toThrow(/not an object/);
    await expect(parseRuntimeConfig('{ bad')).rejects.toThrow();
  });
});
