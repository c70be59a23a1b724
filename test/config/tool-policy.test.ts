import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import { desiredRuntimeConfig } from '../../src/config/runtime-config.js';
import { CHANNEL_PATH, newSecret, signRequest } from '../../src/channel/protocol.js';
import { LAYOUT } from '../../src/layout.js';
import { loadProfile } from '../../src/profile.js';
import { pluginFiles } from '../../src/steps/channel.js';
import { budget } from '../helpers/budget.js';
import { startFakeProvider, startGateway, type FakeProvider, type RunningGateway } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Issue 27 item 3: the tools a channel turn is offered, in the real pinned gateway, under
 * the tool settings the install writes (tools.*, skills.workshop). The bundled plugins
 * file-transfer (file_fetch, file_write, dir_list, dir_fetch) and ollama
 * (node_inference) come in through `group:plugins`; the policy denies them by name.
 * The e2e lists the same on the server, with the MCP servers and the browser.
 */
const NODE_TOOLS = ['file_fetch', 'file_write', 'dir_list', 'dir_fetch', 'node_inference'];
const token = newSecret();
const edge = newSecret();
const knock = newSecret();
let provider: FakeProvider;
let gateway: RunningGateway;

beforeAll(async () => {
  provider = await startFakeProvider();
  const pluginDir = tempDir('sd-plugin-');
  for (const file of pluginFiles()) fs.writeFileSync(path.join(pluginDir, path.relative(LAYOUT.channelPluginDir, file.path)), file.content, { mode: file.mode });
  const installed = desiredRuntimeConfig(undefined, { answers: { modelId: 'test-model' }, profile: loadProfile({}), components: loadComponents({}), channel: true }) as Record<string, any>;
  gateway = await startGateway({
    pluginDir,
    providerUrl: provider.url,
    env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge },
    configure: (config) => {
      config.tools = installed.tools;
      config.skills = installed.skills;
    },
  });
}, budget(420_000));

afterAll(async () => {
  await gateway?.stop();
  await provider?.close();
}, 60_000);

describe('the tools a channel turn is offered (real gateway, the installed tool policy)', () => {
  it('none of the node tools, no shell, no control plane; the file, memory and session tools stay', async () => {
    const body = JSON.stringify({ message: 'which tools do you have?' });
    const res = await fetch(`${gateway.url}${CHANNEL_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-edge': edge, 'x-service-gateway': knock, 'x-real-ip': '198.51.100.1', 'x-forwarded-for': '198.51.100.1', ...signRequest({ token, body }) },
      body,
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const offered = provider.requests.at(-1)!.toolNames;
    console.log(`tools offered to a channel turn (${offered.length}): ${offered.join(', ')}`);
    for (const tool of NODE_TOOLS) expect(offered, tool).not.toContain(tool);
    for (const tool of ['exec', 'process', 'bash', 'code_execution', 'gateway', 'cron', 'automations', 'nodes', 'computer', 'sessions_spawn', 'sessions_send', 'subagents', 'terminal', 'canvas']) expect(offered, tool).not.toContain(tool);
    expect(offered).toEqual(expect.arrayContaining(['read', 'write', 'memory_search']));
  }, budget(180_000));
});
