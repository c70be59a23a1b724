import { describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import { NODE_TOOLS, TOOL_POLICY, desiredRuntimeConfig } from '../../src/config/runtime-config.js';
import { enforceConfinement } from '../../src/guard/confinement.js';
import { loadProfile } from '../../src/profile.js';

const profile = loadProfile({});
const components = loadComponents({});
const answers = { modelId: 'model-a', customerName: 'Acme' };
const good = () => desiredRuntimeConfig(undefined, { answers, profile, components, channel: true, browserExecutable: '/usr/bin/chromium' }) as Record<string, any>;

describe('the tool policy the install writes (issue 27 item 3)', () => {
  it('denies the node tools by name, and admits plugin tools by plugin, never through group:plugins', () => {
    const { tools } = good();
    expect([...NODE_TOOLS]).toEqual(['file_fetch', 'file_write', 'dir_list', 'dir_fetch', 'node_inference']);
    for (const tool of NODE_TOOLS) expect(tools.deny).toContain(tool);
    expect(tools.alsoAllow).not.toContain('group:plugins');
    // The product's plugin tools: the MCP servers (service, QMD) and the context engine's.
    expect(tools.alsoAllow).toEqual(expect.arrayContaining(['bundle-mcp', components.losslessClaw.pluginId, 'browser', 'group:fs', 'group:memory']));
    expect(tools.deny).toEqual(expect.arrayContaining(['group:runtime', 'group:automation', 'group:nodes', 'gateway', 'cron', 'terminal', 'canvas']));
  });
});

describe('enforceConfinement (the guard keeps the install\'s tool policy)', () => {
  it('agrees with the install: a config the install wrote needs no restoration', () => {
    const { config, restorations } = enforceConfinement(good());
    expect(restorations).toEqual([]);
    expect(config).toEqual(good());
  });

  it('puts back a widened policy: group:plugins allowed again, node tools and exec no longer denied, an allow list', () => {
    const c = good();
    c.tools.alsoAllow = [...c.tools.alsoAllow, 'group:plugins'];
    c.tools.deny = ['group:automation'];
    c.tools.allow = ['exec'];
    c.tools.elevated = { enabled: true };
    const { config, restorations } = enforceConfinement(c) as { config: any; restorations: Array<{ what: string; before: string; after: string }> };
    expect(restorations.map((r) => r.what)).toEqual(['tools.allow', 'tools.alsoAllow', 'tools.deny', 'tools.elevated']);
    expect(restorations.find((r) => r.what === 'tools.allow')).toMatchObject({ before: '["exec"]', after: 'removed' });
    expect(restorations.find((r) => r.what === 'tools.deny')!.after).toContain('node_inference');
    expect(config.tools).toEqual(good().tools);
    expect(config.tools.allow).toBeUndefined();
  });

  it('keeps the user\'s other tools settings and puts back self-learning and the relay auth', () => {
    const c = good();
    c.tools.web = { search: { enabled: false } };
    c.skills.workshop.autonomous.mode = 'on';
    c.browser.extensionRelay.allowLegacyAuth = true;
    const { config, restorations } = enforceConfinement(c) as { config: any; restorations: Array<{ what: string }> };
    expect(restorations.map((r) => r.what)).toEqual(['skills.workshop.autonomous.mode', 'browser.extensionRelay.allowLegacyAuth']);
    expect(config.tools.web).toEqual({ search: { enabled: false } });
    expect(config.skills.workshop.autonomous.mode).toBe('off');
    expect(config.browser.extensionRelay.allowLegacyAuth).toBe(false);
  });

  it('a missing tools section is written whole', () => {
    const c = good();
    delete c.tools;
    const { config, restorations } = enforceConfinement(c) as { config: any; restorations: Array<{ what: string; before: string }> };
    expect(restorations.map((r) => r.what)).toEqual(Object.keys(TOOL_POLICY).map((k) => `tools.${k}`).sort());
    expect(restorations.every((r) => r.before === '(unset)')).toBe(true);
    // The heartbeat model's one-tool list (tools.byProvider) is the managed agent's
    // setting (guard/managed.ts, which runs first), not the tool policy's.
    const { byProvider, ...policy } = good().tools;
    expect(byProvider).toBeDefined();
    expect(config.tools).toEqual(policy);
  });
});
