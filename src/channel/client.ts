import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { DeployError, UsageError } from '../errors.js';
import { numberTextProblem, shown } from '../input.js';
import { PathMap } from '../host/paths.js';
import { Redactor } from '../host/redact.js';
import { CHANNEL_PORT, LAYOUT } from '../layout.js';
import { parseEnvFile } from './env-file.js';
import { chatOutput, emitJson } from '../json/index.js';
import { CHANNEL_PATH, HEADER, MAX_BODY_BYTES, SECRET_PATTERN, SESSION_ID_PATTERN, signRequest, type ChannelResponse } from './protocol.js';

/**
 * `service-deploy chat`: one signed message to a deployed agent's channel endpoint
 * (docs/channel-protocol.md). Secrets come from the environment, files, or the
 * server's channel.env, never from argv.
 */

export { parseEnvFile };

export const ENV = {
  url: 'SERVICE_CHANNEL_URL',
  token: 'SERVICE_CHANNEL_TOKEN',
  knock: 'SERVICE_CHANNEL_KNOCK',
  tokenFile: 'SERVICE_CHANNEL_TOKEN_FILE',
  knockFile: 'SERVICE_CHANNEL_KNOCK_FILE',
  hostname: 'SERVICE_TS_HOSTNAME',
} as const;

export const DEFAULT_CHAT_TIMEOUT_S = 300;
/** An hour: longer is no chat turn (and beyond 24 days Node's timer would fire at once). */
export const MAX_CHAT_TIMEOUT_S = 3600;

export interface ChatOptions {
  message?: string;
  session?: string;
  url?: string;
  insecure?: boolean;
  ca?: string;
  pin?: string;
  tokenFile?: string;
  knockFile?: string;
  /** `channel show --json [--show-secrets]` saved to a file: URL, pin, and token and knock when it has them. */
  handoff?: string;
  /** Seconds. */
  /** Seconds, as typed (text) or a number. */
  timeout?: string | number;
  json?: boolean;
  verbose?: boolean;
  /** Declared only to refuse them: a secret in argv is visible to every user. */
  token?: unknown;
  knock?: unknown;
}

export interface ChatContext {
  env: NodeJS.ProcessEnv;
  /** Reads a file; undefined when it does not exist. */
  readFile(path: string): string | undefined;
  /** A file's permission bits and size; undefined when it does not exist. */
  statFile?(path: string): { mode: number; size: number } | undefined;
  readStdin(): Promise<string>;
  stdout(line: string): void;
  stderr(line: string): void;
}

export type Trust = { kind: 'pin'; sha256: string } | { kind: 'ca'; pem: string } | { kind: 'insecure' } | { kind: 'system' };

export interface ResolvedChat {
  url: URL;
  token: string;
  knock: string;
  trust: Trust;
  /** Where token and knock came from, for --verbose. */
  source: string;
}

/** "AA:BB:..", "aabb..", with or without a "sha256:" prefix -> 64 lowercase hex digits. */
export function normalizeFingerprint(pin: string): string {
  const hex = pin.trim().replace(/^sha256[:/]/i, '').replace(/:/g, '').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new UsageError(`--pin ${pin} is not a SHA-256 fingerprint`, 'give 64 hex digits (colons allowed), as printed by `openssl x509 -noout -fingerprint -sha256 -in channel.crt`');
  }
  return hex;
}

/** Settings precedence, lowest first: the server's channel.env < environment < flags. */
export function resolveChat(options: ChatOptions, context: ChatContext): ResolvedChat {
  if (options.token !== undefined || options.knock !== undefined) {
    throw new UsageError('secrets are not accepted as flags (process arguments are visible to every user)', `set ${ENV.token} and ${ENV.knock}, or use --token-file and --knock-file`);
  }
  const paths = new PathMap(context.env.SERVICE_DEPLOY_ROOT);
  const serverEnvText = context.readFile(paths.real(LAYOUT.channelEnv));
  const serverEnv = serverEnvText === undefined ? {} : parseEnvFile(serverEnvText);

  const fromFile = (flag: string | undefined, envName: string, what: string): string | undefined => {
    const file = flag ?? context.env[envName];
    if (!file) return undefined;
    const text = context.readFile(file);
    if (text === undefined) throw new UsageError(`cannot read the ${what} file ${file}`, `check the path given by ${flag ? `--${what}-file` : envName}`);
    return text.trim();
  };
  const handoff = options.handoff === undefined ? undefined : readHandoff(options.handoff, context);
  const token = fromFile(options.tokenFile, ENV.tokenFile, 'token') ?? nonEmpty(context.env[ENV.token]) ?? handoff?.token ?? nonEmpty(serverEnv[ENV.token]);
  const knock = fromFile(options.knockFile, ENV.knockFile, 'knock') ?? nonEmpty(context.env[ENV.knock]) ?? handoff?.knock ?? nonEmpty(serverEnv[ENV.knock]);
  const missing = [!token && ENV.token, !knock && ENV.knock].filter(Boolean);
  if (missing.length > 0) {
    if (handoff) throw new UsageError(`--handoff ${options.handoff} has no token and knock`, 'save it with `service-deploy channel show --json --show-secrets` (or set SERVICE_CHANNEL_TOKEN and SERVICE_CHANNEL_KNOCK)');
    throw new UsageError(`no ${missing.join(' and ')}`, `set ${missing.join(' and ')} (or --token-file/--knock-file); on the server itself they are read from ${LAYOUT.channelEnv}`);
  }

  const explicitUrl = options.url ?? nonEmpty(context.env[ENV.url]) ?? handoff?.url;
  const onServer = explicitUrl === undefined && serverEnvText !== undefined;
  if (explicitUrl === undefined && !onServer) {
    throw new UsageError('no channel URL', `pass --url https://<server>:${CHANNEL_PORT} or set ${ENV.url}`);
  }
  const url = channelUrl(explicitUrl ?? `https://127.0.0.1:${CHANNEL_PORT}`);

  let trust: Trust;
  const chosen = [options.pin && '--pin', options.ca && '--ca', options.insecure && '--insecure'].filter(Boolean);
  if (chosen.length > 1) throw new UsageError(`${chosen.join(' and ')} exclude each other`, 'choose one way to trust the certificate (--pin is best)');
  if (options.pin) trust = { kind: 'pin', sha256: normalizeFingerprint(options.pin) };
  else if (handoff && !options.ca && !options.insecure) trust = { kind: 'pin', sha256: handoff.pin };
  else if (options.ca) {
    const pem = context.readFile(options.ca);
    if (pem === undefined) throw new UsageError(`cannot read --ca ${options.ca}`, 'give the PEM file of the channel certificate');
    trust = { kind: 'ca', pem };
  } else if (options.insecure) trust = { kind: 'insecure' };
  else if (onServer) {
    // On the server: trust the certificate the deploy made, from its file.
    const pem = context.readFile(paths.real(LAYOUT.tlsCert));
    trust = pem === undefined ? { kind: 'insecure' } : { kind: 'ca', pem };
  } else trust = { kind: 'system' };

  const source = onServer ? LAYOUT.channelEnv : handoff && token === handoff.token && knock === handoff.knock ? `--handoff ${options.handoff}` : 'environment';
  return { url, token: token!, knock: knock!, trust, source };
}

/** The handoff file holds secrets: at most this big, readable by its owner only. */
const MAX_HANDOFF_BYTES = 65_536;

/**
 * A saved `channel show --json` (the portal's handoff), read as untrusted input: bounded,
 * not readable by other users when it holds secrets, every field checked before use.
 */
function readHandoff(file: string, context: ChatContext): { url: string; pin: string; token?: string; knock?: string } {
  const refuse = (why: string, hint = 'save it again on the server: `sudo service-deploy channel show --json --show-secrets > handoff.json` (mode 0600)'): never => {
    throw new UsageError(`--handoff ${file}: ${why}`, hint);
  };
  const info = context.statFile?.(file);
  const text = context.readFile(file);
  if (text === undefined) refuse('cannot read it', 'give the path of the file `service-deploy channel show --json --show-secrets` wrote');
  if ((info?.size ?? text!.length) > MAX_HANDOFF_BYTES) refuse(`is larger than ${MAX_HANDOFF_BYTES / 1024} KiB: not a handoff`);
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(text!) as Record<string, unknown>;
  } catch {
    return refuse('is not JSON');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) refuse('is not a JSON object');
  const certificate = data.certificate as Record<string, unknown> | undefined;
  if (typeof data.url !== 'string') refuse('has no url');
  if (typeof certificate?.pin !== 'string') refuse('has no certificate.pin');
  let pin: string;
  try {
    pin = normalizeFingerprint(certificate!.pin as string);
  } catch {
    return refuse('certificate.pin is not a SHA-256 fingerprint');
  }
  const secret = (name: 'token' | 'knock'): string | undefined => {
    const value = data[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !SECRET_PATTERN.test(value)) refuse(`${name} is not a usable secret`);
    return value as string;
  };
  const token = secret('token');
  const knock = secret('knock');
  if ((token !== undefined || knock !== undefined) && info && (info.mode & 0o077) !== 0) {
    refuse(`holds the token and knock but its mode is 0${(info.mode & 0o777).toString(8)}: other users can read them`, `chmod 600 ${file}, then run again`);
  }
  return { url: data.url as string, pin, ...(token ? { token } : {}), ...(knock ? { knock } : {}) };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** A base URL (https://host:18790) or the full endpoint URL -> the endpoint URL. */
export function channelUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`not a URL: ${text}`, `give https://<server>:${CHANNEL_PORT}`);
  }
  if (url.protocol !== 'https:') throw new UsageError(`the channel URL must be https: ${text}`, `give https://<server>:${CHANNEL_PORT}`);
  if (url.pathname === '/' || url.pathname === '') url.pathname = CHANNEL_PATH;
  if (url.pathname !== CHANNEL_PATH) throw new UsageError(`the channel path is ${CHANNEL_PATH}, not ${url.pathname}`, `give https://<server>:${CHANNEL_PORT}`);
  return url;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Raised when the server closes the connection without an HTTP answer (nginx 444). */
export class NoResponseError extends DeployError {}

/**
 * Opens the TLS connection first and checks the pin before a single byte of the
 * request (with its token) is written; then speaks HTTP/1.1 over that socket.
 */
export async function postSigned(
  target: { url: URL; trust: Trust; headers: Record<string, string>; body: string; timeoutMs: number },
): Promise<RawResponse> {
  const { url, trust } = target;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 443);
  const socket = await new Promise<tls.TLSSocket>((resolve, reject) => {
    const s = tls.connect({
      host,
      port,
      servername: net.isIP(host) ? undefined : host,
      ALPNProtocols: ['http/1.1'],
      minVersion: 'TLSv1.2',
      rejectUnauthorized: trust.kind === 'ca' || trust.kind === 'system',
      ...(trust.kind === 'ca' ? { ca: [trust.pem] } : {}),
    });
    const timer = setTimeout(() => s.destroy(new DeployError(`${url.origin}: TLS connection not established within ${target.timeoutMs} ms`, 'check the URL and that port 18790 is reachable')), target.timeoutMs);
    s.once('secureConnect', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', (error) => {
      clearTimeout(timer);
      reject(error instanceof DeployError ? error : connectError(url, error));
    });
  });
  if (trust.kind === 'pin') {
    const got = socket.getPeerCertificate().fingerprint256?.replace(/:/g, '').toLowerCase();
    if (got !== trust.sha256) {
      socket.destroy();
      throw new DeployError(
        `${url.origin}: certificate fingerprint ${got ?? '(none)'} does not match --pin; nothing was sent`,
        'if the server regenerated its certificate, read the new fingerprint on the server (`openssl x509 -noout -fingerprint -sha256 -in /etc/service-deploy/tls/channel.crt`)',
      );
    }
  }
  return new Promise<RawResponse>((resolve, reject) => {
    const req = http.request(
      {
        createConnection: () => socket,
        method: 'POST',
        path: `${url.pathname}${url.search}`,
        headers: { host: url.host, ...target.headers },
        timeout: target.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          socket.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new DeployError(`${url.origin}: no answer within ${Math.round(target.timeoutMs / 1000)} s`, 'the agent may still be working; try again, or raise --timeout')));
    req.on('error', (error) => {
      socket.destroy();
      if (error instanceof DeployError) return reject(error);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ECONNRESET' || /socket hang up/.test(error.message)) {
        return reject(new NoResponseError(
          `${url.origin} closed the connection without answering`,
          `the knock is probably wrong: check ${ENV.knock} against the server's ${LAYOUT.channelEnv} (the server also closes a URL with another path or a query, and addresses outside its --channel-allow list)`,
        ));
      }
      reject(connectError(url, error));
    });
    req.end(target.body);
  });
}

function connectError(url: URL, error: Error): DeployError {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS_CERT_ALTNAME/.test(code)) {
    return new DeployError(`${url.origin}: certificate not trusted (${code})`, 'the channel certificate is self-signed: pass --pin sha256:<fingerprint> (best), --ca <channel.crt>, or --insecure');
  }
  return new DeployError(`${url.origin}: ${error.message}`, `check the URL and that port ${CHANNEL_PORT} is reachable (a reset also comes from the server's limits: this address outside its --channel-allow list, more than 3 connections at once, or more than 20 new ones a minute)`);
}

const HINTS: Record<string, string> = {
  unauthorized: `the token is wrong: compare ${ENV.token} with SERVICE_CHANNEL_TOKEN in the server's ${LAYOUT.channelEnv}`,
  signature_required: 'the client and server disagree on the protocol; update service-deploy',
  invalid_signature: `the token or protocol version differs from the server's; compare ${ENV.token} with the server's ${LAYOUT.channelEnv}`,
  timestamp_out_of_window: "this machine's clock is more than 5 minutes off; enable NTP (timedatectl set-ntp true)",
  nonce_replayed: 'send the message again: each attempt needs a new nonce',
  rate_limited: 'at most 10 messages a minute and 3 at once per address',
  misconfigured: 'on the server, re-run the catalog deploy (`service-deploy install --channel`): the gateway has not loaded channel.env',
  agent_unavailable: 'retry later; on the server, check `openclaw gateway status` and the gateway log',
  gateway_unavailable: 'the gateway behind nginx is down or slow; on the server, check `openclaw gateway status`',
  body_too_large: 'the message is too long (the limit is 64 KiB)',
  invalid_request: 'check --message and --session',
};

/** A channel answer -> the ChannelResponse, or a DeployError with the server's code. */
export function interpretResponse(response: RawResponse): ChannelResponse {
  let parsed: unknown;
  try {
    parsed = JSON.parse(response.body);
  } catch {
    parsed = undefined;
  }
  if (response.status === 200) {
    const r = parsed as Partial<ChannelResponse> | undefined;
    if (r && typeof r.reply === 'string' && typeof r.sessionId === 'string' && typeof r.model === 'string') {
      return { reply: r.reply, sessionId: r.sessionId, model: r.model };
    }
    throw new DeployError('the channel answered 200 without a ChannelResponse { reply, sessionId, model }', 'is the URL the channel endpoint (port 18790)?');
  }
  const error = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const code = typeof error?.code === 'string' ? error.code : undefined;
  const message = typeof error?.message === 'string' ? error.message : response.body.slice(0, 200).trim();
  const retryAfter = Number(response.headers['retry-after']);
  const wait = Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 3600 ? `retry in ${retryAfter} s (the server's Retry-After)` : undefined;
  const hint = code ? HINTS[code] : undefined;
  throw new DeployError(
    `the channel refused the message: HTTP ${response.status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`,
    hint && wait ? `${hint}; ${wait}` : (hint ?? wait),
  );
}

/** Sends one chat; a refusal says that nothing was sent (what a chat's user asks), not "changed". */
export async function runChat(options: ChatOptions, context: ChatContext): Promise<void> {
  try {
    await chatOnce(options, context);
  } catch (error) {
    if (error instanceof UsageError && error.hint?.endsWith('nothing was changed')) {
      throw new UsageError(error.message, error.hint.replace(/nothing was changed$/, 'nothing was sent'), { cause: error.cause });
    }
    throw error;
  }
}

async function chatOnce(options: ChatOptions, context: ChatContext): Promise<void> {
  let message = options.message;
  if (message === '-') message = (await context.readStdin()).replace(/\n$/, '');
  if (message === undefined || message.trim() === '') throw new UsageError('no message', 'pass --message TEXT (or --message - to read it from stdin)');
  if (options.session !== undefined && !SESSION_ID_PATTERN.test(options.session)) {
    throw new UsageError(`--session ${options.session} is not a valid session id`, 'use letters, digits, _ and - (up to 128), as returned by an earlier chat');
  }
  const timeoutProblem = options.timeout === undefined ? undefined : numberTextProblem(String(options.timeout), { min: 0, max: MAX_CHAT_TIMEOUT_S, aboveMin: true });
  if (timeoutProblem) throw new UsageError(`--timeout ${shown(String(options.timeout))}: ${timeoutProblem} (seconds)`, `e.g. --timeout ${DEFAULT_CHAT_TIMEOUT_S}`);
  const resolved = resolveChat(options, context);
  const redactor = new Redactor();
  redactor.add(resolved.token, resolved.knock);

  const body = JSON.stringify(options.session ? { message, sessionId: options.session } : { message });
  if (Buffer.byteLength(body) > MAX_BODY_BYTES) throw new UsageError(`the message is too long (${Buffer.byteLength(body)} bytes with its JSON; the limit is ${MAX_BODY_BYTES})`);
  if (resolved.trust.kind === 'insecure') context.stderr('warning: not verifying the server certificate (--insecure); prefer --pin');
  if (options.verbose) context.stderr(`POST ${resolved.url.href} (token and knock from ${resolved.source}, trust: ${resolved.trust.kind})`);

  const headers = {
    'content-type': 'application/json',
    accept: 'application/json',
    [HEADER.knock]: resolved.knock,
    ...signRequest({ token: resolved.token, body, path: `${resolved.url.pathname}${resolved.url.search}` }),
  };
  let response: RawResponse;
  try {
    response = await postSigned({ url: resolved.url, trust: resolved.trust, headers, body, timeoutMs: Number(options.timeout ?? DEFAULT_CHAT_TIMEOUT_S) * 1000 });
  } catch (error) {
    if (error instanceof DeployError) throw new DeployError(redactor.redact(error.message), error.hint);
    throw error;
  }
  const answer = interpretResponse(response);
  if (options.json) emitJson(chatOutput, { ok: true, ...answer }, context.stdout);
  else {
    context.stdout(answer.reply);
    context.stderr(`session ${answer.sessionId} (${answer.model}); continue with --session ${answer.sessionId}`);
  }
}

export async function processChatContext(): Promise<ChatContext> {
  return {
    env: process.env,
    readFile: (path) => {
      try {
        return fs.readFileSync(path, 'utf8');
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR') return undefined;
        throw error;
      }
    },
    statFile: (path) => {
      try {
        const st = fs.statSync(path);
        return { mode: st.mode & 0o7777, size: st.size };
      } catch {
        return undefined;
      }
    },
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
  };
}
