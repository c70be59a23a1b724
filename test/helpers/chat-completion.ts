// The OpenAI chat-completions answer both loopback stand-ins of the AI gateway give
// (test/helpers/openclaw.ts for npm test, test/e2e/standins.ts for the booted servers):
// a JSON completion, or the same text as server-sent events ending in a usage chunk.
import type http from 'node:http';

export type ChatMessage = { role: string; content: unknown };

export function textOf(content: unknown): string {
  return typeof content === 'string' ? content : Array.isArray(content) ? content.map((p: { text?: string }) => p?.text ?? '').join('') : '';
}

/** The text of the last message the user typed (not the runtime's own injected context). */
export function lastUserText(messages: readonly ChatMessage[]): string {
  const lastUser = [...messages].reverse().find((m) => m.role === 'user' && !textOf(m.content).startsWith('<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT'));
  return textOf(lastUser?.content);
}

/** Answers `text` as the model `model`, streamed when the request asked for a stream. */
export function writeChatCompletion(res: http.ServerResponse, request: { model: string; stream?: boolean }, text: string): void {
  const id = `chatcmpl-${Date.now()}`;
  const created = Math.floor(Date.now() / 1000);
  const model = request.model;
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (!request.stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, object: 'chat.completion', created, model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.write(chunk({ role: 'assistant', content: '' }));
  res.write(chunk({ content: text }));
  res.write(chunk({}, 'stop'));
  res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** Where the bytes of a chat completion request go: the system prompt, the tool schemas, the other messages. */
export interface RequestParts {
  bytes: number;
  system: number;
  tools: number;
  toolNames: string[];
  messages: number;
}

export function requestParts(body: string): RequestParts {
  const json = JSON.parse(body) as { messages?: ChatMessage[]; tools?: Array<{ function?: { name?: string } }> };
  const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
  const messages = json.messages ?? [];
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer');
  return {
    bytes: Buffer.byteLength(body),
    system: system.reduce((sum, m) => sum + size(m), 0),
    tools: json.tools?.length ? size(json.tools) : 0,
    toolNames: (json.tools ?? []).map((t) => t.function?.name ?? '?'),
    messages: messages.filter((m) => !system.includes(m)).reduce((sum, m) => sum + size(m), 0),
  };
}
