import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeFingerprint, parseEnvFile, runChat, type ChatContext, type ChatOptions } from '../../src/channel/client.js';
import { newSecret } from '../../src/channel/protocol.js';
import { DeployError, UsageError } from '../../src/errors.js';
import { BINARY, cleanEnv, runBinary } from '../helpers/binary.js';
import { startChannelStandIn, type ChannelStandIn } from '../helpers/channel-standin.js';
import { tempDir } from '../helpers/tmp.js';
import { errorEnvelope, jsonOutput } from '../helpers/json-schemas.js';

const token = newSecret();
const knock = newSecret();
let standIn: ChannelStandIn;

beforeAll(async () => {
  standIn = await startChannelStandIn({ token, knock });
});
afterAll(() => standIn.close());

function context(env: NodeJS.ProcessEnv, stdin = '') {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: ChatContext = {
    env,
    readFile: (p) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : undefined),
    readStdin: async () => stdin,
    stdout: (line) => out.push(line),
    stderr: (line) => err.push(line),
  };
  return { ctx, out, err };
}

const baseEnv = () => ({ SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_KNOCK: knock, SERVICE_CHANNEL_URL: standIn.url });

async function chat(options: ChatOptions, env: NodeJS.ProcessEnv = baseEnv()) {
  const c = context(env);
  await runChat(options, c.ctx);
  return c;
}

describe('service-deploy chat (client)', () => {
  it('signs the request, pins the certificate and prints the reply; the session id goes to stderr', async () => {
    const before = standIn.requests.length;
    const { out, err } = await chat({ message: 'hello there', pin: `sha256:${standIn.fingerprint}` });
    expect(out).toEqual(['echo: hello there']);
    expect(err.join('\n')).toContain('--session new-session');
    const sent = standIn.requests.at(-1)!;
    expect(standIn.requests.length).toBe(before + 1);
    expect(JSON.parse(sent.body)).toEqual({ message: 'hello there' });
    expect(sent.headers['x-service-gateway']).toBe(knock);
    expect(sent.headers['content-type']).toBe('application/json');
  });

  it('--json prints the whole ChannelResponse; --session is sent', async () => {
    const { out } = await chat({ message: 'again', session: 'sess-42', json: true, ca: standIn.ca.caFile });
    expect(jsonOutput('chat', out.join('\n'))).toEqual({ schemaVersion: 1, ok: true, reply: 'echo: again', sessionId: 'sess-42', model: 'service/test-model' });
    expect(JSON.parse(standIn.requests.at(-1)!.body)).toEqual({ message: 'again', sessionId: 'sess-42' });
  });

  it('every request carries a fresh nonce (two sends are not replays)', async () => {
    await chat({ message: 'one', insecure: true });
    await chat({ message: 'two', insecure: true });
    const [a, b] = standIn.requests.slice(-2);
    expect(a!.headers['x-service-nonce']).not.toBe(b!.headers['x-service-nonce']);
  });

  it('a wrong pin sends nothing, not even the token', async () => {
    const before = standIn.requests.length;
    const wrong = 'ab'.repeat(32);
    await expect(chat({ message: 'x', pin: wrong })).rejects.toThrow(/does not match --pin; nothing was sent/);
    expect(standIn.requests.length).toBe(before);
  });

  it('without --pin/--ca/--insecure the self-signed certificate is refused with a hint', async () => {
    const error = await chat({ message: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeployError);
    expect((error as DeployError).hint).toMatch(/--pin/);
  });

  it('a wrong knock (connection dropped, no answer) is reported as such', async () => {
    const error = await chat({ message: 'x', insecure: true }, { ...baseEnv(), SERVICE_CHANNEL_KNOCK: `${knock}x` }).catch((e: unknown) => e);
    expect((error as DeployError).message).toMatch(/closed the connection without answering/);
    expect((error as DeployError).hint).toMatch(/knock/);
    expect((error as DeployError).message).not.toContain(knock);
  });

  it('a wrong token is answered 401 and reported with the code and a hint', async () => {
    const error = await chat({ message: 'x', insecure: true }, { ...baseEnv(), SERVICE_CHANNEL_TOKEN: newSecret() }).catch((e: unknown) => e);
    expect((error as DeployError).message).toMatch(/HTTP 401 unauthorized/);
    expect((error as DeployError).hint).toMatch(/SERVICE_CHANNEL_TOKEN/);
  });

  it('maps 503 misconfigured to the re-deploy hint', async () => {
    standIn.answerNext = { status: 503, body: { error: { code: 'misconfigured', message: 'SERVICE_CHANNEL_TOKEN is not set in the gateway' } } };
    const error = await chat({ message: 'x', insecure: true }).catch((e: unknown) => e);
    expect((error as DeployError).message).toMatch(/HTTP 503 misconfigured/);
    expect((error as DeployError).hint).toMatch(/install --channel/);
  });

  it('a 429 names the limit and when to retry, from the server\'s Retry-After', async () => {
    standIn.answerNext = { status: 429, body: { error: { code: 'rate_limited', message: 'at most 10 requests in any 60 s per client' } }, headers: { 'retry-after': '17' } };
    const error = await chat({ message: 'x', insecure: true }).catch((e: unknown) => e);
    expect((error as DeployError).message).toMatch(/HTTP 429 rate_limited/);
    expect((error as DeployError).hint).toBe('at most 10 messages a minute and 3 at once per address; retry in 17 s (the server\'s Retry-After)');
    standIn.answerNext = { status: 429, body: { error: { code: 'rate_limited', message: 'x' } }, headers: { 'retry-after': 'soon; rm -rf' } };
    const garbled = await chat({ message: 'x', insecure: true }).catch((e: unknown) => e);
    expect((garbled as DeployError).hint).toBe('at most 10 messages a minute and 3 at once per address');
  });

  it('reads token and knock from files', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 't'), `${token}\n`);
    fs.writeFileSync(path.join(dir, 'k'), `${knock}\n`);
    const { out } = await chat({ message: 'files', insecure: true, tokenFile: path.join(dir, 't'), knockFile: path.join(dir, 'k') }, { SERVICE_CHANNEL_URL: standIn.url });
    expect(out).toEqual(['echo: files']);
  });

  it('--handoff: URL, pin, token and knock from a saved `channel show --json --show-secrets`; flags and the environment still win; a handoff others can read, a bad field or no secrets is refused', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'handoff.json');
    const handoff = { schemaVersion: 1, ok: true, url: standIn.url, urls: [standIn.url], certificate: { pin: `sha256:${standIn.fingerprint}` }, knockHeader: 'x-service-gateway', allow: [], token, knock };
    const save = (data: object, mode = 0o600) => {
      fs.writeFileSync(file, JSON.stringify(data));
      fs.chmodSync(file, mode);
    };
    const withStat = (env: NodeJS.ProcessEnv) => {
      const c = context(env);
      c.ctx.statFile = (p) => (fs.existsSync(p) ? { mode: fs.statSync(p).mode & 0o7777, size: fs.statSync(p).size } : undefined);
      return c;
    };
    const send = async (options: ChatOptions, env: NodeJS.ProcessEnv = {}) => {
      const c = withStat(env);
      await runChat({ message: 'via handoff', handoff: file, ...options }, c.ctx);
      return c;
    };
    save(handoff);
    const before = standIn.requests.length;
    expect((await send({})).out).toEqual(['echo: via handoff']);
    expect(standIn.requests.length).toBe(before + 1);
    expect(standIn.requests.at(-1)!.headers['x-service-gateway']).toBe(knock);
    // The handoff's pin is checked: another certificate gets nothing, not even the token.
    save({ ...handoff, certificate: { pin: `sha256:${'ab'.repeat(32)}` } });
    await expect(send({})).rejects.toThrow(/does not match --pin; nothing was sent/);
    expect(standIn.requests.length).toBe(before + 1);
    // What is given explicitly wins over the file.
    save({ ...handoff, url: 'https://192.0.2.1:18790/service-channel/chat', token: newSecret() });
    expect((await send({ url: standIn.url }, { SERVICE_CHANNEL_TOKEN: token })).out).toEqual(['echo: via handoff']);

    save(handoff, 0o644);
    await expect(send({})).rejects.toThrow(`--handoff ${file}: holds the token and knock but its mode is 0644: other users can read them`);
    const { token: _t, knock: _k, ...noSecrets } = handoff;
    save(noSecrets, 0o644);
    await expect(send({})).rejects.toThrow(`--handoff ${file} has no token and knock`);
    expect((await send({}, { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_KNOCK: knock })).out).toEqual(['echo: via handoff']);
    for (const [bad, why] of [
      [{ ...handoff, certificate: { pin: 'sha256:xyz' } }, 'certificate.pin is not a SHA-256 fingerprint'],
      [{ ...handoff, token: 'short' }, 'token is not a usable secret'],
      [{ ...handoff, url: undefined }, 'has no url'],
      [['not', 'an', 'object'], 'is not a JSON object'],
    ] as const) {
      save(bad);
      await expect(send({})).rejects.toThrow(`--handoff ${file}: ${why}`);
    }
    fs.writeFileSync(file, '{ nope');
    await expect(send({})).rejects.toThrow(`--handoff ${file}: is not JSON`);
    await expect(send({ handoff: path.join(dir, 'missing.json') })).rejects.toThrow(/missing\.json: cannot read it/);
  });

  it('on the server, URL/token/knock come from channel.env (SERVICE_DEPLOY_ROOT sandbox)', async () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'root/.openclaw'), { recursive: true });
    fs.writeFileSync(path.join(root, 'root/.openclaw/channel.env'), `SERVICE_CHANNEL_TOKEN=${token}\nSERVICE_CHANNEL_KNOCK=${knock}\nSERVICE_TS_HOSTNAME=openclaw-acme\n`);
    // The URL default (127.0.0.1:18790) is not our stand-in: point --url at it, but keep token+knock from the file.
    const { out } = await chat({ message: 'server', url: standIn.url, insecure: true }, { SERVICE_DEPLOY_ROOT: root });
    expect(out).toEqual(['echo: server']);
  });

  it('refuses secrets as flags and missing settings, as usage errors', async () => {
    await expect(chat({ message: 'x', token: 'abc' } as ChatOptions)).rejects.toBeInstanceOf(UsageError);
    await expect(chat({ message: 'x' }, { SERVICE_CHANNEL_URL: standIn.url })).rejects.toThrow(/no SERVICE_CHANNEL_TOKEN and SERVICE_CHANNEL_KNOCK/);
    await expect(chat({ message: 'x' }, { SERVICE_CHANNEL_TOKEN: token, SERVICE_CHANNEL_KNOCK: knock })).rejects.toThrow(/no channel URL/);
    await expect(chat({ message: '' })).rejects.toBeInstanceOf(UsageError);
    await expect(chat({ message: 'x', session: '../x' })).rejects.toBeInstanceOf(UsageError);
    await expect(chat({ message: 'x', pin: 'ab'.repeat(32), insecure: true })).rejects.toThrow(/exclude each other/);
    await expect(chat({ message: 'x', url: 'http://127.0.0.1:1' })).rejects.toThrow(/must be https/);
  });

  it('parses env files and fingerprints', () => {
    expect(parseEnvFile('# c\nA=1\nB="two words"\n\nC=\'x=y\'\n')).toEqual({ A: '1', B: 'two words', C: 'x=y' });
    expect(normalizeFingerprint('sha256:AB:' + 'cd:'.repeat(30) + 'EF')).toBe('ab' + 'cd'.repeat(30) + 'ef');
    expect(() => normalizeFingerprint('abc')).toThrow(UsageError);
  });
});

describe.skipIf(!fs.existsSync(BINARY))('service-deploy chat (binary)', () => {
  it('talks to the stand-in; refuses --token with exit 2', async () => {
    const env = cleanEnv(baseEnv());
    const ok = await runBinary(['chat', '--message', 'from the binary', '--pin', standIn.fingerprint, '--json'], { env });
    expect(ok.stderr).toBe('');
    expect(ok.exitCode).toBe(0);
    expect(jsonOutput('chat', ok.stdout).reply).toBe('echo: from the binary');
    const refused = await runBinary(['chat', '--message', 'x', '--token', 'abcdefgh'], { env });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/not accepted as flags/);
    // --json: the refusal and a failure (nothing listening) are the error envelope on stdout.
    const refusedJson = await runBinary(['chat', '--message', 'x', '--token', 'abcdefgh', '--json'], { env });
    expect(errorEnvelope(refusedJson.stdout, refusedJson.exitCode).error).toMatchObject({ code: 'refused', exitCode: 2 });
    expect(String(refusedJson.stdout)).not.toContain('abcdefgh');
    const closed = await runBinary(['chat', '--message', 'x', '--url', 'https://127.0.0.1:1', '--pin', standIn.fingerprint, '--json'], { env });
    expect(closed.exitCode).toBe(1);
    expect(errorEnvelope(closed.stdout, closed.exitCode).error.code).toBe('failed');
  });
});
