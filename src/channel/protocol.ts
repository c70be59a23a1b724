import { createHash, createHmac, randomBytes, timingSafeEqual } from '../host/crypto.js';

/**
 * The channel signing protocol (docs/channel-protocol.md), pure: no I/O, no clock
 * unless passed in. The client (`service-deploy chat`), the tests and the benchmark
 * use this module; the OpenClaw plugin carries a plain-JS twin
 * (templates/service-channel.protocol.js) held to the same test vectors.
 */

export const PROTOCOL_VERSION = 'v1';
export const CHANNEL_PATH = '/service-channel/chat';
/** First line of the canonical string: names the scheme and its version. */
export const CANONICAL_PREFIX = 'SERVICE-CHANNEL-HMAC-SHA256-V1';

/** Header names, lowercase as Node presents them. */
export const HEADER = {
  knock: 'x-service-gateway',
  /** Added by nginx (SERVICE_CHANNEL_EDGE): proof that a request came through the edge. */
  edge: 'x-service-edge',
  authorization: 'authorization',
  timestamp: 'x-service-timestamp',
  nonce: 'x-service-nonce',
  signature: 'x-service-signature',
} as const;

/** Accepted clock difference in seconds, both directions (spec 5.2, 8). */
export const REPLAY_WINDOW_SECONDS = 300;
/** Largest request body, bytes (nginx client_max_body_size and the plugin). */
export const MAX_BODY_BYTES = 65_536;
export const MAX_MESSAGE_CHARS = 32_000;
/** At most this many accepted requests per client address in any RATE_WINDOW_SECONDS (spec 8). */
export const RATE_LIMIT_REQUESTS = 10;
export const RATE_WINDOW_SECONDS = 60;

export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
export const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;
export const SIGNATURE_PATTERN = /^v1=[0-9a-f]{64}$/;
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
/** Token and knock values we generate or accept from the portal: safe inside an nginx string. */
export const SECRET_PATTERN = /^[A-Za-z0-9._~+/=-]{24,512}$/;

export interface CanonicalParts {
  method: string;
  /** The request target exactly as sent: path plus query, if any. */
  path: string;
  /** Unix time in seconds, as the decimal string sent in the header. */
  timestamp: string;
  nonce: string;
  /** Lowercase hex SHA-256 of the raw body bytes. */
  bodySha256: string;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The string that is signed: six lines joined by "\n", no trailing newline. */
export function canonicalString(parts: CanonicalParts): string {
  return [CANONICAL_PREFIX, parts.method.toUpperCase(), parts.path, parts.timestamp, parts.nonce, parts.bodySha256].join('\n');
}

/** `v1=` + lowercase hex HMAC-SHA256 of the canonical string, keyed with the token's UTF-8 bytes. */
export function signature(token: string, parts: CanonicalParts): string {
  return `v1=${createHmac('sha256', token).update(canonicalString(parts)).digest('hex')}`;
}

/**
 * Equality that takes the same time whatever the inputs: both sides are hashed
 * first, so unequal lengths neither throw (timingSafeEqual would) nor show through
 * an early return.
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb);
}

export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** 32 random bytes, base64url: the generated token and knock. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export interface SignInput {
  token: string;
  method?: string;
  path?: string;
  body: string | Uint8Array;
  /** Seconds; default now. */
  timestamp?: number;
  nonce?: string;
}

/** The four auth headers of a request (the knock is added by the caller). */
export function signRequest(input: SignInput): Record<string, string> {
  const timestamp = String(input.timestamp ?? Math.floor(Date.now() / 1000));
  const nonce = input.nonce ?? newNonce();
  const parts: CanonicalParts = {
    method: input.method ?? 'POST',
    path: input.path ?? CHANNEL_PATH,
    timestamp,
    nonce,
    bodySha256: sha256Hex(input.body),
  };
  return {
    [HEADER.authorization]: `Bearer ${input.token}`,
    [HEADER.timestamp]: timestamp,
    [HEADER.nonce]: nonce,
    [HEADER.signature]: signature(input.token, parts),
  };
}

export type ErrorCode =
  | 'unauthorized'
  | 'signature_required'
  | 'timestamp_out_of_window'
  | 'invalid_signature'
  | 'nonce_replayed'
  | 'invalid_request'
  | 'method_not_allowed'
  | 'body_too_large'
  | 'misconfigured'
  | 'agent_unavailable'
  | 'internal_error'
  | 'rate_limited'
  | 'not_found'
  | 'gateway_unavailable';

export type VerifyResult =
  | { ok: true; timestamp: number; nonce: string }
  | { ok: false; status: 401; code: ErrorCode; message: string };

export interface VerifyInput {
  token: string;
  method: string;
  path: string;
  /** Request headers, lowercase names (Node's IncomingHttpHeaders shape). */
  headers: Record<string, string | string[] | undefined>;
  body: string | Uint8Array;
  nowSeconds: number;
}

/**
 * Bearer, header format, replay window, signature: everything except the nonce
 * memory (stateful, the plugin's nonce store) and the body's content.
 */
export function verifyRequest(input: VerifyInput): VerifyResult {
  const header = (name: string) => {
    const value = input.headers[name];
    return Array.isArray(value) ? undefined : value;
  };
  const auth = header(HEADER.authorization) ?? '';
  const presented = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : '';
  if (!safeEqual(presented, input.token) || presented === '') {
    return fail('unauthorized', 'missing or wrong bearer token');
  }
  const timestamp = header(HEADER.timestamp) ?? '';
  const nonce = header(HEADER.nonce) ?? '';
  const sig = header(HEADER.signature) ?? '';
  if (!TIMESTAMP_PATTERN.test(timestamp) || !NONCE_PATTERN.test(nonce) || !SIGNATURE_PATTERN.test(sig)) {
    return fail('signature_required', 'X-Service-Timestamp, X-Service-Nonce and X-Service-Signature are required (see the channel protocol)');
  }
  const ts = Number(timestamp);
  if (Math.abs(input.nowSeconds - ts) > REPLAY_WINDOW_SECONDS) {
    return fail('timestamp_out_of_window', `timestamp is more than ${REPLAY_WINDOW_SECONDS} s from the server's clock`);
  }
  const expected = signature(input.token, {
    method: input.method,
    path: input.path,
    timestamp,
    nonce,
    bodySha256: sha256Hex(input.body),
  });
  if (!safeEqual(sig, expected)) return fail('invalid_signature', 'signature does not match the request');
  return { ok: true, timestamp: ts, nonce };
}

function fail(code: ErrorCode, message: string): VerifyResult {
  return { ok: false, status: 401, code, message };
}

/** The request body (docs/channel-protocol.md "Request body"). */
export interface ChannelRequest {
  message: string;
  sessionId?: string;
}

/** The answer (spec 2.4). */
export interface ChannelResponse {
  reply: string;
  sessionId: string;
  model: string;
}

export interface ChannelErrorBody {
  error: { code: ErrorCode | string; message: string };
}
