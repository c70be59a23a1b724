import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_PATH, newSecret, signRequest } from '../../src/channel/protocol.js';
import { REPO } from '../helpers/binary.js';
import { sessionRows, type SessionRows } from '../helpers/session-rows.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * When a portal session starts fresh (templates/service-channel.sessions.js, as
 * shipped), with the runtime's session rows stood in (test/helpers/session-rows.ts) and
 * a clock the test moves. The same rules in the real gateway, with real rows aged in
 * its store: test/channel/sessions-gateway.test.ts.
 */
const pluginDir = tempDir('sd-plugin-sessions-');
for (const name of ['index.js', 'protocol.js', 'nonce-store.js', 'sessions.js', 'package.json']) fs.copyFileSync(path.join(REPO, 'templates', `service-channel.${name}`), path.join(pluginDir, name));
const sessions = await import(pathToFileURL(path.join(pluginDir, 'sessions.js')).href);
const plugin = await import(pathToFileURL(path.join(pluginDir, 'index.js')).href);
const { NonceStore } = await import(pathToFileURL(path.join(pluginDir, 'nonce-store.js')).href);

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const WEEK = 7 * DAY;
const SPEC_CONFIG = { session: { reset: { mode: 'idle', idleMinutes: 10080 } } };
const key = (portal: string) => `agent:main:service-channel:${portal}`;

describe('idleLimitMs: the idle limit from the runtime config (session.reset)', () => {
  it('reads idleMinutes; no limit without a reset block, with mode "none" or without a positive idleMinutes', () => {
    expect(sessions.idleLimitMs(SPEC_CONFIG)).toBe(WEEK);
    expect(sessions.idleLimitMs({ session: { reset: { mode: 'idle', idleMinutes: 90.7 } } })).toBe(90 * MINUTE);
    expect(sessions.idleLimitMs({ session: { reset: { mode: 'daily', atHour: 4, idleMinutes: 60 } } })).toBe(60 * MINUTE);
    for (const config of [{}, undefined, { session: {} }, { session: { reset: { mode: 'none', idleMinutes: 10080 } } }, { session: { reset: { mode: 'idle' } } }, { session: { reset: { mode: 'idle', idleMinutes: 0 } } }, { session: { reset: { mode: 'idle', idleMinutes: 'soon' } } }, { session: { reset: 'idle' } }]) {
      expect(sessions.idleLimitMs(config), JSON.stringify(config)).toBeUndefined();
    }
  });
});

describe('admitMessage: one write per message, on the runtime\'s session row', () => {
  let clock = 0;
  let rows: SessionRows;
  let ids = 0;
  const admit = (portal: string, config: unknown = SPEC_CONFIG) =>
    sessions.admitMessage({ runtime: { agent: { session: rows.api } } }, { agentId: 'main', sessionKey: key(portal), nowMs: clock, idleLimit: sessions.idleLimitMs(config), newSessionId: () => `internal-${++ids}` });

  beforeAll(() => {
    clock = Date.UTC(2026, 0, 1);
    rows = sessionRows(() => clock);
  });

  it('a new conversation gets a new row with an internal id of its own (not the portal\'s) and the message time', async () => {
    const first = await admit('new-1');
    expect(first.sessionId).toMatch(/^internal-\d+$/);
    expect(first.previousSessionId).toBeUndefined();
    expect(rows.rows.get(key('new-1'))).toMatchObject({ sessionId: first.sessionId, lastInteractionAt: clock, sessionStartedAt: clock });
    expect(rows.patches).toHaveLength(1);
  });

  it('used once a day for 8 days: the same session all along (idle counts from the last message, not the start)', async () => {
    const started = clock;
    const first = await admit('daily');
    for (let day = 1; day <= 8; day++) {
      clock += DAY;
      const again = await admit('daily');
      expect(again, `day ${day}`).toEqual({ sessionId: first.sessionId });
    }
    expect(clock - started).toBe(8 * DAY);
    expect(rows.rows.get(key('daily'))).toMatchObject({ sessionId: first.sessionId, lastInteractionAt: clock, sessionStartedAt: started });
  });

  it('idle exactly 7 days continues; idle 7 days and 1 ms starts fresh, linked to the previous one, counters reset', async () => {
    const first = await admit('weekly');
    rows.rows.set(key('weekly'), { ...rows.rows.get(key('weekly'))!, compactionCount: 3, totalTokens: 90_000, thinkingLevel: 'high' });
    clock += WEEK;
    expect(await admit('weekly')).toEqual({ sessionId: first.sessionId });
    clock += WEEK + 1;
    const fresh = await admit('weekly');
    expect(fresh.sessionId).not.toBe(first.sessionId);
    expect(fresh).toEqual({ sessionId: fresh.sessionId, previousSessionId: first.sessionId, idleMs: WEEK + 1 });
    const row = rows.rows.get(key('weekly'))!;
    expect(row).toMatchObject({ sessionId: fresh.sessionId, sessionStartedAt: clock, lastInteractionAt: clock, compactionCount: 0, totalTokens: 0, systemSent: false });
    // What the conversation chose stays with it (as the gateway's own reset keeps it).
    expect(row.thinkingLevel).toBe('high');
    clock += MINUTE;
    expect(await admit('weekly')).toEqual({ sessionId: fresh.sessionId });
  });

  it('a row from before this plugin version (portal id inside, no lastInteractionAt) counts from its last update', async () => {
    rows.rows.set(key('legacy'), { sessionId: 'legacy', updatedAt: clock - 6 * DAY });
    expect(await admit('legacy')).toEqual({ sessionId: 'legacy' });
    rows.rows.set(key('legacy-old'), { sessionId: 'legacy-old', updatedAt: clock - 8 * DAY });
    const fresh = await admit('legacy-old');
    expect(fresh.previousSessionId).toBe('legacy-old');
    expect(fresh.sessionId).not.toBe('legacy-old');
  });

  it('a row the runtime pruned (archived past session.maintenance.pruneAfter) starts fresh and is live again', async () => {
    rows.rows.set(key('pruned'), { sessionId: 'old-internal', updatedAt: clock - 31 * DAY, lastInteractionAt: clock - 31 * DAY, archivedAt: clock - DAY, archiveReason: 'age-retention' });
    const fresh = await admit('pruned');
    expect(fresh.previousSessionId).toBe('old-internal');
    const row = rows.rows.get(key('pruned'))!;
    expect(row.sessionId).toBe(fresh.sessionId);
    expect(row).not.toHaveProperty('archivedAt');
    expect(row).not.toHaveProperty('archiveReason');
  });

  it('a recent row archived by the entry cap continues its conversation and is live again', async () => {
    rows.rows.set(key('capped'), { sessionId: 'kept', updatedAt: clock - DAY, lastInteractionAt: clock - DAY, archivedAt: clock - MINUTE, archiveReason: 'active-session-cap' });
    expect(await admit('capped')).toEqual({ sessionId: 'kept' });
    expect(rows.rows.get(key('capped'))).not.toHaveProperty('archivedAt');
  });

  it('two messages after the same idle spell rotate once: both run in the new session', async () => {
    const first = await admit('burst');
    clock += 8 * DAY;
    const [a, b] = await Promise.all([admit('burst'), admit('burst')]);
    expect(a.sessionId).toBe(b.sessionId);
    expect(a.sessionId).not.toBe(first.sessionId);
    expect([a.previousSessionId, b.previousSessionId].filter(Boolean)).toEqual([first.sessionId]);
  });

  it('without an idle limit in the config a session never starts fresh', async () => {
    const first = await admit('forever', {});
    clock += 400 * DAY;
    expect(await admit('forever', {})).toEqual({ sessionId: first.sessionId });
  });

  it('a row from the future (clock stepped back) is not idle', async () => {
    rows.rows.set(key('future'), { sessionId: 'ahead', updatedAt: clock + DAY, lastInteractionAt: clock + DAY });
    expect(await admit('future')).toEqual({ sessionId: 'ahead' });
  });
});

describe('the handler runs each turn in the session admitMessage chose', () => {
  const token = newSecret();
  const edge = newSecret();
  let clock = Date.UTC(2026, 2, 1);
  let server: http.Server;
  let port = 0;
  let rows: SessionRows;
  let storeFails = false;
  const turns: Array<{ sessionId: string; sessionKey: string; prompt: string }> = [];
  const logs: string[] = [];

  beforeAll(async () => {
    rows = sessionRows(() => clock);
    const session = {
      ...rows.api,
      patchSessionEntry: (params: Parameters<SessionRows['api']['patchSessionEntry']>[0]) => (storeFails ? Promise.reject(new Error('database is locked')) : rows.api.patchSessionEntry(params)),
    };
    const api = {
      logger: { info: (m: string) => logs.push(m), warn: (m: string) => logs.push(m), error: (m: string) => logs.push(m) },
      runtime: {
        config: { current: () => ({ ...SPEC_CONFIG, agents: { defaults: { model: 'service/m' } }, models: { providers: { service: {} } } }) },
        agent: {
          session,
          resolveAgentWorkspaceDir: () => pluginDir,
          runEmbeddedAgent: async (p: { sessionId: string; sessionKey: string; prompt: string }) => {
            turns.push({ sessionId: p.sessionId, sessionKey: p.sessionKey, prompt: p.prompt });
            return { payloads: [{ text: `reply to ${p.prompt}` }], meta: {} };
          },
        },
      },
    };
    const handle = plugin.createHandler(api, new NonceStore(path.join(tempDir(), 'nonces.json')), { env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge }, clock: () => clock });
    server = http.createServer(async (req, res) => {
      if ((await handle(req, res)) === false) res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  async function chat(message: string, sessionId?: string): Promise<{ status: number; json: any }> {
    const body = JSON.stringify(sessionId ? { message, sessionId } : { message });
    const res = await fetch(`http://127.0.0.1:${port}${CHANNEL_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-edge': edge, 'x-service-gateway': 'k', 'x-real-ip': '198.51.100.9', ...signRequest({ token, body, timestamp: Math.floor(clock / 1000) }) },
      body,
    });
    return { status: res.status, json: await res.json() };
  }

  it('keeps the portal\'s sessionId in every answer while the runtime session behind it rotates after 7 idle days', async () => {
    const opened = await chat('hello');
    expect(opened.status).toBe(200);
    const portal = opened.json.sessionId as string;
    expect(turns.at(-1)).toMatchObject({ sessionKey: key(portal), prompt: 'hello' });
    const firstInternal = turns.at(-1)!.sessionId;
    expect(firstInternal).not.toBe(portal);
    clock += 6 * DAY;
    expect((await chat('still there?', portal)).json.sessionId).toBe(portal);
    expect(turns.at(-1)!.sessionId).toBe(firstInternal);
    clock += WEEK + MINUTE;
    const back = await chat('back after a week', portal);
    expect(back).toMatchObject({ status: 200, json: { sessionId: portal, reply: 'reply to back after a week' } });
    expect(turns.at(-1)!.sessionKey).toBe(key(portal));
    expect(turns.at(-1)!.sessionId).not.toBe(firstInternal);
    expect(logs.join('\n')).toContain(`session ${portal} was idle 10081 min: continues as a new conversation (runtime session ${firstInternal} -> ${turns.at(-1)!.sessionId})`);
  });

  it('a session store that cannot be written: 503 agent_unavailable with Retry-After, no turn', async () => {
    storeFails = true;
    const before = turns.length;
    try {
      const res = await chat('hello', 'store-down');
      expect(res.status).toBe(503);
      expect(res.json.error.code).toBe('agent_unavailable');
      expect(turns.length).toBe(before);
      expect(logs.at(-1)).toContain('session store: cannot record a message in session store-down: database is locked');
    } finally {
      storeFails = false;
    }
  });
});
