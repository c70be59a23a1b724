// Loopback stand-ins on the host for what the container cannot reach: the service's AI
// gateway (OpenAI-compatible, SSE), the service's MCP server, and plain static servers.
// The container shares the host's network namespace, so 127.0.0.1 is the same there.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { lastUserText, writeChatCompletion } from '../helpers/chat-completion.js';

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closer(server: http.Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/** What a scripted turn answers instead of the echo: tool calls, a text, or an error (a model the gateway does not serve: 404). */
export type ScriptedReply = { toolCalls: Array<{ id: string; name: string; arguments: Record<string, unknown> }> } | { text: string } | { error: { status: number; message: string; code?: string } };

export interface AiGateway {
  /** SERVICE_AI_GATEWAY_URL (OpenAI base URL, ends in /v1). */
  url: string;
  /** Every chat completion: the model asked for, whether the service API key was presented, the raw body and its size, the tools offered. */
  requests: Array<{ model: string; authorized: boolean; body: string; bytes: number; tools: string[] }>;
  /**
   * Set by a scenario to answer some requests itself (test/e2e/exfil.ts); undefined: echo.
   * A promise holds the answer until it settles (a slow model: test/e2e/lifecycle.ts).
   */
  script?: (request: { model: string; messages: Array<{ role: string; content: unknown; tool_call_id?: string }>; tools?: Array<{ function?: { name?: string; parameters?: unknown } }> }) => ScriptedReply | undefined | Promise<ScriptedReply | undefined>;
  close(): Promise<void>;
}

/**
 * The service's AI gateway: OpenAI chat completions (stream or not) and the models list
 * the install's preflight asks. Only the service API key is accepted (401 otherwise), so
 * a reply proves the agent is routed through it.
 * The reply names the model it was asked for.
 */
export async function startAiGateway(apiKey: () => string): Promise<AiGateway> {
  const requests: AiGateway['requests'] = [];
  const gateway = { requests } as AiGateway;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      // The install's preflight asks the models list with the service API key (src/steps/api-key.ts).
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        const ok = req.headers.authorization === `Bearer ${apiKey()}`;
        res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(ok ? '{"object":"list","data":[]}' : '{"error":{"message":"invalid api key","type":"invalid_request_error"}}');
        return;
      }
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      let json: { model: string; stream?: boolean; messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function?: { name?: string } }> };
      try {
        json = JSON.parse(body);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
        return;
      }
      const authorized = req.headers.authorization === `Bearer ${apiKey()}`;
      requests.push({ model: json.model, authorized, body, bytes: Buffer.byteLength(body), tools: (json.tools ?? []).map((t) => t.function?.name ?? '?') });
      if (!authorized) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"invalid api key","type":"invalid_request_error"}}');
        return;
      }
      void Promise.resolve(gateway.script?.(json)).then(
        (scripted) => answer(res, json, scripted),
        (error: Error) => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `e2e stand-in script: ${error.message}` } })),
      );
    });
  });
  const base = await listen(server);
  return Object.assign(gateway, { url: `${base}/v1`, close: closer(server) });
}

/** The stand-in's answer: the script's (tool calls or a text), else the echo naming the model. */
function answer(res: http.ServerResponse, json: { model: string; stream?: boolean; messages: Array<{ role: string; content: unknown }> }, scripted: ScriptedReply | undefined): void {
  if (scripted && 'toolCalls' in scripted) {
    replyToolCalls(res, json, scripted.toolCalls);
    return;
  }
  if (scripted && 'error' in scripted) {
    const { status, message, code } = scripted.error;
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message, type: 'invalid_request_error', ...(code ? { code } : {}) } }));
    return;
  }
  const userText = lastUserText(json.messages);
  const said = /\] ([^\n]*)/.exec(userText)?.[1] ?? userText.split('\n').pop() ?? '';
  writeChatCompletion(res, json, scripted && 'text' in scripted ? scripted.text : `STAND-IN REPLY from ${json.model} to: ${said}`);
}

/** An assistant turn that calls tools (OpenAI chat completions, stream or not). */
function replyToolCalls(res: http.ServerResponse, json: { model: string; stream?: boolean }, calls: Array<{ id: string; name: string; arguments: Record<string, unknown> }>): void {
  const id = `chatcmpl-${Date.now()}`;
  const created = Math.floor(Date.now() / 1000);
  const toolCalls = calls.map((c, index) => ({ index, id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (!json.stream) {
    const message = { role: 'assistant', content: null, tool_calls: toolCalls.map(({ index: _i, ...call }) => call) };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, object: 'chat.completion', created, model: json.model, choices: [{ index: 0, message, finish_reason: 'tool_calls' }], usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: json.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.write(chunk({ role: 'assistant', content: null, tool_calls: toolCalls }));
  res.write(chunk({}, 'tool_calls'));
  res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: json.model, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

export interface McpServer {
  url: string;
  /** initialize requests: whether the MCP token was presented. */
  initializes: Array<{ authorized: boolean }>;
  /** tools/call requests: the tool and whether the MCP token was presented. */
  calls: Array<{ name: string; authorized: boolean }>;
  close(): Promise<void>;
}

/**
 * The service's MCP server (streamable HTTP, JSON responses): initialize, ping,
 * tools/list (one CRM tool), notifications (202). 401 without the customer's MCP token.
 */
export async function startMcp(token: () => string): Promise<McpServer> {
  const initializes: McpServer['initializes'] = [];
  const calls: McpServer['calls'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const authorized = req.headers.authorization === `Bearer ${token()}`;
      if (req.method === 'GET') {
        res.writeHead(405, { allow: 'POST' }).end();
        return;
      }
      if (req.method === 'DELETE') {
        res.writeHead(200).end();
        return;
      }
      let msg: { id?: number | string | null; method?: string; params?: { protocolVersion?: string; name?: string } };
      try {
        msg = JSON.parse(body);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}');
        return;
      }
      if (msg.method === 'initialize') initializes.push({ authorized });
      if (msg.method === 'tools/call') calls.push({ name: String(msg.params?.name), authorized });
      if (!authorized) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end('{"error":"unauthorized"}');
        return;
      }
      if (msg.id === undefined || msg.id === null) {
        res.writeHead(202).end();
        return;
      }
      const reply = (result: object) => res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'e2e-session' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      switch (msg.method) {
        case 'initialize':
          return reply({ protocolVersion: msg.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'service-mcp (e2e stand-in)', version: '1.0.0' } });
        case 'ping':
          return reply({});
        case 'tools/list':
          return reply({ tools: [{ name: 'crm_find_contact', description: 'Find a CRM contact (e2e stand-in)', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } }] });
        case 'tools/call':
          return reply({ content: [{ type: 'text', text: 'no contacts (e2e stand-in)' }] });
        default:
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'method not found' } }));
      }
    });
  });
  const base = await listen(server);
  return { url: `${base}/mcp`, initializes, calls, close: closer(server) };
}

/** Plain-HTTP static files on loopback (the apt repository: apt checks its signature, not the transport). */
export async function serveHttp(root: string): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const rel = path.normalize(decodeURIComponent((req.url ?? '/').split('?')[0]!)).replace(/^(\.\.[/\\])+/, '');
    const file = path.join(root, rel);
    if (!file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404).end('not found\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': fs.statSync(file).size });
    if (req.method === 'HEAD') res.end();
    else fs.createReadStream(file).pipe(res);
  });
  const url = await listen(server);
  return { url, requests, close: closer(server) };
}
