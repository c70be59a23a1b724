import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChat, type ChatContext } from '../../src/channel/client.js';
import { parseAllowList } from '../../src/channel/allow.js';
import { PRODUCTION_SITE, renderNginxSite } from '../../src/channel/nginx.js';
import { newSecret } from '../../src/channel/protocol.js';
import { LAYOUT } from '../../src/layout.js';
import { channelTlsStep, wantedSans } from '../../src/steps/channel.js';
import { sandboxContext } from '../helpers/install-ctx.js';
import { freePort, nginxTest, rawRequest, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The rendered site in a real nginx on loopback, with the certificate the TLS step
 * makes (real openssl) and a loopback stand-in for the gateway.
 */
const knock = newSecret();
const edge = newSecret();
let logs = '';
let nginx: RunningNginx;
let upstream: http.Server;
let certPem = '';
let wanted: string[] = [];
const seen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
const held: http.ServerResponse[] = [];

beforeAll(async () => {
  const ctx = sandboxContext();
  const plan = await channelTlsStep.check(ctx);
  await channelTlsStep.apply(ctx, plan);
  await channelTlsStep.verify!(ctx);
  wanted = await wantedSans(ctx);
  certPem = fs.readFileSync(ctx.host.paths.real(LAYOUT.tlsCert), 'utf8');

  upstream = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      if (req.headers['x-test-hold']) {
        held.push(res);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ reply: 'upstream', sessionId: 's', model: 'm' }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = await freePort();
  logs = tempDir('sd-nginx-logs-');
  const site = renderNginxSite({
    listen: `127.0.0.1:${port}`,
    upstream: `127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    cert: ctx.host.paths.real(LAYOUT.tlsCert),
    key: ctx.host.paths.real(LAYOUT.tlsKey),
    knock,
    edge,
    allow: [],
    errorLog: path.join(logs, 'error.log'),
    accessLog: path.join(logs, 'access.log'),
  });
  nginx = await startNginx(site, port);
}, 120_000);

afterAll(async () => {
  for (const res of held.splice(0)) res.destroy();
  await nginx?.stop();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

const good = (extra: Record<string, string> = {}) => ({ 'x-service-gateway': knock, 'content-type': 'application/json', ...extra });

describe('TLS certificate (channel-tls step, real openssl)', () => {
  it('is RSA 4096, valid for at least 3650 days, with the mesh hostname, localhost and the addresses as SANs', () => {
    const cert = new X509Certificate(certPem);
    expect(cert.publicKey.asymmetricKeyType).toBe('rsa');
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(4096);
    const days = (new Date(cert.validTo).getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThanOrEqual(3650);
    expect(cert.subjectAltName).toContain('DNS:openclaw-acme');
    expect(cert.subjectAltName).toContain('DNS:localhost');
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(wanted).toContain('IP:127.0.0.1');
    for (const san of wanted.filter((s) => s.startsWith('IP:') && !s.includes(':', 3))) {
      expect(cert.subjectAltName).toContain(`IP Address:${san.slice(3)}`);
    }
  });
});

describe('nginx site (real nginx on loopback)', () => {
  it('passes nginx -t as rendered for production, and uses limit_conn without zone=', async () => {
    const site = renderNginxSite({ ...PRODUCTION_SITE, cert: nginx.dir + '/../x', key: 'k', knock, edge, allow: parseAllowList('198.51.100.0/24,2001:db8::/32') });
    expect(site).toMatch(/^\s*limit_conn service_cn 3;$/m);
    expect(site).toMatch(/^\s*198\.51\.100\.0\/24 1;$/m);
    expect(site).toMatch(/^\s*error_log \/var\/log\/nginx\/error\.log warn;$/m);
    expect(site).not.toMatch(/limit_conn\s+zone=/);
    expect(site).toMatch(/listen 0\.0\.0\.0:18790 ssl;/);
    expect(site).toMatch(/proxy_pass http:\/\/127\.0\.0\.1:18789\/service-channel\/chat;/);
    // Logs into the test's folder: nginx -t opens them, and this machine's /var/log/nginx is not ours.
    const result = await nginxTest(site.replaceAll('/var/log/nginx/', `${logs}/`).replace(/ssl_certificate(_key)? [^;]+;/g, '').replace('listen 0.0.0.0:18790 ssl;', 'listen 127.0.0.1:9 ssl;\n    ssl_reject_handshake on;'));
    expect(result.output).toMatch(/test is successful/);
  });

  it('a malformed limit_conn (zone=) fails nginx -t with the spec\'s error', async () => {
    const site = renderNginxSite({ ...PRODUCTION_SITE, knock, edge, allow: [] }).replaceAll('/var/log/nginx/', `${logs}/`).replace('limit_conn service_cn 3;', 'limit_conn zone=service_cn 3;')
      .replace(/ssl_certificate(_key)? [^;]+;/g, '').replace('listen 0.0.0.0:18790 ssl;', 'listen 127.0.0.1:9 ssl;\n    ssl_reject_handshake on;');
    const result = await nginxTest(site);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/zero size shared memory zone/);
  });

  it('proxies /service-channel/chat with the right knock: nginx writes the request line, the client address and the edge secret; client copies are replaced', async () => {
    const spoofed = { 'x-real-ip': '10.9.9.9', 'x-forwarded-for': '10.9.9.9', forwarded: 'for=10.9.9.9', 'x-forwarded-host': 'evil', 'x-service-edge': 'forged', 'tailscale-user-login': 'admin@example.com' };
    const answer = await rawRequest({ port: nginx.port, localAddress: '127.0.0.2', headers: good(spoofed), body: '{}', ca: certPem });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).reply).toBe('upstream');
    const last = seen.at(-1)!;
    expect(last.url).toBe('/service-channel/chat');
    expect(last.headers['x-real-ip']).toBe('127.0.0.2');
    expect(last.headers['x-forwarded-for']).toBe('127.0.0.2');
    expect(last.headers['x-forwarded-proto']).toBe('https');
    expect(last.headers['x-service-edge']).toBe(edge);
    // The knock line goes on (the plugin counts the lines: one, or the connection is closed).
    expect(last.headers['x-service-gateway']).toBe(knock);
    for (const name of ['forwarded', 'x-forwarded-host', 'tailscale-user-login']) expect(last.headers[name], name).toBeUndefined();
  });

  it.each([
    ['missing', {}],
    ['wrong', { 'x-service-gateway': `${knock.slice(0, -1)}x` }],
    ['case-changed', { 'x-service-gateway': knock.toUpperCase() === knock ? knock.toLowerCase() : knock.toUpperCase() }],
    ['empty', { 'x-service-gateway': '' }],
  ])('%s knock: the connection is closed with no response bytes (444)', async (_, headers) => {
    const before = seen.length;
    const answer = await rawRequest({ port: nginx.port, localAddress: '127.0.0.3', headers, body: '{}' });
    expect(answer.bytes.length).toBe(0);
    expect(seen.length).toBe(before);
    // The same for any path: without the knock nothing is revealed, not even a 404.
    expect((await rawRequest({ port: nginx.port, localAddress: '127.0.0.3', path: '/other', method: 'GET', headers })).bytes.length).toBe(0);
  });

  it('closes any other path without a response, knock given (test/channel/edge.test.ts has the variants)', async () => {
    const before = seen.length;
    expect((await rawRequest({ port: nginx.port, localAddress: '127.0.0.4', path: '/healthz', method: 'GET', headers: good() })).bytes.length).toBe(0);
    expect((await rawRequest({ port: nginx.port, localAddress: '127.0.0.4', path: '/service-channel/chat/x', headers: good() })).bytes.length).toBe(0);
    expect(seen.length).toBe(before);
  });

  it('refuses a body over 64 KiB with a JSON 413', async () => {
    const answer = await rawRequest({ port: nginx.port, localAddress: '127.0.0.5', headers: good(), body: 'x'.repeat(70_000) });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error.code).toBe('body_too_large');
  });

  it('rate limit: knock misses do not count; 10 requests pass at once, the 11th gets a JSON 429', async () => {
    const ip = '127.0.0.6';
    for (let i = 0; i < 15; i++) expect((await rawRequest({ port: nginx.port, localAddress: ip, headers: {} })).bytes.length).toBe(0);
    const statuses: Array<number | undefined> = [];
    let last = '';
    for (let i = 0; i < 11; i++) {
      const answer = await rawRequest({ port: nginx.port, localAddress: ip, headers: good(), body: '{}' });
      statuses.push(answer.status);
      last = answer.body;
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(statuses[10]).toBe(429);
    expect(JSON.parse(last).error.code).toBe('rate_limited');
    // Another client address is not affected.
    expect((await rawRequest({ port: nginx.port, localAddress: '127.0.0.7', headers: good(), body: '{}' })).status).toBe(200);
  });

  it('connection limit: with 3 requests in progress, a 4th from the same IP gets 429', async () => {
    const ip = '127.0.0.8';
    const holds = [0, 1, 2].map(() => rawRequest({ port: nginx.port, localAddress: ip, headers: good({ 'x-test-hold': '1' }), body: '{}' }));
    const deadline = Date.now() + 10_000;
    while (held.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(held.length).toBe(3);
    const fourth = await rawRequest({ port: nginx.port, localAddress: ip, headers: good(), body: '{}' });
    expect(fourth.status).toBe(429);
    for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{"reply":"late"}');
    expect((await Promise.all(holds)).map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await rawRequest({ port: nginx.port, localAddress: ip, headers: good(), body: '{}' })).status).toBe(200);
  });

  it('speaks TLS 1.3 and 1.2, and refuses TLS 1.1', async () => {
    expect((await rawRequest({ port: nginx.port, localAddress: '127.0.0.9', headers: good(), body: '{}', maxVersion: 'TLSv1.2' })).protocol).toBe('TLSv1.2');
    expect((await rawRequest({ port: nginx.port, localAddress: '127.0.0.9', headers: good(), body: '{}' })).protocol).toBe('TLSv1.3');
    await expect(rawRequest({ port: nginx.port, localAddress: '127.0.0.9', headers: good(), minVersion: 'TLSv1', maxVersion: 'TLSv1.1' })).rejects.toThrow();
  });

  it('service-deploy chat reaches the stand-in through nginx, trusting the certificate with --pin and with --ca', async () => {
    const fingerprint = new X509Certificate(certPem).fingerprint256;
    const dir = path.join(nginx.dir, 'client');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'ca.pem'), certPem);
    for (const trust of [{ pin: fingerprint }, { ca: path.join(dir, 'ca.pem') }]) {
      const out: string[] = [];
      const ctx: ChatContext = {
        env: { SERVICE_CHANNEL_TOKEN: newSecret(), SERVICE_CHANNEL_KNOCK: knock, SERVICE_CHANNEL_URL: `https://127.0.0.1:${nginx.port}` },
        readFile: (p) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : undefined),
        readStdin: async () => '',
        stdout: (l) => out.push(l),
        stderr: () => {},
      };
      await runChat({ message: 'hi', ...trust }, ctx);
      expect(out).toEqual(['upstream']);
    }
  });
});
