import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseEnvFile } from '../../src/channel/env-file.js';
import { runBinary } from '../helpers/binary.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

describe('channel show: the portal handoff', { timeout: 240_000 }, () => {
  it('refuses to invent a handoff where no channel is deployed', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const r = await runBinary(['channel', 'show'], { env: sb.env() });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('no channel endpoint on this server (/root/.openclaw/channel.env is missing)');
    expect(r.stderr).toContain('service-deploy install --channel');
  });

  it('gives URL and the certificate pin (as openssl computes it); token and knock only with --show-secrets', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const installed = await sb.install(['--channel', '--channel-allow', '198.51.100.7', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(installed.exitCode, String(installed.stderr)).toBe(0);
    const env = parseEnvFile(sb.read('root/.openclaw/channel.env')!);
    const opensslPin = execFileSync('openssl', ['x509', '-noout', '-fingerprint', '-sha256', '-in', path.join(sb.root, 'etc/service-deploy/tls/channel.crt')], { encoding: 'utf8' })
      .trim()
      .replace(/^.*Fingerprint=/i, '');

    const plain = await runBinary(['channel', 'show', '--json'], { env: sb.env() });
    expect(plain.exitCode, String(plain.stderr)).toBe(0);
    const handoff = jsonOutput('channel-show', plain.stdout);
    expect(handoff).toMatchObject({
      ok: true,
      certificate: { sha256: opensslPin, pin: `sha256:${opensslPin.replace(/:/g, '').toLowerCase()}` },
      knockHeader: 'x-service-gateway',
      allow: ['198.51.100.7/32'],
      meshHostname: 'openclaw-acme-dental-gmbh',
    });
    expect(handoff.url).toMatch(/^https:\/\/[^/]+:18790\/service-channel\/chat$/);
    expect(handoff.urls).toContain('https://openclaw-acme-dental-gmbh:18790/service-channel/chat');
    // Loopback only works on the server itself: last.
    expect(handoff.urls.at(-1)).toMatch(/localhost|127\.0\.0\.1|\[::1\]/);
    expect(handoff).not.toHaveProperty('token');
    expect(handoff).not.toHaveProperty('knock');
    const text = await runBinary(['channel', 'show'], { env: sb.env() });
    expect(text.stdout).toContain(`pin           ${handoff.certificate.pin}`);
    expect(text.stdout).toContain('not shown: add --show-secrets');
    for (const out of [plain, text]) {
      for (const secret of [env.SERVICE_CHANNEL_TOKEN!, env.SERVICE_CHANNEL_KNOCK!, env.SERVICE_CHANNEL_EDGE!]) expect(`${out.stdout}${out.stderr}`).not.toContain(secret);
    }

    const full = jsonOutput('channel-show', (await runBinary(['channel', 'show', '--json', '--show-secrets'], { env: sb.env() })).stdout);
    expect(full.token).toBe(env.SERVICE_CHANNEL_TOKEN);
    expect(full.knock).toBe(env.SERVICE_CHANNEL_KNOCK);
    // The edge secret never leaves the server, not even with --show-secrets.
    expect(JSON.stringify(full)).not.toContain(env.SERVICE_CHANNEL_EDGE!);

    // After a rotation the handoff shows the new secrets (what the portal must be given again).
    const rotated = await sb.install(['--channel', '--rotate-channel-secrets', '--non-interactive'], {});
    expect(rotated.exitCode, String(rotated.stderr)).toBe(0);
    const after = jsonOutput('channel-show', (await runBinary(['channel', 'show', '--json', '--show-secrets'], { env: sb.env() })).stdout);
    expect(after.token).not.toBe(full.token);
    expect(after.token).toBe(parseEnvFile(sb.read('root/.openclaw/channel.env')!).SERVICE_CHANNEL_TOKEN);
    expect(after.certificate.pin).toBe(full.certificate.pin);
  });
});
