// service-channel: an OpenClaw plugin serving POST /service-channel/chat for the
// partner portal. Managed by service-deploy; the protocol is docs/channel-protocol.md
// in its repository. Plain JS, no dependencies beyond Node and the OpenClaw runtime.
//
// The route answers only requests that came through the edge (nginx on 18790 adds the
// per-install edge secret; anything else, such as the mesh's `tailscale serve` straight
// to the gateway, is handed back to the gateway as if the route did not exist). Auth is
// the plugin's own (auth: "plugin"): bearer token + HMAC-signed timestamp and nonce.
// The agent turn runs through api.runtime.agent.runEmbeddedAgent, which needs no
// gateway operator scope (subagent.* would, and plugin-auth routes have none). Which
// runtime session a portal session runs in, and when it starts fresh after idle days,
// is decided in ./sessions.js.
import { randomUUID } from "node:crypto";
import net from "node:net";
import path from "node:path";
import {
  CHANNEL_PATH,
  HEADER,
  MAX_BODY_BYTES,
  RATE_LIMIT_REQUESTS,
  RATE_WINDOW_SECONDS,
  REPLAY_WINDOW_SECONDS,
  parseChannelRequest,
  safeEqual,
  verifyRequest,
} from "./protocol.js";
import { NonceStore } from "./nonce-store.js";
import { admitMessage, idleLimitMs } from "./sessions.js";

const PLUGIN_ID = "service-channel";
const AGENT_ID = "main";
const TURN_TIMEOUT_MS = 240000;
// nginx's internal location that closes the connection without a response (444).
export const CLOSE_URI = "/.service-channel/close";

function sendJson(res, status, value, headers = {}) {
  if (res.headersSent) return true;
  res.statusCode = status;
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("cache-control", "no-store");
  for (const [name, v] of Object.entries(headers)) res.setHeader(name, v);
  res.end(JSON.stringify(value) + "\n");
  return true;
}

function sendError(res, status, code, message, headers = {}) {
  if (status === 401) headers = { "www-authenticate": 'Bearer realm="service-channel"', ...headers };
  return sendJson(res, status, { error: { code, message } }, headers);
}

// Asks nginx to close the client's connection without a response (like a wrong knock).
function close(res) {
  if (res.headersSent) return true;
  res.statusCode = 204;
  res.setHeader("x-accel-redirect", CLOSE_URI);
  res.end();
  return true;
}

// The values of one header as sent, however many lines carried it.
function headerLines(req, name) {
  const out = [];
  const raw = req.rawHeaders ?? [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i].toLowerCase() === name) out.push(raw[i + 1]);
  return out;
}

class TooLarge extends Error {}

function readBody(req, limit) {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new TooLarge());
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners("data");
        reject(new TooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function replyText(result) {
  const visible = (result.payloads ?? []).filter((p) => p && typeof p.text === "string" && p.text.trim() !== "" && !p.isError && !p.isReasoning && !p.isCommentary);
  return visible.map((p) => p.text).join("\n\n");
}

// `<provider>/<model id>` (spec 2.4): what the turn reports, else the configured model.
export function modelName(result, config) {
  const providers = Object.keys(config?.models?.providers ?? {});
  const single = providers.length === 1 ? providers[0] : undefined;
  const meta = result?.meta?.agentMeta;
  if (meta?.model) {
    if (meta.provider) return `${meta.provider}/${meta.model}`;
    if (single) return `${single}/${meta.model}`;
  }
  const configured = config?.agents?.defaults?.model;
  const primary = typeof configured === "string" ? configured : configured?.primary;
  if (typeof primary === "string" && primary !== "") {
    if (primary.includes("/")) return primary;
    if (single) return `${single}/${primary}`;
  }
  const first = single ? config.models.providers[single]?.models?.[0]?.id : undefined;
  return first ? `${single}/${first}` : undefined;
}

// The client address nginx wrote (X-Real-IP; the edge secret proved the request came
// through nginx, which replaces any copy a client sends).
function clientOf(req) {
  const lines = headerLines(req, "x-real-ip");
  if (lines.length === 1 && net.isIP(lines[0])) return lines[0];
  return req.socket?.remoteAddress ?? "?";
}

export function createHandler(api, store, options = {}) {
  const log = api.logger ?? console;
  const clock = options.clock ?? (() => Date.now());
  const env = options.env ?? process.env;
  return async function handle(req, res) {
    try {
      const edge = env.SERVICE_CHANNEL_EDGE;
      const token = env.SERVICE_CHANNEL_TOKEN;
      if (!edge) {
        log.warn?.(`${PLUGIN_ID}: SERVICE_CHANNEL_EDGE is not set in the gateway's environment (drop-in service-env.conf missing or gateway not restarted)`);
        return sendError(res, 503, "misconfigured", "the channel is not configured on this server (SERVICE_CHANNEL_EDGE is not set in the gateway)");
      }
      // The edge: exactly one X-Service-Edge line, equal to the secret nginx adds. Anything
      // else did not come through nginx: not ours, the gateway answers as for any path.
      const edgeLines = headerLines(req, HEADER.edge);
      if (!safeEqual(edgeLines.length === 1 ? edgeLines[0] : "", edge)) return false;
      // nginx compared the first X-Service-Gateway line with the knock (nginx up to 1.22
      // sees only the first one): a second line is a wrong knock.
      if (headerLines(req, HEADER.knock).length !== 1) return close(res);
      if (req.method !== "POST") return sendError(res, 405, "method_not_allowed", "only POST is allowed", { allow: "POST" });
      if (!token) {
        log.warn?.(`${PLUGIN_ID}: SERVICE_CHANNEL_TOKEN is not set in the gateway's environment (drop-in service-env.conf missing or gateway not restarted)`);
        return sendError(res, 503, "misconfigured", "the channel is not configured on this server (SERVICE_CHANNEL_TOKEN is not set in the gateway)");
      }
      const client = clientOf(req);
      // The bearer token before the body is parsed or hashed (nginx has already read it).
      const auth = headerLines(req, HEADER.authorization);
      if (auth.length !== 1 || !auth[0].startsWith("Bearer ") || !safeEqual(auth[0].slice(7), token)) {
        log.warn?.(`${PLUGIN_ID}: 401 unauthorized from ${client}`);
        return sendError(res, 401, "unauthorized", "missing or wrong bearer token");
      }
      let body;
      try {
        body = await readBody(req, MAX_BODY_BYTES);
      } catch (error) {
        if (error instanceof TooLarge) return sendError(res, 413, "body_too_large", `the request body is larger than ${MAX_BODY_BYTES} bytes`, { connection: "close" });
        throw error;
      }
      const nowMs = clock();
      const verdict = verifyRequest({ token, method: req.method, path: req.url ?? "", headers: req.headers, body, nowSeconds: nowMs / 1000 });
      if (!verdict.ok) {
        log.warn?.(`${PLUGIN_ID}: 401 ${verdict.code} from ${client}`);
        return sendError(res, 401, verdict.code, verdict.message);
      }
      let admission;
      try {
        // Remembered until the timestamp leaves the window (+1 s for the inclusive bound).
        admission = await store.admit({ nonce: verdict.nonce, expiresAtMs: (verdict.timestamp + REPLAY_WINDOW_SECONDS + 1) * 1000, nowMs, client });
      } catch (error) {
        log.error?.(`${PLUGIN_ID}: channel state: ${error.message}`);
        return sendError(res, 503, "misconfigured", "the replay protection store is not writable on this server");
      }
      if (!admission.ok && admission.reason === "replayed") {
        log.warn?.(`${PLUGIN_ID}: 401 nonce_replayed from ${client}`);
        return sendError(res, 401, "nonce_replayed", "this nonce was already used");
      }
      if (!admission.ok) {
        log.warn?.(`${PLUGIN_ID}: 429 rate_limited for ${client}`);
        return sendError(res, 429, "rate_limited", `at most ${RATE_LIMIT_REQUESTS} requests in any ${RATE_WINDOW_SECONDS} s per client`, { "retry-after": String(admission.retryAfterSeconds) });
      }
      const parsed = parseChannelRequest(body);
      if (!parsed.ok) return sendError(res, 400, "invalid_request", parsed.message);

      const config = api.runtime.config.current();
      const sessionId = parsed.value.sessionId ?? randomUUID();
      const sessionKey = `agent:${AGENT_ID}:${PLUGIN_ID}:${sessionId}`;
      const started = clock();
      let turnSession;
      try {
        turnSession = await admitMessage(api, { agentId: AGENT_ID, sessionKey, nowMs: started, idleLimit: idleLimitMs(config) });
      } catch (error) {
        log.error?.(`${PLUGIN_ID}: session store: cannot record a message in session ${sessionId}: ${error?.message ?? error}`);
        return sendError(res, 503, "agent_unavailable", "the agent could not answer; try again later", { "retry-after": "5" });
      }
      if (turnSession.previousSessionId !== undefined) {
        log.info?.(`${PLUGIN_ID}: session ${sessionId} was idle ${Math.floor(turnSession.idleMs / 60000)} min: continues as a new conversation (runtime session ${turnSession.previousSessionId} -> ${turnSession.sessionId})`);
      }
      let result;
      try {
        result = await api.runtime.agent.runEmbeddedAgent({
          sessionId: turnSession.sessionId,
          sessionKey,
          agentId: AGENT_ID,
          runId: randomUUID(),
          workspaceDir: api.runtime.agent.resolveAgentWorkspaceDir(config, AGENT_ID),
          prompt: parsed.value.message,
          timeoutMs: TURN_TIMEOUT_MS,
          trigger: "user",
          terminalReplyExpectation: "required",
        });
      } catch (error) {
        log.error?.(`${PLUGIN_ID}: agent turn failed in session ${sessionId}: ${error?.message ?? error}`);
        return sendError(res, 503, "agent_unavailable", "the agent could not answer; try again later", { "retry-after": "5" });
      }
      const reply = replyText(result);
      if (!reply || result.meta?.aborted) {
        const why = (result.payloads ?? []).find((p) => p?.isError)?.text ?? (result.meta?.aborted ? "aborted" : "empty reply");
        log.error?.(`${PLUGIN_ID}: agent turn without a reply in session ${sessionId}: ${String(why).slice(0, 300)}`);
        return sendError(res, 503, "agent_unavailable", "the agent could not answer; try again later", { "retry-after": "5" });
      }
      const model = modelName(result, config);
      if (!model) {
        log.error?.(`${PLUGIN_ID}: no model is configured (agents.defaults.model, models.providers)`);
        return sendError(res, 503, "misconfigured", "no model is configured on this server");
      }
      log.info?.(`${PLUGIN_ID}: turn ok in session ${sessionId} (${clock() - started} ms)`);
      return sendJson(res, 200, { reply, sessionId, model });
    } catch (error) {
      log.error?.(`${PLUGIN_ID}: ${error?.stack ?? error}`);
      return sendError(res, 500, "internal_error", "internal error in the channel plugin");
    }
  };
}

export default {
  id: PLUGIN_ID,
  name: "Service Channel",
  description: "POST /service-channel/chat for the partner portal (edge-only, bearer + HMAC auth, one agent turn per message)",
  register(api) {
    const stateDir = api.runtime.state?.resolveStateDir?.(process.env) ?? path.join(process.env.OPENCLAW_STATE_DIR ?? path.join(process.env.HOME ?? "/root", ".openclaw"));
    const store = new NonceStore(path.join(stateDir, PLUGIN_ID, "nonces.json"), { rateLimit: RATE_LIMIT_REQUESTS, rateWindowMs: RATE_WINDOW_SECONDS * 1000 });
    api.registerHttpRoute({ path: CHANNEL_PATH, auth: "plugin", match: "exact", handler: createHandler(api, store) });
  },
};
