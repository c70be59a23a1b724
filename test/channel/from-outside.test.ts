// Testing the channel from another machine, as docs/operator.md ("The channel from
// outside") tells a partner engineer to: the handoff JSON of a sandbox install made with
// --channel-host and --channel-allow, the real nginx serving that site in a network
// namespace of this test (the server), the plugin as shipped behind it, and the client
// in a second namespace (another machine): `service-deploy chat --handoff` with the
// built binary, and the documented curl + openssl + python3 block exactly as written.
// Nothing runs in the namespace the tests run in.
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllowList } from '../../src/channel/allow.js';
import { parseEnvFile } from '../../src/channel/env-file.js';
import { PRODUCTION_SITE, renderNginxSite } from '../../src/channel/nginx.js';
import { BINARY, REPO, cleanEnv, runBinary } from '../helpers/binary.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { netnsLab, netnsUnavailable, type NetnsLab } from '../helpers/netns.js';
import { startNginx, type RunningNginx } from '../helpers/nginx.js';
import { startPluginUpstream, type PluginUpstream } from '../helpers/plugin-upstream.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

const PORT = 18790;
const unavailable = netnsUnavailable() ?? (fs.existsSync(BINARY) ? undefined : 'dist/service-deploy is missing: npm run build');

/** The documented curl block: the ```sh block after the marker in docs/operator.md. */
function documentedCurlBlock(): string {
  const doc = fs.readFileSync(path.join(REPO, 'docs/operator.md'), 'utf8');
  const m = /<!-- test\/channel\/from-outside\.test\.ts [^>]*-->\n```sh\n([\s\S]*?)^```$/m.exec(doc);
  if (!m) throw new Error('docs/operator.md: no ```sh block after the from-outside.test.ts marker');
  return m[1]!;
}

let lab: NetnsLab;
let sb: Sandbox;
let upstream: PluginUpstream;
let nginx: RunningNginx;
let handoffText = '';
let secrets: Record<string, string> = {};

/** A folder on "the other machine" holding the handoff, as copied there (0600). */
function otherMachine(): string {
  const dir = tempDir('sd-outside-');
  fs.writeFileSync(path.join(dir, 'handoff.json'), handoffText, { mode: 0o600 });
  return dir;
}

describe.skipIf(unavailable)(`the channel from another machine, with the handoff (${unavailable ?? 'network namespaces, real nginx'})`, () => {
  beforeAll(async () => {
    lab = await netnsLab(2);
    sb = await makeSandbox();
    const [allowed] = lab.clientAddresses;
    const installed = await sb.install(['--channel', '--channel-host', lab.serverAddress, '--channel-allow', allowed!, ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(installed.exitCode, String(installed.stderr)).toBe(0);
    const shown = await runBinary(['channel', 'show', '--json', '--show-secrets'], { env: sb.env() });
    expect(shown.exitCode, shown.stderr).toBe(0);
    handoffText = shown.stdout;
    secrets = parseEnvFile(sb.read('root/.openclaw/channel.env')!) as Record<string, string>;
    const values = { knock: secrets.SERVICE_CHANNEL_KNOCK!, edge: secrets.SERVICE_CHANNEL_EDGE!, allow: parseAllowList(secrets.SERVICE_CHANNEL_ALLOW!) };
    // The site the install wrote, here with the sandbox's certificate, the test's logs and the plugin on a socket.
    expect(renderNginxSite({ ...PRODUCTION_SITE, ...values })).toBe(sb.read('etc/nginx/conf.d/service-channel.conf'));
    upstream = await startPluginUpstream({ token: secrets.SERVICE_CHANNEL_TOKEN!, edge: values.edge, socket: true });
    const logs = tempDir('sd-outside-logs-');
    const site = renderNginxSite({
      ...values,
      listen: `${lab.serverAddress}:${PORT}`,
      upstream: upstream.upstream,
      cert: path.join(sb.root, 'etc/service-deploy/tls/channel.crt'),
      key: path.join(sb.root, 'etc/service-deploy/tls/channel.key'),
      errorLog: path.join(logs, 'error.log'),
      accessLog: path.join(logs, 'access.log'),
    });
    nginx = await startNginx(site, PORT, { netns: lab.server, host: lab.serverAddress });
  }, 300_000);

  afterAll(async () => {
    await nginx?.stop();
    await lab?.close();
    await upstream?.close();
    await sb?.close();
  });

  it('the handoff names the --channel-host address first, with the pin of the certificate nginx serves', () => {
    const handoff = jsonOutput('channel-show', handoffText);
    expect(handoff.url).toBe(`https://${lab.serverAddress}:${PORT}/service-channel/chat`);
    expect(handoff.allow).toEqual([`${lab.clientAddresses[0]}/32`]);
    expect(handoff.token).toBe(secrets.SERVICE_CHANNEL_TOKEN);
  });

  it('`service-deploy chat --handoff handoff.json` from the other machine gets the agent\'s reply, through every layer (the allow list, the pin, the knock, the bearer, the signature)', async () => {
    const dir = otherMachine();
    const before = upstream.turns.length;
    const r = await execa('ip', ['netns', 'exec', lab.client, BINARY, 'chat', '--handoff', 'handoff.json', '--message', 'Hello from outside'], { cwd: dir, env: cleanEnv(), extendEnv: false, reject: false, timeout: 120_000 });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stdout).trim()).toBe('SCRIPTED REPLY to: Hello from outside');
    expect(upstream.turns.length).toBe(before + 1);
    const seen = upstream.requests.at(-1)!;
    const realIp = seen.rawHeaders[seen.rawHeaders.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === 'x-real-ip') + 1];
    expect(realIp).toBe(lab.clientAddresses[0]);
    // Readable by others, the handoff is refused before anything is sent.
    fs.chmodSync(path.join(dir, 'handoff.json'), 0o644);
    const loose = await execa('ip', ['netns', 'exec', lab.client, BINARY, 'chat', '--handoff', 'handoff.json', '--message', 'x'], { cwd: dir, env: cleanEnv(), extendEnv: false, reject: false, timeout: 60_000 });
    expect(loose.exitCode).toBe(2);
    expect(String(loose.stderr)).toContain('holds the token and knock but its mode is 0644');
    expect(upstream.turns.length).toBe(before + 1);
  });

  it('the documented curl block, as written, gets the agent\'s JSON answer and leaves no headers file', async () => {
    const dir = otherMachine();
    const script = path.join(dir, 'curl-test.sh');
    fs.writeFileSync(script, documentedCurlBlock());
    const before = upstream.turns.length;
    const r = await execa('ip', ['netns', 'exec', lab.client, 'bash', script], { cwd: dir, env: cleanEnv(), extendEnv: false, reject: false, timeout: 120_000 });
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(JSON.parse(String(r.stdout))).toMatchObject({ reply: 'SCRIPTED REPLY to: Hello from outside', model: 'service/test-model' });
    expect(upstream.turns.length).toBe(before + 1);
    expect(fs.existsSync(path.join(dir, 'headers.txt'))).toBe(false);
    expect(String(r.stdout)).not.toContain(secrets.SERVICE_CHANNEL_TOKEN!);
  });

  it('from an address outside --channel-allow the same request gets no HTTP byte, and reaches nothing', async () => {
    const dir = otherMachine();
    const script = path.join(dir, 'curl-test.sh');
    // The documented block, sent from the second client address.
    fs.writeFileSync(script, documentedCurlBlock().replace('curl --silent', `curl --interface ${lab.clientAddresses[1]} --silent`));
    const before = upstream.requests.length;
    const r = await execa('ip', ['netns', 'exec', lab.client, 'bash', script], { cwd: dir, env: cleanEnv(), extendEnv: false, reject: false, timeout: 120_000 });
    expect(String(r.stdout)).toBe('');
    expect(String(r.stderr)).toMatch(/curl: \((52|56|35)\)/);
    expect(upstream.requests.length).toBe(before);
  });
});
