// The containers' only way out: an HTTP proxy on the host's loopback (forwarded into each
// container), as on a customer server behind a corporate proxy. It tunnels (CONNECT) and
// forwards (plain http, apt) only to the hosts the deployment needs: the Debian mirror of
// the container's apt sources and the npm registry, both read at run time (no host name
// is written in the repository). Everything else is refused with 403 and recorded.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';

export interface Egress {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** host:port of every tunnel or request let through (counts). */
  allowed: Map<string, number>;
  /** What was refused ("CONNECT host:443", "GET http://host/..."). */
  refused: string[];
  allow(host: string): void;
  close(): Promise<void>;
}

export async function startEgress(allowHosts: Iterable<string>): Promise<Egress> {
  const allowList = new Set([...allowHosts].map((h) => h.toLowerCase()));
  const allowed = new Map<string, number>();
  const refused: string[] = [];
  const sockets = new Set<net.Socket>();
  const count = (key: string) => allowed.set(key, (allowed.get(key) ?? 0) + 1);

  const server = http.createServer((req, res) => {
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute URL expected (this is a proxy)\n');
      return;
    }
    if (target.protocol !== 'http:' || !allowList.has(target.hostname.toLowerCase())) {
      refused.push(`${req.method} ${target.protocol}//${target.host}${target.pathname}`);
      res.writeHead(403).end('refused by the e2e egress proxy\n');
      return;
    }
    count(target.host);
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    const upstream = http.request(target, { method: req.method, headers, agent: false }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502).end(`upstream: ${error.message}\n`);
      else res.destroy();
    });
    req.pipe(upstream);
  });

  server.on('connect', (req, client: net.Socket, head: Buffer) => {
    const [host, portText] = (req.url ?? '').split(':');
    const port = Number(portText || 443);
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    if (!host || !allowList.has(host.toLowerCase()) || port !== 443) {
      refused.push(`CONNECT ${req.url}`);
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    count(`${host}:${port}`);
    const upstream = net.connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => {
      if (!client.destroyed) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      client.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    allowed,
    refused,
    allow: (host) => allowList.add(host.toLowerCase()),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The host names of the deb/URIs lines of an apt sources.list (one-line format). */
export function aptSourceHosts(sourcesList: string): string[] {
  const hosts = new Set<string>();
  for (const line of sourcesList.split('\n')) {
    const m = /^\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)/.exec(line) ?? /^\s*URIs:\s*(.+)$/i.exec(line);
    if (!m) continue;
    for (const uri of m[1]!.split(/\s+/)) {
      try {
        hosts.add(new URL(uri).hostname);
      } catch {
        // not a URL (cdrom:, a path)
      }
    }
  }
  return [...hosts];
}
