import { describe, expect, it } from 'vitest';
import * as ts from '../../src/channel/protocol.js';
import { loadVectors, loadPluginProtocol } from './vectors.js';

// The plugin's plain-JS twin, exactly as it is shipped to the server.
const js = await loadPluginProtocol();

const { sign, verify } = loadVectors();
const implementations = [
  ['src/channel/protocol.ts', ts],
  ['templates/service-channel.protocol.js', js],
] as const;

describe('test vectors of docs/channel-protocol.md', () => {
  it('has sign and verify vectors, with each outcome at least once', () => {
    expect(sign.length).toBeGreaterThanOrEqual(3);
    const outcomes = new Set(verify.map((v) => v.expect));
    for (const code of ['ok', 'unauthorized', 'signature_required', 'timestamp_out_of_window', 'invalid_signature']) {
      expect(outcomes).toContain(code);
    }
  });

  for (const [name, impl] of implementations) {
    describe(name, () => {
      it.each(sign.map((v) => [v.name, v] as const))('signs %s', (_, v) => {
        expect(impl.sha256Hex(v.body)).toBe(v.bodySha256);
        const parts = { method: v.method, path: v.path, timestamp: v.timestamp, nonce: v.nonce, bodySha256: v.bodySha256 };
        expect(impl.canonicalString(parts)).toBe(v.canonical);
        expect(impl.signature(v.token, parts)).toBe(v.signature);
      });

      it.each(verify.map((v) => [v.name, v] as const))('verifies %s', (_, v) => {
        const result = impl.verifyRequest({ token: v.token, method: v.method, path: v.path, headers: v.headers, body: v.body, nowSeconds: v.now });
        expect(result.ok ? 'ok' : result.code).toBe(v.expect);
        if (!result.ok) expect(result.status).toBe(401);
      });

      it('accepts the sign vectors as requests (sign and verify agree)', () => {
        for (const v of sign) {
          const headers = {
            authorization: `Bearer ${v.token}`,
            'x-service-timestamp': v.timestamp,
            'x-service-nonce': v.nonce,
            'x-service-signature': v.signature,
          };
          const result = impl.verifyRequest({ token: v.token, method: v.method, path: v.path, headers, body: v.body, nowSeconds: Number(v.timestamp) + 10 });
          expect(result).toEqual({ ok: true, timestamp: Number(v.timestamp), nonce: v.nonce });
        }
      });

      it('compares secrets without throwing on unequal lengths', () => {
        expect(impl.safeEqual('abc', 'abc')).toBe(true);
        expect(impl.safeEqual('abc', 'abcd')).toBe(false);
        expect(impl.safeEqual('', 'x'.repeat(10_000))).toBe(false);
        expect(impl.safeEqual('abd', 'abc')).toBe(false);
      });

      it('treats a repeated header as missing', () => {
        const v = verify.find((x) => x.expect === 'ok')!;
        const headers = { ...v.headers, 'x-service-nonce': [v.headers['x-service-nonce']!, v.headers['x-service-nonce']!] };
        const result = impl.verifyRequest({ token: v.token, method: v.method, path: v.path, headers, body: v.body, nowSeconds: v.now });
        expect(result.ok ? 'ok' : result.code).toBe('signature_required');
      });

      it('refuses a request signed for another path or method', () => {
        const v = verify.find((x) => x.expect === 'ok')!;
        const base = { token: v.token, headers: v.headers, body: v.body, nowSeconds: v.now };
        expect(impl.verifyRequest({ ...base, method: 'POST', path: '/service-channel/chat2' }).ok).toBe(false);
        expect(impl.verifyRequest({ ...base, method: 'PUT', path: v.path }).ok).toBe(false);
      });
    });
  }

  it('signRequest (client) produces headers both verifiers accept', () => {
    const token = ts.newSecret();
    const body = JSON.stringify({ message: 'hi' });
    const headers = ts.signRequest({ token, body, timestamp: 1_800_000_000 });
    expect(headers['x-service-nonce']).toMatch(ts.NONCE_PATTERN);
    for (const [, impl] of implementations) {
      expect(impl.verifyRequest({ token, method: 'POST', path: ts.CHANNEL_PATH, headers, body, nowSeconds: 1_800_000_000 }).ok).toBe(true);
    }
  });

  it('the twin uses the same constants', () => {
    for (const key of ['CHANNEL_PATH', 'CANONICAL_PREFIX', 'REPLAY_WINDOW_SECONDS', 'MAX_BODY_BYTES', 'MAX_MESSAGE_CHARS', 'RATE_LIMIT_REQUESTS', 'RATE_WINDOW_SECONDS'] as const) {
      expect(js[key], key).toBe(ts[key]);
    }
    for (const key of ['NONCE_PATTERN', 'TIMESTAMP_PATTERN', 'SIGNATURE_PATTERN', 'SESSION_ID_PATTERN'] as const) {
      expect(js[key].source, key).toBe(ts[key].source);
    }
  });

  it('generated secrets are 32 random bytes, safe for nginx and env files', () => {
    const a = ts.newSecret();
    expect(Buffer.from(a, 'base64url')).toHaveLength(32);
    expect(a).toMatch(ts.SECRET_PATTERN);
    expect(ts.newSecret()).not.toBe(a);
  });
});

describe('request body (plugin)', () => {
  it.each([
    ['{"message":"hi"}', true],
    ['{"message":"hi","sessionId":"abc-1"}', true],
    ['{"message":"  "}', false],
    ['{"message":""}', false],
    ['{"message":3}', false],
    ['{"sessionId":"a"}', false],
    ['{"message":"hi","sessionId":"../etc"}', false],
    ['{"message":"hi","sessionID":"a"}', false],
    ['[1]', false],
    ['not json', false],
    ['', false],
    [JSON.stringify({ message: 'x'.repeat(32_001) }), false],
  ])('%s -> %s', (text, ok) => {
    expect(js.parseChannelRequest(text).ok).toBe(ok);
  });

  it.each([
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x6d, 0x22, 0x3a, 0xff, 0x7d]), /not valid UTF-8/],
    ['overlong UTF-8 for "/"', Buffer.concat([Buffer.from('{"message":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]), /not valid UTF-8/],
    ['a byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"message":"hi"}')]), /byte order mark/],
    ['a duplicate key', Buffer.from('{"message":"a","sessionId":"s","message":"b"}'), /duplicate field: message/],
    ['a duplicate key spelled with escapes', Buffer.from('{"\\u006dessage":"a","message":"b"}'), /duplicate field: message/],
    ['an unpaired surrogate', Buffer.from('{"message":"a\\udc00"}'), /unpaired surrogate/],
  ])('bytes with %s: refused', (_, body, message) => {
    const result = js.parseChannelRequest(body as unknown as string);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(message);
  });

  it('UTF-8 text, nested values and escaped quotes in values do not confuse the key scan', () => {
    const body = Buffer.from(JSON.stringify({ message: 'Grüße 👋 "quoted" {not: "a key"} \\', sessionId: 'abc' }));
    expect(js.parseChannelRequest(body as unknown as string)).toEqual({ ok: true, value: { message: 'Grüße 👋 "quoted" {not: "a key"} \\', sessionId: 'abc' } });
    const keys = (js as unknown as { topLevelKeys(t: string): string[] }).topLevelKeys(' { "a" : { "a": [1, {"a": "}"}] }, "b":"x\\"y" , "c": -1.5e3, "a": null } ');
    expect(keys).toEqual(['a', 'b', 'c', 'a']);
  });
});
