import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { REPO } from './binary.js';
import { budget } from './budget.js';
import { lastUserText, writeChatCompletion } from './chat-completion.js';
import { freePort } from './nginx.js';
import { tempDir } from './tmp.js';

/** The OpenClaw release the deploy pins (templates/components.json). */
export const OPENCLAW_VERSION = '2026.9.6';
export const OPENCLAW_CACHE = path.join(REPO, '.cache', `openclaw-${OPENCLAW_VERSION}`);
const NODE_BIN = path.join(REPO, 'node_modules', `node-linux-${process.arch === 'arm64' ? 'arm64' : 'x64'}`, 'bin');
const READY = path.join(OPENCLAW_CACHE, '.installed');

/** PATH with the pinned Node first (package.json; OpenClaw 2026.9.6 needs Node >= 26.1.0). */
export function pinnedNodePath(): string {
  return `${NODE_BIN}:${path.join(REPO, 'node_modules', '.bin')}:${process.env.PATH}`;
}

/**
 * Installs openclaw@OPENCLAW_VERSION once into .cache/ with the pinned Node's npm
 * (about a minute); parallel test files wait on a lock directory instead of
 * installing twice. Returns the openclaw entry point.
 */
export async function ensureOpenClaw(): Promise<string> {
  // A global install into our prefix: npm refuses --allow-scripts for project-scoped installs.
  const entry = path.join(OPENCLAW_CACHE, 'lib', 'node_modules', 'openclaw', 'openclaw.mjs');
  if (fs.existsSync(READY)) return entry;
  fs.mkdirSync(path.dirname(OPENCLAW_CACHE), { recursive: true });
  const lock = `${OPENCLAW_CACHE}.lock`;
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch {
      if (fs.existsSync(READY)) return entry;
      // A lock older than 10 minutes belongs to a run that died.
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 10 * 60_000) fs.rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  try {
    if (fs.existsSync(READY)) return entry;
    fs.mkdirSync(OPENCLAW_CACHE, { recursive: true });
    await execa('npm', ['install', '--global', '--prefix', OPENCLAW_CACHE, `openclaw@${OPENCLAW_VERSION}`, '--no-audit', '--no-fund', '--allow-scripts=openclaw'], {
      env: { ...process.env, PATH: pinnedNodePath() },
      timeout: 8 * 60_000,
    });
    fs.writeFileSync(READY, `${new Date().toISOString()}\n`);
    return entry;
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

export interface FakeProvider {
  url: string;
  /** The messages of every chat completion request, in order. */
  requests: Array<{ model: string; messages: Array<{ role: string; content: unknown }>; bytes: number; tools: number; toolNames: string[] }>;
  close(): Promise<void>;
}

/** A loopback stand-in for the service's AI gateway (OpenAI chat completions, SSE). */
export async function startFakeProvider(): Promise<FakeProvider> {
  const requests: FakeProvider['requests'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const json = JSON.parse(body) as { model: string; stream?: boolean; messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function?: { name?: string } }> };
      const toolNames = (json.tools ?? []).map((tool) => tool.function?.name ?? '?');
      requests.push({ model: json.model, messages: json.messages, bytes: Buffer.byteLength(body), tools: toolNames.length, toolNames });
      const said = /\] ([^\n]*)/.exec(lastUserText(json.messages))?.[1] ?? '';
      writeChatCompletion(res, json, `STAND-IN REPLY to: ${said}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const VITE_ENV = new Set(['TEST', 'MODE', 'NODE_ENV', 'PROD', 'DEV', 'BASE_URL', 'SSR']);

export interface GatewayOptions {
  pluginDir: string;
  providerUrl: string;
  /** Extra environment for the gateway process (SERVICE_CHANNEL_TOKEN ...). */
  env: Record<string, string | undefined>;
  /** Reuse a state dir (restart tests). */
  stateDir?: string;
  providerName?: string;
  modelId?: string;
  /** Changes to the config before the gateway starts (heartbeat, identity...). */
  configure?: (config: Record<string, any>) => void;
}

export interface RunningGateway {
  port: number;
  /** The gateway process (`openclaw-gateway`): for its memory and the processes it starts. */
  pid: number;
  url: string;
  stateDir: string;
  gatewayToken: string;
  log(): string;
  stop(): Promise<void>;
  /** The gateway's environment: the same state dir and config for `openclaw` CLI calls. */
  env: Record<string, string>;
}

/**
 * A real OpenClaw gateway on a random loopback port with a temporary state dir and
 * config: the given provider as the only one, the plugin loaded from `pluginDir`.
 * Ready when GET /readyz answers 2xx: polled within a budget that scales with the
 * machine's load (test/helpers/budget.ts; OpenClaw alone took 29 s to listen on a
 * loaded 2-core machine). Fails at once if the process exits; a timeout names what was
 * awaited, the last /readyz answer and the log tail.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const entry = await ensureOpenClaw();
  const stateDir = options.stateDir ?? tempDir('sd-openclaw-');
  const home = path.join(stateDir, 'home');
  fs.mkdirSync(home, { recursive: true });
  const port = await freePort();
  const provider = options.providerName ?? 'service';
  const model = options.modelId ?? 'test-model';
  const gatewayToken = 'pkt_gateway_token_for_tests_0123456789';
  const config = {
    gateway: { mode: 'local', port, bind: 'loopback', auth: { mode: 'token', token: gatewayToken } },
    models: { mode: 'replace', providers: { [provider]: { baseUrl: options.providerUrl, apiKey: 'sk-stand-in', api: 'openai-completions', models: [{ id: model, name: model, contextWindow: 128000, maxTokens: 4096 }] } } },
    agents: { defaults: { model: { primary: `${provider}/${model}` }, heartbeat: { every: '0m' } } },
    plugins: { enabled: true, load: { paths: [options.pluginDir] }, entries: { 'service-channel': { enabled: true } } },
  };
  options.configure?.(config);
  const configPath = path.join(stateDir, 'openclaw.json');
  fs.writeFileSync(configPath, JSON.stringify(config, null, 2), { mode: 0o600 });
  const logFile = path.join(stateDir, `gateway-${Date.now()}.log`);
  const out = fs.openSync(logFile, 'a');
  const env: Record<string, string> = {};
  // Not the test runner's own variables (vitest sets TEST, MODE, NODE_ENV=test...: the
  // OpenClaw CLI prints nothing under them).
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('VITEST') && !VITE_ENV.has(k) && k !== 'NODE_OPTIONS' && !k.startsWith('SERVICE_')) env[k] = v;
  Object.assign(env, { PATH: pinnedNodePath(), HOME: home, OPENCLAW_STATE_DIR: stateDir, OPENCLAW_CONFIG_PATH: configPath });
  for (const [k, v] of Object.entries(options.env)) if (v !== undefined) env[k] = v;
  const child: ChildProcess = spawn(path.join(NODE_BIN, 'node'), [entry, 'gateway', 'run'], { env, stdio: ['ignore', out, out], detached: true });
  fs.closeSync(out);
  const log = () => fs.readFileSync(logFile, 'utf8');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  };
  const started = Date.now();
  const limit = budget(180_000);
  let lastAnswer = 'no answer yet (not listening)';
  for (;;) {
    if (child.exitCode !== null) throw new Error(`openclaw gateway exited (${child.exitCode}) before GET /readyz answered 2xx:\n${log().slice(-3000)}`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(10_000) }).then(
      async (r) => {
        lastAnswer = `HTTP ${r.status} ${(await r.text()).slice(0, 300)}`;
        return r.ok;
      },
      (error: Error) => {
        if (!/ECONNREFUSED|fetch failed/.test(String(error?.cause ?? error))) lastAnswer = String(error?.cause ?? error);
        return false;
      },
    );
    if (ready) break;
    if (Date.now() - started > limit) {
      await stop();
      throw new Error(`openclaw gateway not ready: waited ${Math.round((Date.now() - started) / 1000)} s (budget ${Math.round(limit / 1000)} s) for GET http://127.0.0.1:${port}/readyz to answer 2xx; last: ${lastAnswer}\n${log().slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { port, pid: child.pid!, url: `http://127.0.0.1:${port}`, stateDir, gatewayToken, log, stop, env: { ...env } };
}
