// service-channel: an OpenClaw plugin serving POST /service-channel/chat for the
// partner portal. Managed by service-deploy; the protocol is docs/channel-protocol.md
// in its repository. Plain JS, no dependencies beyond Node and the OpenClaw runtime.
//
// Auth is the plugin's own (auth: "plugin"): bearer token + HMAC-signed timestamp and
// nonce. The agent turn runs through api.runtime.agent.runEmbeddedAgent, which needs
// no gateway operator scope (subagent.* would, and plugin-auth routes have none).
import { randomUUID } from "node:crypto";
import path from "node:path";
import { CHANNEL_PATH, HEADER, MAX_BODY_BYTES, REPLAY_WINDOW_SECONDS, parseChannelRequest, safeEqual, verifyRequest } from "./protocol.js";
import { NonceStore } from "./nonce-store.js";

const PLUGIN_ID = "service-channel";
const AGENT_ID = "main";
const TURN_TIMEOUT_MS = 240000;

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

function modelName(result, config) {
  const meta = result.meta?.agentMeta;
  if (meta?.provider && meta?.model) return `${meta.provider}/${meta.model}`;
  const configured = config?.agents?.defaults?.model;
  return typeof configured === "string" ? configured : configured?.primary ?? "unknown";
}

function clientOf(req) {
  const forwarded = req.headers["x-real-ip"];
  return typeof forwarded === "string" ? forwarded : req.socket?.remoteAddress ?? "?";
}

export function createHandler(api, nonces, clock = () => Date.now()) {
  const log = api.logger ?? console;
  return async function handle(req, res) {
    try {
      if (req.method !== "POST") return sendError(res, 405, "method_not_allowed", "only POST is allowed", { allow: "POST" });
      const token = process.env.SERVICE_CHANNEL_TOKEN;
      if (!token) {
        log.warn?.(`${PLUGIN_ID}: SERVICE_CHANNEL_TOKEN is not set in the gateway's environment (drop-in service-env.conf missing or gateway not restarted)`);
        return sendError(res, 503, "misconfigured", "the channel is not configured on this server (SERVICE_CHANNEL_TOKEN is not set in the gateway)");
      }
      // The bearer token before reading the body: strangers do not get to upload.
      const auth = typeof req.headers[HEADER.authorization] === "string" ? req.headers[HEADER.authorization] : "";
      if (!auth.startsWith("Bearer ") || !safeEqual(auth.slice(7), token)) {
        log.warn?.(`${PLUGIN_ID}: 401 unauthorized from ${clientOf(req)}`);
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
        log.warn?.(`${PLUGIN_ID}: 401 ${verdict.code} from ${clientOf(req)}`);
        return sendError(res, 401, verdict.code, verdict.message);
      }
      let fresh;
      try {
        // Remembered until the timestamp leaves the window (+1 s for the inclusive bound).
        fresh = await nonces.accept(verdict.nonce, (verdict.timestamp + REPLAY_WINDOW_SECONDS + 1) * 1000, nowMs);
      } catch (error) {
        log.error?.(`${PLUGIN_ID}: nonce store: ${error.message}`);
        return sendError(res, 503, "misconfigured", "the replay protection store is not writable on this server");
      }
      if (!fresh) {
        log.warn?.(`${PLUGIN_ID}: 401 nonce_replayed from ${clientOf(req)}`);
        return sendError(res, 401, "nonce_replayed", "this nonce was already used");
      }
      const parsed = parseChannelRequest(body.toString("utf8"));
      if (!parsed.ok) return sendError(res, 400, "invalid_request", parsed.message);

      const config = api.runtime.config.current();
      const sessionId = parsed.value.sessionId ?? randomUUID();
      const started = clock();
      let result;
      try {
        result = await api.runtime.agent.runEmbeddedAgent({
          sessionId,
          sessionKey: `agent:${AGENT_ID}:${PLUGIN_ID}:${sessionId}`,
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
      log.info?.(`${PLUGIN_ID}: turn ok in session ${sessionId} (${clock() - started} ms)`);
      return sendJson(res, 200, { reply, sessionId, model: modelName(result, config) });
    } catch (error) {
      log.error?.(`${PLUGIN_ID}: ${error?.stack ?? error}`);
      return sendError(res, 500, "internal_error", "internal error in the channel plugin");
    }
  };
}

export default {
  id: PLUGIN_ID,
  name: "Service Channel",
  description: "POST /service-channel/chat for the partner portal (bearer + HMAC auth, one agent turn per message)",
  register(api) {
    const stateDir = api.runtime.state?.resolveStateDir?.(process.env) ?? path.join(process.env.OPENCLAW_STATE_DIR ?? path.join(process.env.HOME ?? "/root", ".openclaw"));
    const nonces = new NonceStore(path.join(stateDir, PLUGIN_ID, "nonces.json"));
    api.registerHttpRoute({ path: CHANNEL_PATH, auth: "plugin", match: "exact", handler: createHandler(api, nonces) });
  },
};
