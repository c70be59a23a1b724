import { afterAll, describe, expect, it } from 'vitest';
import { runBinary } from '../helpers/binary.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

// `channel show` puts the names a portal can reach first and loopback last (issue 30.10):
// Node writes IPv6 names in full (0:0:0:0:0:0:0:1), which no longer hides ::1 among them.
const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

describe('channel show: the order of the URLs', { timeout: 240_000 }, () => {
  it('IPv6 in its short form; [::1], localhost and 127.0.0.1 after every other name', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    expect((await sb.install(['--channel', ...FIRST_INSTALL.args], FIRST_INSTALL.env)).exitCode).toBe(0);
    const handoff = jsonOutput('channel-show', (await runBinary(['channel', 'show', '--json'], { env: sb.env() })).stdout);
    const hosts = handoff.urls.map((url: string) => new URL(url).hostname);
    // The certificate carries ::1 (the install adds loopback), so the handoff must place it.
    expect(handoff.certificate.names).toContain('IP:0:0:0:0:0:0:0:1');
    expect(handoff.urls.join(' ')).not.toContain('0:0:0:0');
    const loopback = (host: string) => host === '[::1]' || host === 'localhost' || host.startsWith('127.');
    const firstLoopback = hosts.findIndex(loopback);
    expect(firstLoopback).toBeGreaterThan(0);
    expect(hosts.slice(firstLoopback).every(loopback), hosts.join(' ')).toBe(true);
    expect(hosts).toContain('[::1]');
    expect(loopback(hosts[0]!)).toBe(false);
    expect(hosts.indexOf('openclaw-acme-dental-gmbh')).toBeLessThan(firstLoopback);

    const text = (await runBinary(['channel', 'show'], { env: sb.env() })).stdout;
    expect(text.split('\n')[0]).toBe(`url           ${handoff.url}`);
    expect(text).toContain('https://[::1]:18790/service-channel/chat');
  });
});
