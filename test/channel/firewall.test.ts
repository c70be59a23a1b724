import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllowList } from '../../src/channel/allow.js';
import { DEFAULT_LIMITS, FIREWALL_TABLE, markerIn, renderFirewallRules } from '../../src/channel/firewall.js';
import { renderNginxSite } from '../../src/channel/nginx.js';
import { CHANNEL_PATH, newSecret, signRequest } from '../../src/channel/protocol.js';
import { makeTestCa } from '../helpers/https-server.js';
import { netnsLab, netnsUnavailable, type NetnsLab } from '../helpers/netns.js';
import { startNginx, type RunningNginx } from '../helpers/nginx.js';
import { startPluginUpstream, type PluginUpstream } from '../helpers/plugin-upstream.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The channel port's firewall table (templates/service-channel-firewall.nft, real
 * nftables) and the rendered nginx site (real nginx) in network namespaces of this test:
 * never in the namespace the tests run in. Clients run inside the client namespace
 * (fixtures/edge-client.mjs) from their own addresses; the plugin (as shipped) answers
 * behind nginx through a unix socket.
 */
const CLIENT = path.join(import.meta.dirname, 'fixtures', 'edge-client.mjs');
const PORT = 18790;
const nftMissing = spawnSync('nft', ['--version']).error ? 'nft (nftables) is not installed: scripts/test-deps.sh installs it' : undefined;
const unavailable = netnsUnavailable() ?? nftMissing;

const token = newSecret();
const knock = newSecret();
const edge = newSecret();
let lab: NetnsLab;
let upstream: PluginUpstream;
let nginx: RunningNginx;
let work: string;
const figures: Record<string, number> = {};

function rules(allow = ''): string {
  return renderFirewallRules({ ...DEFAULT_LIMITS, port: PORT, allow: allow ? parseAllowList(allow) : [] }, 'service-channel-firewall.service');
}

async function loadRules(text: string): Promise<void> {
  const file = path.join(work, `rules-${Date.now()}.nft`);
  fs.writeFileSync(file, text);
  await lab.run(lab.server, 'nft', ['-f', file]);
}

async function unloadRules(): Promise<void> {
  await lab.run(lab.server, 'nft', ['delete', 'table', 'inet', FIREWALL_TABLE], { reject: false });
}

function client(mode: string, options: object): ChildProcess {
  return lab.start(lab.client, process.execPath, [CLIENT, mode, JSON.stringify({ host: lab.serverAddress, port: PORT, ...options })]);
}

/** Runs a client to its end and returns its one JSON line. */
async function once(mode: string, options: object): Promise<any> {
  const r = await lab.run(lab.client, process.execPath, [CLIENT, mode, JSON.stringify({ host: lab.serverAddress, port: PORT, ...options })], { timeoutMs: 90_000 });
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

async function chat(localAddress: string, timeoutMs = 15_000): Promise<{ status?: number; body?: string; error?: string }> {
  const body = JSON.stringify({ message: `hello from ${localAddress}` });
  return once('chat', { localAddress, body, headers: { 'x-service-gateway': knock, ...signRequest({ token, body }) }, timeoutMs });
}

/** A `hold` client: its first report, and a way to ask again and to end it. */
async function hold(localAddress: string, count: number) {
  const child = client('hold', { localAddress, count });
  const lines = readline.createInterface({ input: child.stdout! });
  const queue: any[] = [];
  const waiters: Array<(v: any) => void> = [];
  lines.on('line', (line) => {
    const value = JSON.parse(line);
    const w = waiters.shift();
    if (w) w(value);
    else queue.push(value);
  });
  const next = () => (queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise<any>((resolve) => waiters.push(resolve)));
  const first = await next();
  return {
    first,
    report: async () => {
      child.stdin!.write('report\n');
      return next();
    },
    end: () => {
      child.stdin!.end('exit\n');
      child.kill('SIGKILL');
    },
  };
}

/** Established TCP connections to the channel port from one address, counted in the server namespace. */
async function establishedFrom(address: string): Promise<number> {
  const r = await lab.run(lab.server, 'ss', ['-Htn', 'state', 'established', `( sport = :${PORT} )`]);
  return r.stdout.split('\n').filter((line) => line.includes(`${address}:`)).length;
}

describe.skipIf(unavailable)(`channel firewall in network namespaces (${unavailable ?? 'nftables + real nginx'})`, () => {
  beforeAll(async () => {
    work = tempDir('sd-fw-');
    lab = await netnsLab(10);
    upstream = await startPluginUpstream({ token, edge, socket: true });
    const ca = makeTestCa();
    const site = renderNginxSite({ listen: `${lab.serverAddress}:${PORT}`, upstream: upstream.upstream, cert: ca.certFile, key: ca.keyFile, knock, edge, allow: [], errorLog: path.join(work, 'site-error.log'), accessLog: path.join(work, 'site-access.log') });
    nginx = await startNginx(site, PORT, { netns: lab.server, host: lab.serverAddress });
  }, 120_000);

  afterAll(async () => {
    if (Object.keys(figures).length > 0) console.log(`channel firewall figures: ${JSON.stringify(figures)}`);
    await nginx?.stop();
    await lab?.close();
    await upstream?.close();
  });

  it('nft accepts the rendered table with and without an allow list; `nft list table` carries the file\'s marker', async () => {
    for (const text of [rules(), rules('198.18.0.0/15,2001:db8::/32'), rules('203.0.113.7')]) {
      const file = path.join(work, 'check.nft');
      fs.writeFileSync(file, text);
      await lab.run(lab.server, 'nft', ['-c', '-f', file]);
    }
    await loadRules(rules());
    const listed = (await lab.run(lab.server, 'nft', ['list', 'table', 'inet', FIREWALL_TABLE])).stdout;
    expect(markerIn(listed)).toBe(markerIn(rules()));
    expect(markerIn(rules('203.0.113.7'))).not.toBe(markerIn(rules()));
    // Loading the file again replaces the table in one transaction (no "table exists" error).
    await loadRules(rules());
    await unloadRules();
  });

  it('slowloris: one address holding as many half-open connections as it can gets 3; a second address is served meanwhile', async () => {
    const [attacker, other] = lab.clientAddresses;
    await loadRules(rules());
    try {
      const h = await hold(attacker!, 300);
      try {
        expect(h.first.connected, JSON.stringify(h.first)).toBe(DEFAULT_LIMITS.maxConnections);
        expect(h.first.refused).toBe(300 - DEFAULT_LIMITS.maxConnections);
        const held = await establishedFrom(attacker!);
        expect(held).toBeLessThanOrEqual(DEFAULT_LIMITS.maxConnections);
        figures.withTableHeld = held;
        const served = await chat(other!);
        expect(served.status, JSON.stringify(served)).toBe(200);
        expect(JSON.parse(served.body!).reply).toBe(`SCRIPTED REPLY to: hello from ${other}`);
        // nginx closes the half-sent handshakes after client_header_timeout (10 s), not later.
        const deadline = Date.now() + 30_000;
        let report = await h.report();
        while (report.open > 0 && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 500));
          report = await h.report();
        }
        expect(report.open, 'half-open connections still open 30 s after they were made').toBe(0);
      } finally {
        h.end();
      }
    } finally {
      await unloadRules();
    }
  }, 120_000);

  it('without the table (nginx alone) one address holds hundreds of half-open connections (the figure the table brings to 3)', async () => {
    const [, , attacker, other] = lab.clientAddresses;
    const h = await hold(attacker!, 300);
    try {
      expect(h.first.connected).toBe(300);
      // nginx takes up to its worker_connections (256 here), then closes the idlest
      // ("reusing connections"); the rest wait in the kernel's accept queue.
      const held = await establishedFrom(attacker!);
      expect(held).toBeGreaterThan(100);
      figures.nginxAloneHeld = held;
    } finally {
      h.end();
    }
    const deadline = Date.now() + 30_000;
    let again = await chat(other!, 5000);
    while (again.status !== 200 && Date.now() < deadline) again = await chat(other!, 5000);
    expect(again.status).toBe(200);
  }, 120_000);

  it('new connections per address: a burst of 20, then refused (reset before TLS) while another address connects', async () => {
    const [, , , , attacker, other] = lab.clientAddresses;
    await loadRules(rules());
    try {
      const flood = await once('flood', { localAddress: attacker, seconds: 3, parallel: 4 });
      // 20 in the burst, plus at most one refill (one per 3 s) while the flood ran.
      expect(flood.handshakes, JSON.stringify(flood)).toBeGreaterThanOrEqual(DEFAULT_LIMITS.newBurst);
      expect(flood.handshakes, JSON.stringify(flood)).toBeLessThanOrEqual(DEFAULT_LIMITS.newBurst + 2);
      expect(flood.failures).toBeGreaterThan(0);
      expect((await chat(other!)).status).toBe(200);
    } finally {
      await unloadRules();
    }
  }, 60_000);

  it('--channel-allow in nginx alone (where nftables cannot be used): another address gets the TLS handshake and then nothing, with the knock even; the listed one is served', async () => {
    const [, , , , , , , , listed, stranger] = lab.clientAddresses;
    const ca = makeTestCa();
    const site = renderNginxSite({ listen: `${lab.serverAddress}:${PORT + 1}`, upstream: upstream.upstream, cert: ca.certFile, key: ca.keyFile, knock, edge, allow: parseAllowList(`${listed}`), errorLog: path.join(work, 'allow-error.log'), accessLog: path.join(work, 'allow-access.log') });
    const allowNginx = await startNginx(site, PORT + 1, { netns: lab.server, host: lab.serverAddress });
    try {
      const closed = await once('raw', { port: PORT + 1, localAddress: stranger, request: `POST ${CHANNEL_PATH} HTTP/1.1\r\nHost: x\r\nX-Service-Gateway: ${knock}\r\nContent-Length: 2\r\n\r\n{}` });
      // Closed (a FIN, or a reset when nginx closes with the request still unread): never a byte.
      expect([undefined, 'ECONNRESET']).toContain(closed.error);
      expect(closed.bytes).toBe(0);
      const body = JSON.stringify({ message: 'listed' });
      expect((await once('chat', { port: PORT + 1, localAddress: listed, body, headers: { 'x-service-gateway': knock, ...signRequest({ token, body }) } })).status).toBe(200);
    } finally {
      await allowNginx.stop();
    }
  }, 60_000);

  it('--channel-allow in nftables: other addresses are reset before TLS (no byte), listed ones are served', async () => {
    const [, , , , , , listed, stranger] = lab.clientAddresses;
    await loadRules(rules(`${listed}/32,2001:db8::/48`));
    try {
      const refused = await once('raw', { localAddress: stranger, request: `POST ${CHANNEL_PATH} HTTP/1.1\r\nHost: x\r\nX-Service-Gateway: ${knock}\r\n\r\n` });
      expect(refused.error).toBe('ECONNREFUSED');
      expect(refused.bytes).toBe(0);
      expect((await chat(listed!)).status).toBe(200);
    } finally {
      await unloadRules();
    }
  }, 60_000);
});
