// `--channel-host NAME|ADDRESS` (issue 30, item 5), with the built binary in a sandbox
// (real openssl): the names the portal reaches the server by go into the channel
// certificate and first into `channel show`; they are kept on re-runs; a change
// re-issues the certificate, which the install says plainly with the new pin; check and
// diff modes show that without writing; bad input changes nothing.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBinary } from '../helpers/binary.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL, makeSandbox, snapshotFiles, type Sandbox } from '../helpers/sandbox.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

const CERT = 'etc/service-deploy/tls/channel.crt';
const ANSWERS = 'var/lib/service-deploy/answers.json';
const URL_OF = (host: string) => `https://${host}:18790/service-channel/chat`;

function cert(sb: Sandbox): X509Certificate {
  return new X509Certificate(sb.read(CERT)!);
}
const pinOf = (c: X509Certificate) => `sha256:${c.fingerprint256.replace(/:/g, '').toLowerCase()}`;

async function handoff(sb: Sandbox) {
  const r = await runBinary(['channel', 'show', '--json'], { env: sb.env() });
  expect(r.exitCode, String(r.stderr)).toBe(0);
  return jsonOutput('channel-show', r.stdout);
}

/** Files outside the install's own log, with their mtimes: a run that writes nothing leaves this as it was. */
const files = (sb: Sandbox) => new Map([...snapshotFiles(sb.root)].filter(([file]) => !file.startsWith('var/log/service-deploy/')));

describe('--channel-host: the names the portal reaches the channel by', { timeout: 600_000 }, () => {
  it('first install: in the certificate, stored with the answers, first in channel show (text and JSON); a re-run with the same names (or none given) changes nothing', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const first = await sb.install(['--channel', '--channel-host', '203.0.113.7', '--channel-host', 'Chat.Acme-Dental.example', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(first.exitCode, String(first.stderr)).toBe(0);
    // A first certificate: nobody holds a pin yet, so nothing to warn about.
    expect(String(first.stdout)).not.toContain('CHANNEL PIN CHANGED');
    expect(cert(sb).subjectAltName).toContain('IP Address:203.0.113.7');
    expect(cert(sb).subjectAltName).toContain('DNS:chat.acme-dental.example');
    expect(JSON.parse(sb.read(ANSWERS)!).channelHosts).toEqual(['203.0.113.7', 'chat.acme-dental.example']);

    const shown = await handoff(sb);
    expect(shown.urls.slice(0, 2)).toEqual([URL_OF('203.0.113.7'), URL_OF('chat.acme-dental.example')]);
    expect(shown.url).toBe(URL_OF('203.0.113.7'));
    expect(shown.certificate.pin).toBe(pinOf(cert(sb)));
    const text = (await runBinary(['channel', 'show'], { env: sb.env() })).stdout;
    expect(text.split('\n').slice(0, 2)).toEqual([`url           ${URL_OF('203.0.113.7')}`, `              ${URL_OF('chat.acme-dental.example')}`]);

    const before = files(sb);
    for (const args of [['--channel', '--channel-host', '203.0.113.7', '--channel-host', 'chat.acme-dental.example'], ['--channel'], []]) {
      const again = await sb.install([...args, '--non-interactive', '--json']);
      expect(again.exitCode, String(again.stderr)).toBe(0);
      const json = jsonOutput('install', again.stdout);
      const step = (id: string) => json.steps.find((s: { id: string }) => s.id === id);
      expect([step('answers').status, step('channel-tls').status, step('channel-nginx').status], args.join(' ')).toEqual(['ok', 'ok', 'ok']);
      expect(json.channel).toEqual({ url: URL_OF('203.0.113.7'), pin: shown.certificate.pin, pinChanged: false });
    }
    expect(files(sb)).toEqual(before);
  });

  it('a new name: --check and --diff show the re-issue and write nothing; the run re-issues, says the pin changed and shows the new one; --json carries it; none clears the list and keeps the certificate', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    expect((await sb.install(['--channel', ...FIRST_INSTALL.args], FIRST_INSTALL.env)).exitCode).toBe(0);
    const oldPin = pinOf(cert(sb));
    expect((await handoff(sb)).url).not.toBe(URL_OF('chat.acme-dental.example'));

    const before = files(sb);
    sb.clearCalls();
    for (const mode of ['--check', '--diff']) {
      const plan = await sb.install([mode, '--channel', '--channel-host', 'chat.acme-dental.example', '--non-interactive']);
      expect(plan.exitCode, String(plan.stderr)).toBe(0);
      const out = String(plan.stdout);
      expect(out).toContain('new certificate: the certificate lacks DNS:chat.acme-dental.example; a new certificate has a new pin: give the portal the new one (`service-deploy channel show`), it refuses the server until then');
      expect(out).toContain('would change  answers: /var/lib/service-deploy/answers.json');
      if (mode === '--diff') expect(out).toMatch(/^\+ {2}"channelHosts": \[$/m);
      expect(out).not.toContain('CHANNEL PIN CHANGED');
    }
    expect(files(sb)).toEqual(before);
    expect(sb.calls('systemctl').filter((c) => c.args.includes('reload'))).toEqual([]);

    const run = await sb.install(['--channel', '--channel-host', 'chat.acme-dental.example', '--non-interactive']);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const newPin = pinOf(cert(sb));
    expect(newPin).not.toBe(oldPin);
    expect(cert(sb).subjectAltName).toContain('DNS:chat.acme-dental.example');
    expect(String(run.stdout)).toContain(`CHANNEL PIN CHANGED: this run made a new channel certificate. Its pin is now ${newPin} (it was ${oldPin}).`);
    expect(String(run.stdout)).toContain('The portal refuses this server until it pins the new one: give it `sudo service-deploy channel show --json` (url, certificate.pin).');
    expect(sb.calls('systemctl').some((c) => c.args.join(' ') === 'reload nginx' || c.args.join(' ') === 'enable --now nginx')).toBe(true);
    const shown = await handoff(sb);
    expect([shown.url, shown.certificate.pin]).toEqual([URL_OF('chat.acme-dental.example'), newPin]);

    const json = await sb.install(['--channel', '--channel-host', 'chat.acme-dental.example', '--channel-host', '2001:db8::7', '--non-interactive', '--json']);
    expect(json.exitCode, String(json.stderr)).toBe(0);
    const third = pinOf(cert(sb));
    expect(jsonOutput('install', json.stdout).channel).toEqual({ url: URL_OF('chat.acme-dental.example'), pin: third, pinChanged: true, previousPin: newPin });
    expect((await handoff(sb)).urls.slice(0, 2)).toEqual([URL_OF('chat.acme-dental.example'), URL_OF('[2001:db8::7]')]);

    // none: the list is cleared; the certificate (and the pin the portal holds) stays.
    const cleared = await sb.install(['--channel', '--channel-host', 'none', '--non-interactive']);
    expect(cleared.exitCode, String(cleared.stderr)).toBe(0);
    expect(JSON.parse(sb.read(ANSWERS)!)).not.toHaveProperty('channelHosts');
    expect(pinOf(cert(sb))).toBe(third);
    expect(String(cleared.stdout)).not.toContain('CHANNEL PIN CHANGED');
    expect((await handoff(sb)).url).not.toBe(URL_OF('chat.acme-dental.example'));
  });

  it('from an answers file or SERVICE_CHANNEL_HOSTS like the other answers; bad names are refused naming the field and source, exit 2, nothing changed', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const answersFile = path.join(sb.state, 'answers.json');
    fs.writeFileSync(answersFile, JSON.stringify({ customerName: 'Acme Dental GmbH', apiKey: FIRST_INSTALL.env.SERVICE_API_KEY, meshAuthKey: FIRST_INSTALL.env.SERVICE_MESH_AUTH_KEY, mcpToken: FIRST_INSTALL.env.SERVICE_MCP_TOKEN, channelHosts: ['agent.acme-dental.example'] }), { mode: 0o600 });
    const installed = await sb.install(['--channel', '--answers', answersFile, '--non-interactive']);
    expect(installed.exitCode, String(installed.stderr)).toBe(0);
    expect((await handoff(sb)).url).toBe(URL_OF('agent.acme-dental.example'));

    const before = files(sb);
    const refusals: Array<[string[], Record<string, string>, RegExp]> = [
      [['--channel', '--channel-host', 'https://chat.acme.example'], {}, /channel host \(from --channel-host\): "https:\/\/chat\.acme\.example" is a URL: give only its host name/],
      [['--channel', '--channel-host', '203.0.113.7:18790'], {}, /channel host \(from --channel-host\): "203\.0\.113\.7:18790" has a port/],
      [['--channel'], { SERVICE_CHANNEL_HOSTS: 'bad_name.example' }, /SERVICE_CHANNEL_HOSTS must be DNS names or IP addresses separated by commas, or none: "bad_name\.example" is neither/],
      [['--channel', '--channel-host'], {}, /--channel-host needs a value/],
      [['--no-channel', '--channel-host', 'chat.acme.example'], {}, /--channel-host applies to the channel endpoint, which this run does not configure \(--no-channel\)/],
    ];
    for (const [args, env, says] of refusals) {
      const r = await sb.install([...args, '--non-interactive'], env);
      expect(r.exitCode, `${args.join(' ')}: ${String(r.stderr)}`).toBe(2);
      expect(String(r.stderr)).toMatch(says);
      expect(String(r.stderr)).toMatch(/nothing was changed/);
      expect(String(r.stderr)).not.toMatch(/Internal error/);
    }
    // --channel-host adds up when repeated; any other flag given twice keeps its last value, as before.
    const twice = await sb.install(['--diff', '--model', 'first-model', '--model', 'second-model', '--non-interactive']);
    expect(twice.exitCode, String(twice.stderr)).toBe(0);
    expect(String(twice.stdout)).toMatch(/^\+ {2}"modelId": "second-model",$/m);
    expect(String(twice.stdout)).not.toContain('first-model');
    fs.writeFileSync(answersFile, JSON.stringify({ channelHosts: ['ok.example', '*.acme.example'] }), { mode: 0o600 });
    const fromFile = await sb.install(['--channel', '--answers', answersFile, '--non-interactive']);
    expect(fromFile.exitCode).toBe(2);
    expect(String(fromFile.stderr)).toContain('channel host (from --answers file): "*.acme.example" is a wildcard');
    expect(files(sb)).toEqual(before);

    // On a server without the channel, the flag asks for --channel instead of doing nothing.
    const plain = await makeSandbox();
    sandboxes.push(plain);
    const r = await plain.install(['--channel-host', 'chat.acme.example', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toContain('--channel-host applies to the channel endpoint, which this run does not configure');
    expect(String(r.stderr)).toContain('add --channel (or --catalog); nothing was changed');
    expect(fs.existsSync(path.join(plain.root, 'var/lib/service-deploy'))).toBe(false);
  });
});
