import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './binary.js';
import { sessionRows } from './session-rows.js';
import { tempDir } from './tmp.js';

/**
 * The service-channel plugin's request handler, exactly as shipped
 * (templates/service-channel.index.js and its modules), served by a plain Node HTTP
 * server with a scripted agent instead of OpenClaw's runtime. For tests of the edge
 * (nginx releases, namespaces) that need the plugin's answers but not a model turn;
 * the real gateway is in test/channel/edge.test.ts.
 */
export interface PluginUpstream {
  /** `127.0.0.1:<port>` or `unix:<path>:` for the nginx site's upstream. */
  upstream: string;
  port?: number;
  /** Every request that reached the plugin: what nginx forwarded. */
  requests: Array<{ url: string; rawHeaders: string[] }>;
  /** The prompts the scripted agent got. */
  turns: string[];
  close(): Promise<void>;
}

export async function startPluginUpstream(options: { token: string; edge: string; socket?: boolean; stateDir?: string }): Promise<PluginUpstream> {
  const dir = tempDir('sd-plugin-');
  for (const name of ['index.js', 'protocol.js', 'nonce-store.js', 'sessions.js', 'package.json']) {
    fs.copyFileSync(path.join(REPO, 'templates', `service-channel.${name}`), path.join(dir, name));
  }
  const plugin = await import(pathToFileURL(path.join(dir, 'index.js')).href);
  const { NonceStore } = await import(pathToFileURL(path.join(dir, 'nonce-store.js')).href);
  const turns: string[] = [];
  const requests: PluginUpstream['requests'] = [];
  const config = { models: { providers: { service: { models: [{ id: 'test-model' }] } } }, agents: { defaults: { model: { primary: 'service/test-model' } } } };
  const api = {
    logger: { info() {}, warn() {}, error() {} },
    runtime: {
      config: { current: () => config },
      agent: {
        session: sessionRows().api,
        resolveAgentWorkspaceDir: () => dir,
        runEmbeddedAgent: async (p: { prompt: string }) => {
          turns.push(p.prompt);
          return { payloads: [{ text: `SCRIPTED REPLY to: ${p.prompt}` }], meta: { agentMeta: { provider: 'service', model: 'test-model' } } };
        },
      },
    },
  };
  const store = new NonceStore(path.join(options.stateDir ?? dir, 'state', 'nonces.json'));
  const handle = plugin.createHandler(api, store, { env: { SERVICE_CHANNEL_TOKEN: options.token, SERVICE_CHANNEL_EDGE: options.edge } });
  const server = http.createServer(async (req, res) => {
    requests.push({ url: req.url ?? '', rawHeaders: req.rawHeaders });
    const handled = await handle(req, res);
    // The gateway's answer for a path no route claims.
    if (handled === false) res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
  });
  let upstream: string;
  let port: number | undefined;
  if (options.socket) {
    // nginx's workers run as nobody: the folder must let them reach the socket.
    const sockDir = tempDir('sd-sock-');
    fs.chmodSync(sockDir, 0o755);
    const sock = path.join(sockDir, 'plugin.sock');
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    fs.chmodSync(sock, 0o666);
    upstream = `unix:${sock}:`;
  } else {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    upstream = `127.0.0.1:${port}`;
  }
  return {
    upstream,
    port,
    requests,
    turns,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
