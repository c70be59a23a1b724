import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { HEADER, verifyRequest, type ChannelResponse } from '../../src/channel/protocol.js';
import { makeTestCa, type TestCa } from './https-server.js';

export interface ChannelStandIn {
  url: string;
  ca: TestCa;
  /** SHA-256 fingerprint of the server certificate, hex with colons (as openssl prints it). */
  fingerprint: string;
  /** Every request that reached the HTTP layer (after TLS), with its headers and body. */
  requests: Array<{ headers: Record<string, string | string[] | undefined>; body: string }>;
  /** The next answer instead of the echo, once. */
  answerNext?: { status: number; body: unknown; headers?: Record<string, string> };
  close(): Promise<void>;
}

/**
 * A loopback HTTPS stand-in for nginx + plugin: drops the connection on a wrong knock
 * (like nginx's 444), verifies bearer and signature with the protocol module, and
 * echoes the message as a ChannelResponse.
 */
export async function startChannelStandIn(secrets: { token: string; knock: string }): Promise<ChannelStandIn> {
  const ca = makeTestCa();
  const seen = new Set<string>();
  const state: ChannelStandIn = {
    url: '',
    ca,
    fingerprint: new X509Certificate(fs.readFileSync(ca.certFile)).fingerprint256,
    requests: [],
    close: async () => {},
  };
  const server = https.createServer({ key: fs.readFileSync(ca.keyFile), cert: fs.readFileSync(ca.certFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      state.requests.push({ headers: req.headers, body });
      if (req.headers[HEADER.knock] !== secrets.knock) {
        req.socket.destroy();
        return;
      }
      const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      if (state.answerNext) {
        const next = state.answerNext;
        state.answerNext = undefined;
        return send(next.status, next.body, next.headers);
      }
      const verdict = verifyRequest({ token: secrets.token, method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, nowSeconds: Date.now() / 1000 });
      if (!verdict.ok) return send(401, { error: { code: verdict.code, message: verdict.message } });
      if (seen.has(verdict.nonce)) return send(401, { error: { code: 'nonce_replayed', message: 'replayed' } });
      seen.add(verdict.nonce);
      const parsed = JSON.parse(body) as { message: string; sessionId?: string };
      const answer: ChannelResponse = { reply: `echo: ${parsed.message}`, sessionId: parsed.sessionId ?? 'new-session', model: 'service/test-model' };
      send(200, answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return state;
}
