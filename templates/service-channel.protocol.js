// service-channel plugin: the signing protocol (docs/channel-protocol.md), plain JS.
// Twin of src/channel/protocol.ts in the service-deploy repository; both are held to
// the test vectors in the protocol document. Pure: no I/O, the clock is passed in.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export const CHANNEL_PATH = "/service-channel/chat";
export const CANONICAL_PREFIX = "SERVICE-CHANNEL-HMAC-SHA256-V1";
export const HEADER = {
  knock: "x-service-gateway",
  edge: "x-service-edge",
  authorization: "authorization",
  timestamp: "x-service-timestamp",
  nonce: "x-service-nonce",
  signature: "x-service-signature",
};
export const REPLAY_WINDOW_SECONDS = 300;
export const MAX_BODY_BYTES = 65536;
export const MAX_MESSAGE_CHARS = 32000;
// At most RATE_LIMIT_REQUESTS accepted requests per client address in any
// RATE_WINDOW_SECONDS (the plugin's exact window behind nginx's leaky bucket).
export const RATE_LIMIT_REQUESTS = 10;
export const RATE_WINDOW_SECONDS = 60;
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
export const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;
export const SIGNATURE_PATTERN = /^v1=[0-9a-f]{64}$/;
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

export function sha256Hex(data) {
  return createHash("sha256").update(data).digest("hex");
}

export function canonicalString(parts) {
  return [CANONICAL_PREFIX, String(parts.method).toUpperCase(), parts.path, parts.timestamp, parts.nonce, parts.bodySha256].join("\n");
}

export function signature(token, parts) {
  return "v1=" + createHmac("sha256", token).update(canonicalString(parts)).digest("hex");
}

// Both sides hashed first: equal-length buffers, so unequal inputs neither throw nor
// return early.
export function safeEqual(a, b) {
  const ha = createHash("sha256").update(String(a), "utf8").digest();
  const hb = createHash("sha256").update(String(b), "utf8").digest();
  return timingSafeEqual(ha, hb);
}

function fail(code, message) {
  return { ok: false, status: 401, code, message };
}

// Bearer, header format, replay window, signature. The nonce memory is the caller's.
export function verifyRequest({ token, method, path, headers, body, nowSeconds }) {
  const header = (name) => {
    const value = headers[name];
    return Array.isArray(value) ? undefined : value;
  };
  const auth = header(HEADER.authorization) || "";
  const presented = auth.startsWith("Bearer ") ? auth.slice(7) : "";
  if (!safeEqual(presented, token) || presented === "") return fail("unauthorized", "missing or wrong bearer token");
  const timestamp = header(HEADER.timestamp) || "";
  const nonce = header(HEADER.nonce) || "";
  const sig = header(HEADER.signature) || "";
  if (!TIMESTAMP_PATTERN.test(timestamp) || !NONCE_PATTERN.test(nonce) || !SIGNATURE_PATTERN.test(sig)) {
    return fail("signature_required", "X-Service-Timestamp, X-Service-Nonce and X-Service-Signature are required (see the channel protocol)");
  }
  const ts = Number(timestamp);
  if (Math.abs(nowSeconds - ts) > REPLAY_WINDOW_SECONDS) {
    return fail("timestamp_out_of_window", `timestamp is more than ${REPLAY_WINDOW_SECONDS} s from the server's clock`);
  }
  const expected = signature(token, { method, path, timestamp, nonce, bodySha256: sha256Hex(body) });
  if (!safeEqual(sig, expected)) return fail("invalid_signature", "signature does not match the request");
  return { ok: true, timestamp: ts, nonce };
}

// The request body: {"message": string, "sessionId"?: string}, nothing else. Takes the
// raw bytes: they must be UTF-8 (no byte order mark), one JSON object without a key
// given twice (JSON.parse would silently keep the last one).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function parseChannelRequest(body) {
  let text;
  try {
    text = typeof body === "string" ? body : utf8.decode(body);
  } catch {
    return { ok: false, message: "body is not valid UTF-8" };
  }
  if (text.charCodeAt(0) === 0xfeff) return { ok: false, message: "body starts with a byte order mark" };
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, message: "body is not valid JSON" };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { ok: false, message: "body must be a JSON object" };
  const keys = topLevelKeys(text);
  const twice = keys.filter((k, i) => keys.indexOf(k) !== i);
  if (twice.length > 0) return { ok: false, message: `duplicate field: ${[...new Set(twice)].join(", ")}` };
  const unknown = Object.keys(value).filter((k) => k !== "message" && k !== "sessionId");
  if (unknown.length > 0) return { ok: false, message: `unknown field: ${unknown.join(", ")}` };
  if (typeof value.message !== "string" || value.message.trim() === "") return { ok: false, message: "message must be a non-empty string" };
  if (value.message.length > MAX_MESSAGE_CHARS) return { ok: false, message: `message is longer than ${MAX_MESSAGE_CHARS} characters` };
  if (!value.message.isWellFormed()) return { ok: false, message: "message holds an unpaired surrogate (\\uD800-\\uDFFF escape)" };
  if (value.sessionId !== undefined && (typeof value.sessionId !== "string" || !SESSION_ID_PATTERN.test(value.sessionId))) {
    return { ok: false, message: "sessionId must match " + SESSION_ID_PATTERN.source };
  }
  return { ok: true, value: { message: value.message, sessionId: value.sessionId } };
}

// The member names of the top-level object of a text JSON.parse accepted, decoded,
// in order, repeats included.
export function topLevelKeys(text) {
  const keys = [];
  let i = skipSpace(text, 0) + 1;
  for (;;) {
    i = skipSpace(text, i);
    if (text[i] === "}") return keys;
    const end = stringEnd(text, i);
    keys.push(JSON.parse(text.slice(i, end)));
    i = skipValue(text, skipSpace(text, skipSpace(text, end) + 1));
    i = skipSpace(text, i);
    if (text[i] === ",") i++;
  }
}

function skipSpace(text, i) {
  while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  return i;
}

function stringEnd(text, i) {
  let j = i + 1;
  while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
  return j + 1;
}

function skipValue(text, i) {
  const c = text[i];
  if (c === '"') return stringEnd(text, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; ; ) {
      const d = text[j];
      if (d === '"') {
        j = stringEnd(text, j);
        continue;
      }
      if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") depth--;
      j++;
      if (depth === 0) return j;
    }
  }
  while (i < text.length && !",}] \t\n\r".includes(text[i])) i++;
  return i;
}
