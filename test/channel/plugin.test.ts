import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_PATH, newSecret, signRequest } from '../../src/channel/protocol.js';
import { REPO } from '../helpers/binary.js';
import { sessionRows } from '../helpers/session-rows.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The plugin's handler (templates/service-channel.index.js, as shipped) in a plain Node
 * server with a scripted runtime: the edge check, the knock-line count, the model name.
 * The real gateway runs it in test/channel/gateway.test.ts and edge.test.ts.
 */
// The plugin's files as the install lays them out (index.js imports ./protocol.js ...).
const pluginDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-plugin-unit-'));
for (const name of ['index.js', 'protocol.js', 'nonce-store.js', 'sessions.js', 'package.json']) fs.copyFileSync(path.join(REPO, 'templates', `service-channel.${name}`), path.join(pluginDir, name));
const plugin = await import(pathToFileURL(path.join(pluginDir, 'index.js')).href);
const { NonceStore } = await import(pathToFileURL(path.join(pluginDir, 'nonce-store.js')).href);

const token = newSecret();
const edge = newSecret();
const knock = newSecret();
let server: http.Server;
let port = 0;
let env: Record<string, string | undefined> = {};
let meta: unknown = { agentMeta: { provider: 'service', model: 'from-the-turn' } };
let config: unknown = {};

beforeAll(async () => {
  const api = {
    logger: { info() {}, warn() {}, error() {} },
    runtime: {
      config: { current: () => config },
      agent: { session: sessionRows().api, resolveAgentWorkspaceDir: () => '/tmp', runEmbeddedAgent: async (p: { prompt: string }) => ({ payloads: [{ text: `reply to ${p.prompt}` }], meta }) },
    },
  };
  const handle = plugin.createHandler(api, new NonceStore(path.join(tempDir(), 'nonces.json')), { env: new Proxy({}, { get: (_, k: string) => env[k] }) });
  server = http.createServer(async (req, res) => {
    if ((await handle(req, res)) === false) res.writeHead(404).end('no route');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  fs.rmSync(pluginDir, { recursive: true, force: true });
});

/** A request as nginx forwards it; `lines` are extra raw header lines (repeats kept). */
function send(lines: Array<[string, string]>, body = JSON.stringify({ message: 'hi' })): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: CHANNEL_PATH, headers: lines.flatMap(([k, v]) => [k, v]) as unknown as http.OutgoingHttpHeaders }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const signed = (body = JSON.stringify({ message: 'hi' })): Array<[string, string]> => Object.entries(signRequest({ token, body }));
const nginx = (body?: string): Array<[string, string]> => [['host', '127.0.0.1:18789'], ['content-length', String(Buffer.byteLength(body ?? JSON.stringify({ message: 'hi' })))], ['x-real-ip', '198.51.100.4'], ['x-service-edge', edge], ['x-service-gateway', knock]];

describe('service-channel plugin handler', () => {
  it('answers only with exactly one X-Service-Edge equal to the secret; otherwise hands the request back (as absent)', async () => {
    env = { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge };
    expect((await send([...nginx(), ...signed()])).status).toBe(200);
    const base = nginx().filter(([k]) => k !== 'x-service-edge');
    for (const edges of [[], ['wrong'], [edge, edge], [edge, 'x'], [`${edge}x`], [edge.slice(1)]]) {
      const answer = await send([...base, ...edges.map((v) => ['x-service-edge', v] as [string, string]), ...signed()]);
      expect([answer.status, answer.text], JSON.stringify(edges.length)).toEqual([404, 'no route']);
    }
  });

  it('two X-Service-Gateway lines: asks nginx to close the connection (X-Accel-Redirect, no body)', async () => {
    const answer = await send([...nginx(), ['x-service-gateway', knock], ...signed()]);
    expect(answer.status).toBe(204);
    expect(answer.headers['x-accel-redirect']).toBe('/.service-channel/close');
    expect(answer.text).toBe('');
  });

  it('without SERVICE_CHANNEL_EDGE: 503 misconfigured to every caller; without the token (edge set): 503 after the edge check', async () => {
    env = { SERVICE_CHANNEL_TOKEN: token };
    const noEdge = await send([...nginx(), ...signed()]);
    expect(noEdge.status).toBe(503);
    expect(JSON.parse(noEdge.text).error.code).toBe('misconfigured');
    env = { SERVICE_CHANNEL_EDGE: edge };
    expect((await send([...nginx(), ...signed()])).status).toBe(503);
    expect((await send(nginx().filter(([k]) => k !== 'x-service-edge'))).status).toBe(404);
  });

  it('model: what the turn reports, else the configured default model as <provider>/<model id>; never a placeholder', async () => {
    env = { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge };
    meta = { agentMeta: { provider: 'service', model: 'from-the-turn' } };
    expect(JSON.parse((await send([...nginx(), ...signed()])).text).model).toBe('service/from-the-turn');
    meta = {};
    config = { models: { providers: { service: { models: [{ id: 'listed' }] } } }, agents: { defaults: { model: { primary: 'service/configured-model' } } } };
    expect(JSON.parse((await send([...nginx(), ...signed()])).text).model).toBe('service/configured-model');
    config = { models: { providers: { service: { models: [{ id: 'listed' }] } } }, agents: { defaults: { model: 'bare-id' } } };
    expect(JSON.parse((await send([...nginx(), ...signed()])).text).model).toBe('service/bare-id');
    config = { models: { providers: { service: { models: [{ id: 'listed' }] } } } };
    expect(JSON.parse((await send([...nginx(), ...signed()])).text).model).toBe('service/listed');
    meta = { agentMeta: { model: 'turn-model-without-provider' } };
    expect(JSON.parse((await send([...nginx(), ...signed()])).text).model).toBe('service/turn-model-without-provider');
    meta = {};
    config = {};
    const none = await send([...nginx(), ...signed()]);
    expect(none.status).toBe(503);
    expect(JSON.parse(none.text).error).toEqual({ code: 'misconfigured', message: 'no model is configured on this server' });
    expect(none.text).not.toContain('unknown');
  });

  it('counts the client by X-Real-IP (one line, an address); 10 accepted in 60 s, then 429 with Retry-After', async () => {
    env = { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge };
    meta = { agentMeta: { provider: 'service', model: 'm' } };
    const client = (ip: string): Array<[string, string]> => nginx().map(([k, v]) => (k === 'x-real-ip' ? [k, ip] : [k, v]));
    for (let i = 0; i < 10; i++) expect((await send([...client('203.0.113.50'), ...signed()])).status).toBe(200);
    const refused = await send([...client('203.0.113.50'), ...signed()]);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).error.code).toBe('rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(59);
    expect((await send([...client('203.0.113.51'), ...signed()])).status).toBe(200);
  });
});
