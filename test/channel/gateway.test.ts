import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChat, type ChatContext } from '../../src/channel/client.js';
import { renderNginxSite } from '../../src/channel/nginx.js';
import { CHANNEL_PATH, newSecret, signRequest } from '../../src/channel/protocol.js';
import { pluginFiles } from '../../src/steps/channel.js';
import { LAYOUT } from '../../src/layout.js';
import { makeTestCa } from '../helpers/https-server.js';
import { freePort, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { budget } from '../helpers/budget.js';
import { startFakeProvider, startGateway, type FakeProvider, type RunningGateway } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The service-channel plugin, as the install step writes it, inside the real pinned
 * OpenClaw gateway (on the pinned Node), with a loopback stand-in for the service's AI gateway.
 * Slow (each gateway start takes 10-20 s): one gateway, restarted twice.
 */
const token = newSecret();
const edge = newSecret();
const knock = newSecret();
let provider: FakeProvider;
let gateway: RunningGateway;
let pluginDir: string;
let stateDir: string;

function writePlugin(): string {
  const dir = tempDir('sd-plugin-');
  for (const file of pluginFiles()) {
    fs.writeFileSync(path.join(dir, path.relative(LAYOUT.channelPluginDir, file.path)), file.content, { mode: file.mode });
  }
  return dir;
}

/** Straight to the gateway with what nginx adds (the edge secret, the client address, one knock line). */
async function post(body: string, headers: Record<string, string>, method = 'POST', client = '198.51.100.1') {
  const res = await fetch(`${gateway.url}${CHANNEL_PATH}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-service-edge': edge, 'x-service-gateway': knock, 'x-real-ip': client, 'x-forwarded-for': client, ...headers },
    body: method === 'GET' ? undefined : body,
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = { raw: text };
  }
  return { status: res.status, json, headers: res.headers };
}

const signed = (body: string, extra: { token?: string; timestamp?: number } = {}) =>
  signRequest({ token: extra.token ?? token, body, ...(extra.timestamp !== undefined ? { timestamp: extra.timestamp } : {}) });
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  provider = await startFakeProvider();
  pluginDir = writePlugin();
  stateDir = tempDir('sd-openclaw-state-');
  gateway = await startGateway({ pluginDir, providerUrl: provider.url, env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge }, stateDir });
}, budget(420_000));

afterAll(async () => {
  await gateway?.stop();
  await provider?.close();
}, 60_000);

describe('service-channel plugin in the real OpenClaw gateway', () => {
  let firstSession = '';
  let acceptedBeforeRestart: { body: string; headers: Record<string, string> } | undefined;

  it('a signed chat returns the stand-in\'s answer with a session id and the model', async () => {
    const body = JSON.stringify({ message: 'hello one' });
    // Dated 4 minutes ahead (inside the +-5 min window): its replay, tested later in
    // this file, is still inside the window on a slow machine and must fail as a replay.
    const headers = signed(body, { timestamp: now() + 240 });
    const res = await post(body, headers);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json.reply).toBe('STAND-IN REPLY to: hello one');
    expect(res.json.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json.model).toBe('service/test-model');
    expect(Object.keys(res.json).sort()).toEqual(['model', 'reply', 'sessionId']);
    firstSession = res.json.sessionId;
    acceptedBeforeRestart = { body, headers };
  }, budget(120_000));

  it('a second message in the same session reaches the model with the first in its context', async () => {
    const body = JSON.stringify({ message: 'hello two', sessionId: firstSession });
    const res = await post(body, signed(body));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json).toMatchObject({ reply: 'STAND-IN REPLY to: hello two', sessionId: firstSession });
    const last = provider.requests.at(-1)!;
    const texts = last.messages.map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`).join('\n');
    expect(texts).toContain('hello one');
    expect(texts).toContain('assistant: STAND-IN REPLY to: hello one');
    expect(texts).toContain('hello two');
  }, budget(120_000));

  it('another session does not see the first one', async () => {
    const body = JSON.stringify({ message: 'fresh start', sessionId: 'other-session-1' });
    const res = await post(body, signed(body));
    expect(res.status).toBe(200);
    expect(res.json.sessionId).toBe('other-session-1');
    expect(JSON.stringify(provider.requests.at(-1)!.messages)).not.toContain('hello one');
  }, budget(120_000));

  it('rejects unsigned, wrong-token, expired, future, tampered and replayed requests (401, JSON codes)', async () => {
    const body = JSON.stringify({ message: 'should never reach the model' });
    const calls = provider.requests.length;
    const { authorization } = signed(body);
    const cases: Array<[string, Promise<Awaited<ReturnType<typeof post>>>, string]> = [
      ['no auth at all', post(body, {}), 'unauthorized'],
      ['bearer only (unsigned)', post(body, { authorization: authorization! }), 'signature_required'],
      ['wrong token', post(body, signed(body, { token: newSecret() })), 'unauthorized'],
      ['expired', post(body, signed(body, { timestamp: now() - 301 })), 'timestamp_out_of_window'],
      // Far outside the window: on a loaded machine the request may reach the gateway
      // seconds after it was signed (the exact 300 s edge is protocol.test.ts's job).
      ['future', post(body, signed(body, { timestamp: now() + 3600 })), 'timestamp_out_of_window'],
      ['tampered body', post(body.replace('never', 'always'), signed(body)), 'invalid_signature'],
    ];
    for (const [name, pending, code] of cases) {
      const res = await pending;
      expect(res.status, name).toBe(401);
      expect(res.json.error?.code, name).toBe(code);
      expect(res.headers.get('www-authenticate'), name).toMatch(/^Bearer/);
    }
    const replayed = await post(acceptedBeforeRestart!.body, acceptedBeforeRestart!.headers);
    expect(replayed.status).toBe(401);
    expect(replayed.json.error.code).toBe('nonce_replayed');
    expect(provider.requests.length).toBe(calls);
  });

  it('405 for other methods, 413 for a large body, 400 for a bad body (signed)', async () => {
    const get = await post('', signed(''), 'GET');
    expect(get.status).toBe(405);
    expect(get.json.error.code).toBe('method_not_allowed');
    expect(get.headers.get('allow')).toBe('POST');
    const big = JSON.stringify({ message: 'x'.repeat(70_000) });
    const large = await post(big, signed(big));
    expect(large.status).toBe(413);
    expect(large.json.error.code).toBe('body_too_large');
    for (const bad of ['{"message":""}', '{"message":"hi","sessionID":"a"}', 'not json', '{"message":"hi","sessionId":"a:b"}']) {
      const res = await post(bad, signed(bad));
      expect(res.status, bad).toBe(400);
      expect(res.json.error.code, bad).toBe('invalid_request');
    }
  });

  it('end to end through the rendered nginx site: service-deploy chat gets the reply', async () => {
    const ca = makeTestCa();
    const port = await freePort();
    const logs = tempDir('sd-nginx-logs-');
    let nginx: RunningNginx | undefined;
    try {
      nginx = await startNginx(renderNginxSite({ listen: `127.0.0.1:${port}`, upstream: `127.0.0.1:${gateway.port}`, cert: ca.certFile, key: ca.keyFile, knock, edge, allow: [], errorLog: path.join(logs, 'error.log'), accessLog: path.join(logs, 'access.log') }), port);
      const out: string[] = [];
      const ctx: ChatContext = {
        env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_KNOCK: knock, SERVICE_CHANNEL_URL: `https://localhost:${port}` },
        readFile: (p) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : undefined),
        readStdin: async () => '',
        stdout: (l) => out.push(l),
        stderr: () => {},
      };
      await runChat({ message: 'via nginx', ca: ca.caFile, json: true }, ctx);
      const answer = JSON.parse(out.join('\n'));
      expect(answer.reply).toBe('STAND-IN REPLY to: via nginx');
      expect(answer.model).toBe('service/test-model');
    } finally {
      await nginx?.stop();
    }
  }, budget(120_000));

  it('without SERVICE_CHANNEL_TOKEN and SERVICE_CHANNEL_EDGE in the gateway environment: 503 misconfigured', async () => {
    await gateway.stop();
    gateway = await startGateway({ pluginDir, providerUrl: provider.url, env: {}, stateDir });
    const body = JSON.stringify({ message: 'hi' });
    const res = await post(body, signed(body));
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('misconfigured');
  }, budget(420_000));

  it('a nonce accepted before a restart is still refused after it; fresh requests still work', async () => {
    await gateway.stop();
    gateway = await startGateway({ pluginDir, providerUrl: provider.url, env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge }, stateDir });
    // Accepted by this gateway process just before its restart, dated ahead inside the
    // window, so the replay is judged on its nonce however long the restart takes.
    const acceptedBody = JSON.stringify({ message: 'before the restart' });
    const accepted = { body: acceptedBody, headers: signed(acceptedBody, { timestamp: now() + 240 }) };
    expect((await post(accepted.body, accepted.headers, 'POST', '198.51.100.7')).status).toBe(200);
    await gateway.stop();
    gateway = await startGateway({ pluginDir, providerUrl: provider.url, env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge }, stateDir });
    const replayed = await post(accepted.body, accepted.headers, 'POST', '198.51.100.7');
    expect(replayed.status).toBe(401);
    expect(replayed.json.error.code).toBe('nonce_replayed');
    const store = JSON.parse(fs.readFileSync(path.join(stateDir, 'service-channel', 'nonces.json'), 'utf8'));
    expect(Object.keys(store.nonces)).toContain(accepted.headers['x-service-nonce']);
    expect(fs.statSync(path.join(stateDir, 'service-channel', 'nonces.json')).mode & 0o777).toBe(0o600);
    const body = JSON.stringify({ message: 'after restart', sessionId: firstSession });
    const res = await post(body, signed(body));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json.reply).toBe('STAND-IN REPLY to: after restart');
    // The rate window is kept in the same file, keyed by the address nginx wrote.
    const after = JSON.parse(fs.readFileSync(path.join(stateDir, 'service-channel', 'nonces.json'), 'utf8'));
    expect(Object.keys(after.rate)).toContain('198.51.100.1');
  }, budget(600_000));
});
