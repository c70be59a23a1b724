import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderNginxSite } from '../../src/channel/nginx.js';
import { CHANNEL_PATH, newSecret, signRequest } from '../../src/channel/protocol.js';
import { channelTlsStep, pluginFiles } from '../../src/steps/channel.js';
import { LAYOUT } from '../../src/layout.js';
import { sandboxContext } from '../helpers/install-ctx.js';
import { NGINX, SYSTEM_NGINX, freePort, rawExchange, startNginx, type Exchange, type NginxBinary, type RunningNginx } from '../helpers/nginx.js';
import { otherNginxReleases } from '../helpers/nginx-versions.js';
import { startFakeProvider, startGateway, type FakeProvider, type RunningGateway } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The edge, end to end: the rendered nginx site (real nginx on loopback, with the
 * certificate the install's TLS step makes) in front of the real pinned OpenClaw gateway
 * running the service-channel plugin as the install writes it, with a loopback
 * stand-in for the AI gateway. Every case runs on every nginx
 * release we support: this machine's (Debian 12, 1.22), Debian 11's 1.18 (the release
 * Ubuntu 22.04 ships) and Debian 13's 1.26 (newer than Ubuntu 24.04's 1.24), unpacked
 * from their packages (test/helpers/nginx-versions.ts). One gateway serves one nginx
 * per release, and each case sends to all of them at once (from its own client address
 * on each), so the suite takes about as long as on one release.
 * Every case states its exact outcome; traffic without a valid knock (and every request
 * the edge closes) must get zero response bytes: no status line, no header, no HTML.
 * Client addresses are 127.0.0.0/8 source addresses, fresh per case where limits count.
 */
const token = newSecret();
const knock = newSecret();
const edge = newSecret();
let provider: FakeProvider;
let gateway: RunningGateway;
/** The certificate the install makes (its TLS step: self-signed RSA 4096, 10 years). */
let tlsFiles = { cert: '', key: '' };
let logDir = '';

/** One nginx release in front of the gateway. */
interface Edge {
  /** "nginx 1.18.0": how a failure names the release. */
  label: string;
  port: number;
  nginx: RunningNginx;
}
const edges: Edge[] = [];
const missing: Record<string, string> = {};

/**
 * Runs a case on every release at once and fails naming each release it failed on
 * (every release runs to its end, so one report shows them all). `oneAtATime`: one
 * release after the other, for a case whose timing the others' agent turns would
 * stretch (the gateway runs one turn at a time on this machine's cores).
 */
async function onEveryRelease(check: (edge: Edge) => Promise<void>, options: { oneAtATime?: boolean } = {}): Promise<void> {
  expect(edges.length, 'no nginx is running').toBeGreaterThan(0);
  const results: Array<PromiseSettledResult<void>> = [];
  if (options.oneAtATime) for (const edge of edges) results.push(...(await Promise.allSettled([check(edge)])));
  else results.push(...(await Promise.allSettled(edges.map((edge) => check(edge)))));
  const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`${edges[i]!.label}: ${(r.reason as Error)?.message ?? r.reason}`] : []));
  if (failed.length > 0) throw new Error(`failed on ${failed.length} of ${edges.length} nginx releases:\n${failed.join('\n')}`);
}

let nextAddress = 0;
/** A client source address no earlier case used (its own rate-limit buckets). */
function fresh(): string {
  nextAddress++;
  return `127.0.${10 + Math.floor(nextAddress / 250)}.${(nextAddress % 250) + 1}`;
}

const CRLF = '\r\n';
/** A raw HTTP/1.1 request: request line, header lines as given (order and repeats kept), body. */
function request(line: string, headers: Array<[string, string]>, body = ''): string {
  return `${line}${CRLF}${headers.map(([k, v]) => `${k}: ${v}`).join(CRLF)}${headers.length ? CRLF : ''}${CRLF}${body}`;
}
const POST = `POST ${CHANNEL_PATH} HTTP/1.1`;
const base = (body = '{}'): Array<[string, string]> => [['Host', 'localhost'], ['Content-Type', 'application/json'], ['Content-Length', String(Buffer.byteLength(body))], ['Connection', 'close']];
const withKnock = (body = '{}'): Array<[string, string]> => [...base(body), ['X-Service-Gateway', knock]];
const signedHeaders = (body: string, extra: { timestamp?: number; token?: string } = {}): Array<[string, string]> =>
  Object.entries(signRequest({ token: extra.token ?? token, body, ...(extra.timestamp !== undefined ? { timestamp: extra.timestamp } : {}) })).map(([k, v]) => [k, v] as [string, string]);

function send(edge: Edge, data: string | Buffer | Array<string | Buffer>, options: { localAddress?: string; plain?: boolean; waitMs?: number; pauseMs?: number } = {}): Promise<Exchange> {
  return rawExchange({ port: edge.port, localAddress: options.localAddress ?? fresh(), data, plain: options.plain, waitMs: options.waitMs ?? 8000, pauseMs: options.pauseMs });
}

function expectClosed(answer: Exchange, what: string): void {
  expect(answer.bytes.length, `${what}: ${answer.bytes.length} response bytes: ${JSON.stringify(answer.text.slice(0, 200))}`).toBe(0);
  expect(answer.end, `${what}: the connection was not closed (${answer.end})`).toBe('closed');
}

function json(answer: Exchange): { status?: number; code?: string; headers: string; body: any } {
  const [head = '', ...rest] = answer.text.split('\r\n\r\n');
  let bodyText = rest.join('\r\n\r\n');
  if (/^transfer-encoding: chunked$/im.test(head)) bodyText = bodyText.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n$/, '');
  let body: any;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = { raw: bodyText };
  }
  return { status: answer.status, code: body?.error?.code, headers: head, body };
}

beforeAll(async () => {
  provider = await startFakeProvider();
  const pluginDir = tempDir('sd-plugin-');
  for (const file of pluginFiles()) fs.writeFileSync(path.join(pluginDir, path.relative(LAYOUT.channelPluginDir, file.path)), file.content, { mode: file.mode });
  // The gateway starts while the other releases are fetched (or found in the cache) and the certificate is made.
  const [other] = await Promise.all([
    otherNginxReleases(),
    (async () => {
      gateway = await startGateway({ pluginDir, providerUrl: provider.url, env: { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_EDGE: edge } });
    })(),
    (async () => {
      const ctx = sandboxContext();
      await channelTlsStep.apply(ctx, await channelTlsStep.check(ctx));
      tlsFiles = { cert: ctx.host.paths.real(LAYOUT.tlsCert), key: ctx.host.paths.real(LAYOUT.tlsKey) };
    })(),
  ]);
  Object.assign(missing, other.missing);
  if (Object.keys(missing).length > 0) console.warn(`nginx releases not tested: ${JSON.stringify(missing)}`);
  const system: NginxBinary = { ...SYSTEM_NGINX, version: systemVersion() };
  logDir = tempDir('sd-edge-logs-');
  for (const binary of [other.binaries.find((b) => b.version.startsWith('1.18')), system, ...other.binaries.filter((b) => !b.version.startsWith('1.18'))]) {
    if (!binary) continue;
    const port = await freePort();
    // Debian's version has its revision after a dash (1.18.0-6.1+deb11u3): the release is before it.
    const release = binary.version.split('-')[0]!;
    const name = `nginx-${release}`;
    const site = renderNginxSite({ listen: `127.0.0.1:${port}`, upstream: `127.0.0.1:${gateway.port}`, cert: tlsFiles.cert, key: tlsFiles.key, knock, edge, allow: [], errorLog: path.join(logDir, `${name}-error.log`), accessLog: path.join(logDir, `${name}-access.log`) });
    edges.push({ label: `nginx ${release}`, port, nginx: await startNginx(site, port, { binary }) });
  }
}, 600_000);

/** `nginx -v` writes its version on stderr. */
function systemVersion(): string {
  const out = execFileSync('sh', ['-c', `${NGINX} -v 2>&1`], { encoding: 'utf8' });
  return /nginx\/(\S+)/.exec(out)?.[1] ?? 'system';
}

afterAll(async () => {
  await Promise.all(edges.map((e) => e.nginx.stop()));
  await gateway?.stop();
  await provider?.close();
}, 60_000);

// ------------------------------------------------------------------ cases

/** A. Knock variants (well-formed requests to the right target): closed, zero bytes. */
const KNOCK_CASES: Array<[string, Array<[string, string]>]> = [
  ['no knock', base()],
  ['empty knock', [...base(), ['X-Service-Gateway', '']]],
  ['wrong knock', [...base(), ['X-Service-Gateway', 'not-the-knock-at-all-0123456789']]],
  ['knock one character short', [...base(), ['X-Service-Gateway', knock.slice(0, -1)]]],
  ['knock one character longer', [...base(), ['X-Service-Gateway', `${knock}x`]]],
  ['knock with one character changed', [...base(), ['X-Service-Gateway', `${knock.slice(0, -1)}${knock.endsWith('A') ? 'B' : 'A'}`]]],
  ['knock in another case', [...base(), ['X-Service-Gateway', knock.toUpperCase() === knock ? knock.toLowerCase() : knock.toUpperCase()]]],
  ['knock twice (same value)', [...base(), ['X-Service-Gateway', knock], ['X-Service-Gateway', knock]]],
  ['knock, then a second wrong knock', [...base(), ['X-Service-Gateway', knock], ['X-Service-Gateway', 'other']]],
  ['a wrong knock, then the knock', [...base(), ['X-Service-Gateway', 'other'], ['X-Service-Gateway', knock]]],
  ['knock with a leading tab', [...base(), ['X-Service-Gateway', `\t${knock}`]]],
  ['knock with a trailing tab', [...base(), ['X-Service-Gateway', `${knock}\t`]]],
  ['knock under an underscore name (X_Service_Gateway)', [...base(), ['X_Service_Gateway', knock]]],
  ['knock in another header (X-Service-Gateway-Knock)', [...base(), ['X-Service-Gateway-Knock', knock]]],
  ['knock as a cookie', [...base(), ['Cookie', `X-Service-Gateway=${knock}`]]],
  ['knock quoted', [...base(), ['X-Service-Gateway', `"${knock}"`]]],
  ['knock joined with a comma', [...base(), ['X-Service-Gateway', `${knock}, ${knock}`]]],
];

/** B. The knock right, the request target not exactly /service-channel/chat: closed, zero bytes. */
const TARGET_CASES: string[] = [
  '//service-channel/chat',
  '/service-channel/./chat',
  '/x/../service-channel/chat',
  '/service-channel/%63hat',
  '/service-channel%2fchat',
  '/service-channel/chat/',
  '/service-channel/chat?x=1',
  '/service-channel/chat?',
  '/service-channel/chat#frag',
  '/SERVICE-CHANNEL/chat',
  'https://localhost/service-channel/chat',
  '/service-channel/chat;a=b',
  '/service-channel/chat%00',
  '/%2e/service-channel/chat',
  '/healthz',
  '/',
];

/** C. Malformed HTTP without a knock: closed, zero bytes. */
const LONG = 'a'.repeat(9000);
const MALFORMED_NO_KNOCK: Array<[string, string | Buffer]> = [
  ['garbage request line', `GARBAGE${CRLF}${CRLF}`],
  ['TRACE', request('TRACE / HTTP/1.1', [['Host', 'localhost']])],
  ['HTTP/2 preface', `PRI * HTTP/2.0${CRLF}${CRLF}SM${CRLF}${CRLF}`],
  ['HTTP/0.9 request', `GET /${CRLF}`],
  ['HTTP/3.0 version', request('POST /service-channel/chat HTTP/3.0', [['Host', 'localhost']])],
  ['%00 in the path', request('GET /%00 HTTP/1.1', [['Host', 'localhost']])],
  ['NUL byte in a header', Buffer.from(request('GET / HTTP/1.1', [['Host', 'localhost'], ['X-A', 'a\u0000b']]), 'latin1')],
  ['duplicate Host', request(POST, [['Host', 'a'], ['Host', 'b'], ['Content-Length', '0']])],
  ['duplicate Content-Length', request(POST, [['Host', 'a'], ['Content-Length', '2'], ['Content-Length', '2']], '{}')],
  ['invalid Content-Length', request(POST, [['Host', 'a'], ['Content-Length', 'abc']])],
  ['Content-Length and Transfer-Encoding', request(POST, [['Host', 'a'], ['Content-Length', '5'], ['Transfer-Encoding', 'chunked']], `0${CRLF}${CRLF}`)],
  ['unknown Transfer-Encoding', request(POST, [['Host', 'a'], ['Transfer-Encoding', 'gzip']])],
  ['header line over 8 KiB', request('GET / HTTP/1.1', [['Host', 'localhost'], ['X-Long', LONG]])],
  ['request line over 8 KiB', request(`GET /${LONG} HTTP/1.1`, [['Host', 'localhost']])],
  ['HTTP/1.1 without Host', request(POST, [['Content-Length', '0']])],
  ['space before the colon', request(POST, [['Host', 'a'], ['X-Service-Gateway ', 'x']])],
  ['bare LF line ends', `POST ${CHANNEL_PATH} HTTP/1.1\nHost: a\n\n`],
];

/** D. Malformed HTTP with the right knock: closed too, zero bytes. */
const MALFORMED_WITH_KNOCK: Array<[string, Array<[string, string]>, string?]> = [
  ['duplicate Authorization', [...withKnock(), ['Authorization', `Bearer ${token}`], ['Authorization', `Bearer ${token}`]], '{}'],
  ['duplicate Host', [['Host', 'a'], ['Host', 'b'], ['X-Service-Gateway', knock], ['Content-Length', '2']], '{}'],
  ['duplicate Content-Length', [['Host', 'a'], ['X-Service-Gateway', knock], ['Content-Length', '2'], ['Content-Length', '2']], '{}'],
  ['invalid Content-Length', [['Host', 'a'], ['X-Service-Gateway', knock], ['Content-Length', '-1']]],
  ['Content-Length and Transfer-Encoding', [['Host', 'a'], ['X-Service-Gateway', knock], ['Content-Length', '5'], ['Transfer-Encoding', 'chunked']], `0${CRLF}${CRLF}`],
  ['chunked body (Content-Length is required)', [['Host', 'a'], ['X-Service-Gateway', knock], ['Transfer-Encoding', 'chunked']], `2${CRLF}{}${CRLF}0${CRLF}${CRLF}`],
  ['unknown Transfer-Encoding', [['Host', 'a'], ['X-Service-Gateway', knock], ['Transfer-Encoding', 'gzip']]],
  ['header line over 8 KiB', [['Host', 'a'], ['X-Service-Gateway', knock], ['X-Long', LONG]]],
  ['HTTP/1.1 without Host', [['X-Service-Gateway', knock], ['Content-Length', '0']]],
  ['invalid Host', [['Host', 'a/b'], ['X-Service-Gateway', knock], ['Content-Length', '0']]],
];

describe('the edge on every nginx release: nginx (rendered site) + the real gateway with the plugin', () => {
  it('runs on nginx 1.18, 1.22 and 1.26 (the others fetched, or the warning above says why not)', () => {
    // A machine that cannot reach the Debian mirror still runs this machine's release.
    expect(edges.length + Object.keys(missing).length).toBe(3);
    const lines = edges.map((e) => /^nginx (\d+\.\d+)\./.exec(e.label)?.[1]);
    if (Object.keys(missing).length === 0) expect(lines).toEqual(['1.18', '1.22', '1.26']);
    else expect(lines).toContain('1.22');
  });

  it.each(KNOCK_CASES)('A. %s: connection closed, zero bytes', async (name, headers) => {
    await onEveryRelease(async (e) => expectClosed(await send(e, request(POST, headers, '{}')), name));
  });

  it('A. knock padded with spaces: spaces are not part of an HTTP field value (nginx strips them on every release), so it is the knock: the request reaches the plugin (401 without bearer)', async () => {
    await onEveryRelease(async (e) => {
      const answer = json(await send(e, request(POST, [...base(), ['X-Service-Gateway', `   ${knock}   `]], '{}')));
      expect(answer.status).toBe(401);
      expect(answer.code).toBe('unauthorized');
    });
  });

  it.each(TARGET_CASES)('B. knock right, target %s: connection closed, zero bytes', async (target) => {
    await onEveryRelease(async (e) => expectClosed(await send(e, request(`POST ${target} HTTP/1.1`, withKnock())), target));
  });

  it('B. knock right, two spaces after the method: closed, zero bytes', async () => {
    await onEveryRelease(async (e) => expectClosed(await send(e, request(`POST  ${CHANNEL_PATH} HTTP/1.1`, withKnock())), 'two spaces'));
  });

  it('B. knock right, OPTIONS *: closed, zero bytes', async () => {
    await onEveryRelease(async (e) => expectClosed(await send(e, request('OPTIONS * HTTP/1.1', withKnock())), 'OPTIONS *'));
  });

  it.each(MALFORMED_NO_KNOCK)('C. malformed without knock, %s: connection closed, zero bytes', async (name, data) => {
    await onEveryRelease(async (e) => expectClosed(await send(e, data), name));
  });

  it('C. plain HTTP on the TLS port (with the knock, even): closed, zero bytes', async () => {
    await onEveryRelease(async (e) => {
      expectClosed(await send(e, request(POST, withKnock(), '{}'), { plain: true }), 'plain http');
      expectClosed(await send(e, request('GET / HTTP/1.1', [['Host', 'x']]), { plain: true }), 'plain http, no knock');
    });
  });

  it.each(MALFORMED_WITH_KNOCK)('D. malformed with the right knock, %s: connection closed, zero bytes', async (name, headers, body) => {
    await onEveryRelease(async (e) => expectClosed(await send(e, request(POST, headers, body ?? '')), name));
  });

  it('D. TRACE to the chat path with the right knock: closed, zero bytes', async () => {
    await onEveryRelease(async (e) => expectClosed(await send(e, request(`TRACE ${CHANNEL_PATH} HTTP/1.1`, withKnock())), 'TRACE'));
  });

  it('E. slow handshake, slow headers (stalled or dribbled), slow body, and a wrong bearer announcing 60 KB that never come: each closed without a byte within client_header_timeout/client_body_timeout (10 s)', async () => {
    const head = request(POST, [['Host', 'localhost'], ['X-Service-Gateway', knock], ['Authorization', 'Bearer wrong'], ['Content-Length', '61440']]);
    const started = Date.now();
    await onEveryRelease(async (e) => {
      const [handshake, stalled, dribbled, body, bearer] = await Promise.all([
        // Half a TLS ClientHello, then nothing.
        send(e, Buffer.from('16030100f8010000f40303', 'hex'), { plain: true, waitMs: 25_000 }),
        send(e, `POST ${CHANNEL_PATH} HTTP/1.1${CRLF}Host: localhost${CRLF}`, { waitMs: 25_000 }),
        // One header byte every 2 s: progress does not restart nginx's timer.
        send(e, [`POST ${CHANNEL_PATH} HTTP/1.1${CRLF}`, 'X', '-', 'A', ':', ' ', 'b', 'c', 'd', 'e', 'f', 'g'], { pauseMs: 2000, waitMs: 25_000 }),
        send(e, [request(POST, [['Host', 'localhost'], ['X-Service-Gateway', knock], ['Content-Length', '100']]), '{"message":'], { pauseMs: 100, waitMs: 25_000 }),
        send(e, head, { waitMs: 25_000 }),
      ]);
      for (const [name, answer] of Object.entries({ handshake, stalled, dribbled, body, bearer })) {
        expectClosed(answer, name);
        expect(answer.ms, `${name} closed after ${answer.ms} ms`).toBeLessThan(16_000);
        expect(answer.ms, `${name} closed after ${answer.ms} ms`).toBeGreaterThan(8_000);
      }
    });
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 40_000);

  // ---------------------------------------------------------- F. through to the plugin

  it('F. a signed chat gets the agent\'s reply; model is <provider>/<configured model id>', async () => {
    await onEveryRelease(async (e) => {
      const body = JSON.stringify({ message: `hello edge (${e.label})` });
      const answer = json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { waitMs: 120_000 }));
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toMatchObject({ reply: `STAND-IN REPLY to: hello edge (${e.label})`, model: 'service/test-model' });
      expect(answer.headers).not.toMatch(/^x-accel-redirect:/im);
    });
  }, 120_000);

  it('F. HTTP/1.0 is served too', async () => {
    await onEveryRelease(async (e) => {
      const body = JSON.stringify({ message: `old http (${e.label})` });
      const answer = json(await send(e, request(`POST ${CHANNEL_PATH} HTTP/1.0`, [...withKnock(body).filter(([k]) => k !== 'Host'), ...signedHeaders(body)], body), { waitMs: 120_000 }));
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.reply).toBe(`STAND-IN REPLY to: old http (${e.label})`);
    });
  }, 120_000);

  it.each([
    ['GET', 405, 'method_not_allowed'],
    ['PUT', 405, 'method_not_allowed'],
    ['DELETE', 405, 'method_not_allowed'],
  ] as const)('F. %s with the knock: %d %s, Allow: POST', async (method, status, code) => {
    await onEveryRelease(async (e) => {
      const answer = json(await send(e, request(`${method} ${CHANNEL_PATH} HTTP/1.1`, withKnock(''))));
      expect(answer.status).toBe(status);
      expect(answer.code).toBe(code);
      expect(answer.headers).toMatch(/^allow: POST$/im);
    });
  });

  const now = () => Math.floor(Date.now() / 1000);
  const authCases: Array<[string, string, () => Array<[string, string]>]> = [
    ['no Authorization', 'unauthorized', () => []],
    ['a wrong bearer token', 'unauthorized', () => signedHeaders('{"message":"x"}', { token: newSecret() })],
    ['"bearer" in lower case', 'unauthorized', () => [['Authorization', `bearer ${token}`]]],
    ['the bearer without a signature', 'signature_required', () => [['Authorization', `Bearer ${token}`]]],
    ['a timestamp 301 s old', 'timestamp_out_of_window', () => signedHeaders('{"message":"x"}', { timestamp: now() - 301 })],
    // Ahead by more than the window plus a busy machine's delay: the header is signed now
    // and checked a moment later, when 301 s ahead may already be 300 (inside). The exact
    // boundaries (300 in, 301 out, either side) are the protocol vectors' (protocol.test.ts).
    ['a timestamp 330 s ahead', 'timestamp_out_of_window', () => signedHeaders('{"message":"x"}', { timestamp: now() + 330 })],
    ['a signature for another body', 'invalid_signature', () => signedHeaders('{"message":"y"}')],
    ['X-Service-Nonce sent twice', 'signature_required', () => {
      const h = signedHeaders('{"message":"x"}');
      return [...h, h.find(([k]) => k === 'x-service-nonce')!];
    }],
  ];
  it.each(authCases)('F. %s: 401 %s with WWW-Authenticate', async (_, code, headers) => {
    await onEveryRelease(async (e) => {
      const body = '{"message":"x"}';
      const answer = json(await send(e, request(POST, [...withKnock(body), ...headers()], body)));
      expect(answer.status).toBe(401);
      expect(answer.code).toBe(code);
      expect(answer.headers).toMatch(/^www-authenticate: Bearer realm="service-channel"$/im);
    });
  });

  it('F. a replayed request: 401 nonce_replayed (the first, with an invalid body, got 400)', async () => {
    await onEveryRelease(async (e) => {
      const body = '{"message":""}';
      const signed = signedHeaders(body);
      const first = json(await send(e, request(POST, [...withKnock(body), ...signed], body)));
      expect(first.status).toBe(400);
      expect(first.code).toBe('invalid_request');
      const again = json(await send(e, request(POST, [...withKnock(body), ...signed], body)));
      expect(again.status).toBe(401);
      expect(again.code).toBe('nonce_replayed');
    });
  });

  const bodyCases: Array<[string, Buffer, RegExp]> = [
    ['invalid UTF-8', Buffer.concat([Buffer.from('{"message":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]), /not valid UTF-8/],
    ['an encoded surrogate (ED A0 80)', Buffer.concat([Buffer.from('{"message":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), /not valid UTF-8/],
    ['a byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"message":"hi"}')]), /byte order mark/],
    ['a duplicate key', Buffer.from('{"message":"hi","message":"other"}'), /duplicate field: message/],
    ['a duplicate key written with an escape', Buffer.from('{"message":"hi","mess\\u0061ge":"other"}'), /duplicate field: message/],
    ['an unpaired surrogate escape', Buffer.from('{"message":"\\ud800"}'), /unpaired surrogate/],
    ['an unknown field', Buffer.from('{"message":"hi","sessionID":"a"}'), /unknown field: sessionID/],
    ['not JSON', Buffer.from('message=hi'), /not valid JSON/],
    ['a JSON array', Buffer.from('["hi"]'), /JSON object/],
  ];
  it.each(bodyCases)('F. a signed body with %s: 400 invalid_request', async (_, body, message) => {
    await onEveryRelease(async (e) => {
      // Signed over the raw bytes (a nonce of its own on each release).
      const signed = Object.entries(signRequest({ token, body })).map(([k, v]) => [k, v] as [string, string]);
      const headers = [...withKnock().filter(([k]) => k !== 'Content-Length'), ['Content-Length', String(body.length)] as [string, string], ...signed];
      const answer = json(await send(e, [request(POST, headers), body]));
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.code).toBe('invalid_request');
      expect(answer.body.error.message).toMatch(message);
    });
  });

  it('F. a body over 64 KiB: 413 body_too_large from nginx, before the gateway reads it', async () => {
    await onEveryRelease(async (e) => {
      const body = JSON.stringify({ message: 'x'.repeat(70_000) });
      const answer = json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body)));
      expect(answer.status).toBe(413);
      expect(answer.code).toBe('body_too_large');
    });
  });

  it('F. a client copy of X-Service-Edge is replaced by nginx\'s (a wrong one does not stop the request)', async () => {
    await onEveryRelease(async (e) => {
      const body = '{"message":""}';
      const answer = json(await send(e, request(POST, [...withKnock(body), ['X-Service-Edge', 'forged'], ['X-Service-Edge', 'forged-again'], ...signedHeaders(body)], body)));
      expect(answer.status).toBe(400);
      expect(answer.code).toBe('invalid_request');
    });
  });

  // ---------------------------------------------------------- G. client address

  it('G. the plugin counts a client by the address nginx saw, whatever X-Real-IP / X-Forwarded-For / Forwarded it sends', async () => {
    await onEveryRelease(async (e) => {
      const victim = fresh();
      const spoofer = fresh();
      const body = '{"message":""}';
      // 10 accepted requests (400: authenticated, counted) from one address claiming to be the victim...
      for (let i = 0; i < 10; i++) {
        const spoofed: Array<[string, string]> = [['X-Real-IP', victim], ['X-Forwarded-For', victim], ['Forwarded', `for=${victim}`]];
        const answer = json(await send(e, request(POST, [...withKnock(body), ...spoofed, ...signedHeaders(body)], body), { localAddress: spoofer }));
        expect(answer.status, `request ${i + 1}`).toBe(400);
      }
      // ...did not use up the victim's allowance.
      const answer = json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { localAddress: victim }));
      expect(answer.status).toBe(400);
    });
  });

  // ---------------------------------------------------------- H. the mesh path

  it('H. straight to the gateway (as `tailscale serve` publishes it on the mesh, or a local process): the chat route answers exactly like a path no route claims', async () => {
    const body = JSON.stringify({ message: 'via the mesh' });
    // node:http, so header lines go out as given (an array is sent as repeated lines).
    const post = (p: string, extra: Record<string, string | string[]>) =>
      new Promise<{ status?: number; type?: string; text: string }>((resolve, reject) => {
        const req = http.request(`${gateway.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-service-gateway': knock, ...Object.fromEntries(signedHeaders(body)), ...extra } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    const turns = provider.requests.length;
    const mesh = { 'x-forwarded-for': '100.64.0.7', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'openclaw-acme.tailnet.ts.net' };
    for (const via of [mesh, {}]) {
      const absent = await post('/service-channel/not-a-route', via);
      expect(absent.status).not.toBe(200);
      const edgeHeaders: Array<Record<string, string | string[]>> = [{}, { 'x-service-edge': 'wrong' }, { 'x-service-edge': [edge, edge] }, { 'x-service-edge': [edge, 'other'] }];
      for (const edgeHeader of edgeHeaders) {
        const answer = await post(CHANNEL_PATH, { ...via, ...edgeHeader });
        expect(answer, `${JSON.stringify(via)} ${JSON.stringify(edgeHeader).replaceAll(edge, '<edge>')}`).toEqual(absent);
      }
    }
    expect(provider.requests.length).toBe(turns);
  });

  it('H. the same request through the edge is served', async () => {
    await onEveryRelease(async (e) => {
      const body = JSON.stringify({ message: `via the edge (${e.label})` });
      const answer = json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { waitMs: 120_000 }));
      expect(answer.status).toBe(200);
      expect(answer.body.reply).toBe(`STAND-IN REPLY to: via the edge (${e.label})`);
    });
  }, 120_000);

  // ---------------------------------------------------------- I. rate

  it('I. a burst of 10 messages back to back passes; the 11th gets 429 rate_limited with Retry-After', async () => {
    // One release at a time: its ten agent turns (seconds each on a loaded machine) must fit in the 60 s window.
    await onEveryRelease(async (e) => {
      const client = fresh();
      const statuses: Array<number | undefined> = [];
      for (let i = 0; i < 10; i++) {
        const body = JSON.stringify({ message: `burst ${i}` });
        statuses.push(json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { localAddress: client, waitMs: 120_000 })).status);
      }
      expect(statuses).toEqual(Array(10).fill(200));
      const body = JSON.stringify({ message: 'eleventh' });
      const eleventh = json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { localAddress: client }));
      expect(eleventh.status).toBe(429);
      expect(eleventh.code).toBe('rate_limited');
      expect(Number(/^retry-after: (\d+)$/im.exec(eleventh.headers)?.[1])).toBeGreaterThan(0);
    }, { oneAtATime: true });
  }, 600_000);

  it('I. both layers: 10 quick accepted requests, the 11th refused by nginx (Retry-After: 6, before the gateway); 6.5 s later nginx lets one through and the plugin\'s 60 s window refuses it (Retry-After: the rest of the window)', async () => {
    await onEveryRelease(async (e) => {
      const client = fresh();
      const body = '{"message":""}';
      for (let i = 0; i < 10; i++) expect(json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { localAddress: client })).status, `request ${i + 1}`).toBe(400);
      const byNginx = json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { localAddress: client }));
      expect(byNginx.status).toBe(429);
      expect(byNginx.code).toBe('rate_limited');
      expect(byNginx.headers).toMatch(/^retry-after: 6$/im);
      expect(byNginx.headers).not.toMatch(/^x-content-type-options:/im); // the gateway's headers: not there
      await new Promise((r) => setTimeout(r, 6500));
      const byPlugin = json(await send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { localAddress: client }));
      expect(byPlugin.status).toBe(429);
      expect(byPlugin.code).toBe('rate_limited');
      expect(byPlugin.headers).toMatch(/^x-content-type-options:/im);
      const retry = Number(/^retry-after: (\d+)$/im.exec(byPlugin.headers)?.[1]);
      expect(retry).toBeGreaterThan(40);
      expect(retry).toBeLessThanOrEqual(60);
    });
  }, 60_000);

  it('I. the stated rate is the enforced rate: one request every 0.5 s for 59 s from one address gets at most 10 accepted', async () => {
    const counts: Record<string, Record<string, number>> = {};
    await onEveryRelease(async (e) => {
      const client = fresh();
      const started = Date.now();
      const pending: Array<Promise<number | undefined>> = [];
      for (let i = 0; i < 118; i++) {
        const due = started + i * 500;
        await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
        const body = JSON.stringify({ message: `paced ${i}` });
        pending.push(send(e, request(POST, [...withKnock(body), ...signedHeaders(body)], body), { localAddress: client, waitMs: 120_000 }).then((a) => a.status));
      }
      const statuses = await Promise.all(pending);
      const accepted = statuses.filter((s) => s === 200).length;
      counts[e.label] = statuses.reduce<Record<string, number>>((acc, s) => ((acc[String(s)] = (acc[String(s)] ?? 0) + 1), acc), {});
      expect(accepted, JSON.stringify(counts[e.label])).toBeLessThanOrEqual(10);
      expect(accepted).toBeGreaterThan(0);
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    });
    console.log(`paced 118 requests over 59 s from one address: ${JSON.stringify(counts)}`);
  }, 300_000);

  // ---------------------------------------------------------- logs

  it('nginx (site, access and error logs, every release) and the gateway never logged the token, the knock or the edge secret', () => {
    const logs = fs.readdirSync(logDir).map((f) => fs.readFileSync(path.join(logDir, f), 'utf8')).join('\n') + edges.map((e) => e.nginx.logs()).join('\n');
    for (const e of edges) expect(fs.readFileSync(path.join(logDir, `${e.label.replace(' ', '-')}-access.log`), 'utf8').length, `${e.label} access log`).toBeGreaterThan(0);
    for (const [name, secret] of Object.entries({ token, knock, edge })) {
      expect(logs.includes(secret), `${name} in the nginx logs`).toBe(false);
      expect(gateway.log().includes(secret), `${name} in the gateway log`).toBe(false);
    }
  });
});
