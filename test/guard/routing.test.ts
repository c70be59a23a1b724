import { describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import { desiredRuntimeConfig } from '../../src/config/runtime-config.js';
import { enforceRouting } from '../../src/guard/routing.js';
import { loadProfile } from '../../src/profile.js';

const profile = loadProfile({});
const components = loadComponents({});
const answers = { apiKey: 'pkt_live_1234567890abcdef', modelId: 'model-a', mcpToken: 'mcp_x_123456789', customerName: 'Acme', meshHostname: 'openclaw-acme' };
const good = () => desiredRuntimeConfig(undefined, { answers, profile, components, channel: true }) as Record<string, any>;
const P = profile.gatewayProviderName;

describe('enforceRouting', () => {
  it('agrees with the install: a config the install wrote needs no restoration', () => {
    const { restorations, config } = enforceRouting(good(), answers, profile) as { restorations: any[]; config: any };
    expect(restorations).toEqual([]);
    expect(config).toEqual(good());
  });

  it('removes an extra provider and names a direct vendor provider as such', () => {
    const c = good();
    c.models.providers.anthropic = { baseUrl: 'https://api.anthropic.com', apiKey: 'sk-ant-verysecretkey123' };
    c.models.providers.mirror = { baseUrl: 'https://llm.example.net/v1', apiKey: 'zzzzzzzzzzzzzzzz' };
    const { config, restorations } = enforceRouting(c, answers, profile) as { restorations: any[]; config: any };
    expect(Object.keys(config.models.providers)).toEqual([P]);
    expect(restorations.map((r) => [r.what, r.after])).toEqual([
      ['models.providers.anthropic', 'removed'],
      ['models.providers.mirror', 'removed'],
    ]);
    expect(restorations[0]!.before).toMatch(/^direct model-vendor provider \(baseUrl https:\/\/api\.anthropic\.com/);
    expect(restorations[1]!.before).toMatch(/^extra provider/);
    expect(JSON.stringify(restorations)).not.toContain('verysecret');
  });

  it('restores a changed base URL, API type and a plaintext key (masked) to the reference', () => {
    const c = good();
    c.models.providers[P].baseUrl = 'https://evil.example.com/v1';
    c.models.providers[P].api = 'anthropic-messages';
    c.models.providers[P].apiKey = 'pkt_other_key_9999999999';
    const { config, restorations } = enforceRouting(c, answers, profile) as { restorations: any[]; config: any };
    expect(config).toEqual(good());
    expect(restorations.map((r) => r.what)).toEqual([`models.providers.${P}.baseUrl`, `models.providers.${P}.api`, `models.providers.${P}.apiKey`]);
    const key = restorations[2]!;
    expect(key.before).toBe('plaintext pkt_****9999');
    expect(key.after).toBe('reference file:service:/serviceApiKey');
    expect(JSON.stringify(restorations)).not.toContain('pkt_other_key_9999999999');
    expect(JSON.stringify(config)).not.toContain(answers.apiKey);
  });

  it('puts the secret references and their provider back (a provider pointed elsewhere would hand over another key)', () => {
    const c = good();
    c.gateway.auth.token = answers.apiKey;
    c.secrets.providers.service = { source: 'file', path: '/root/.openclaw/workspace/keys.json', mode: 'json' };
    const { config, restorations } = enforceRouting(c, answers, profile) as { restorations: any[]; config: any };
    expect(config).toEqual(good());
    expect(restorations.map((r) => [r.what, r.before, r.after])).toEqual([
      ['gateway.auth.token', 'plaintext pkt_****cdef', 'reference file:service:/serviceApiKey'],
      ['secrets.providers.service', 'file /root/.openclaw/workspace/keys.json', 'file /var/lib/service-deploy/runtime-secrets/secrets.json'],
    ]);
    expect(JSON.stringify(restorations)).not.toContain(answers.apiKey);
  });

  it('puts the default model back on the service provider and drops fallbacks and foreign per-agent models', () => {
    const c = good();
    c.agents.defaults.model = { primary: 'openai/gpt-5', fallbacks: ['anthropic/claude'] };
    c.agents.list = [{ id: 'main', model: 'anthropic/claude-x' }, { id: 'ok', model: `${P}/model-a` }];
    const { config, restorations } = enforceRouting(c, answers, profile) as { restorations: any[]; config: any };
    expect(config.agents.defaults.model).toEqual({ primary: `${P}/model-a` });
    expect(config.agents.list).toEqual([{ id: 'main' }, { id: 'ok', model: `${P}/model-a` }]);
    expect(restorations.map((r) => r.what)).toEqual(['agents.defaults.model.primary', 'agents.defaults.model.fallbacks', 'agents.list[main].model']);
  });

  it('restores a removed gateway.auth and migrates the legacy gateway.token', () => {
    const c = good();
    delete c.gateway.auth;
    c.gateway.token = 'pkt_old_token_123456789';
    const { config, restorations } = enforceRouting(c, answers, profile) as { restorations: any[]; config: any };
    expect(config.gateway.auth).toEqual({ mode: 'token', token: { source: 'file', provider: 'service', id: '/serviceApiKey' } });
    expect(config.gateway.token).toBeUndefined();
    expect(restorations.map((r) => r.what)).toEqual(['gateway.token', 'gateway.auth']);
    expect(JSON.stringify(restorations)).not.toContain('pkt_old_token_123456789');
  });

  it('restores models.mode replace and a loopback bind', () => {
    const c = good();
    c.models.mode = 'merge';
    c.gateway.bind = 'lan';
    const { config, restorations } = enforceRouting(c, answers, profile) as { restorations: any[]; config: any };
    expect(config.models.mode).toBe('replace');
    expect(config.gateway.bind).toBe('loopback');
    expect(restorations.map((r) => r.what).sort()).toEqual(['gateway.bind', 'models.mode']);
  });

  it('puts QMD back on its resident service and the MCP idle limit back (without it sessions lose their tools at 256)', () => {
    const c = good();
    c.mcp.servers.qmd = { command: '/opt/service-deploy/qmd/node_modules/.bin/qmd', args: ['mcp', '--token=hunter2secret'], transport: 'stdio' };
    delete c.mcp.sessionIdleTtlMs;
    const { config, restorations } = enforceRouting(c, answers, profile) as { restorations: any[]; config: any };
    expect(config).toEqual(good());
    expect(restorations.map((r) => [r.what, r.before, r.after])).toEqual([
      ['mcp.servers.qmd', 'stdio command /opt/service-deploy/qmd/node_modules/.bin/qmd', 'streamable-http http://127.0.0.1:18788/mcp, requestTimeoutMs 60000'],
      ['mcp.sessionIdleTtlMs', '(unset)', '300000'],
    ]);
    expect(JSON.stringify(restorations)).not.toContain('hunter2');
    // A URL's user info is not shown either; other MCP servers are the user's.
    const d = good();
    d.mcp.servers.qmd = { url: 'http://agent:pw-secret-1@127.0.0.1:9999/mcp', transport: 'streamable-http' };
    d.mcp.servers.mine = { url: 'https://mine.example/mcp' };
    const second = enforceRouting(d, answers, profile) as { restorations: any[]; config: any };
    expect(second.restorations.map((r) => r.before)).toEqual(['streamable-http http://****@127.0.0.1:9999/mcp']);
    expect(second.config.mcp.servers.mine).toEqual({ url: 'https://mine.example/mcp' });
    // A deployment from before the listing timeout (or one with it removed) gets it back.
    const e = good();
    delete e.mcp.servers.qmd.requestTimeoutMs;
    const third = enforceRouting(e, answers, profile) as { restorations: any[]; config: any };
    expect(third.restorations.map((r) => [r.what, r.before, r.after])).toEqual([['mcp.servers.qmd', 'streamable-http http://127.0.0.1:18788/mcp', 'streamable-http http://127.0.0.1:18788/mcp, requestTimeoutMs 60000']]);
    expect(third.config.mcp.servers.qmd.requestTimeoutMs).toBe(60000);
  });

  it('keeps user settings it does not manage', () => {
    const c = good();
    c.ui = { theme: 'dark' };
    c.models.providers.openai = { baseUrl: 'https://api.openai.com/v1' };
    expect((enforceRouting(c, answers, profile).config as any).ui).toEqual({ theme: 'dark' });
  });
});
