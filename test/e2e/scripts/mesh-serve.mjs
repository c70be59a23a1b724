// The e2e's stand-in for `tailscale serve` on the server (the e2e's tailscale CLI
// stand-in only records the route): HTTPS on the server's mesh side, proxied to the
// gateway's loopback port the way tailscaled does it. A device's request reaches the
// gateway from 127.0.0.1 with the device's own address in X-Forwarded-For (set, never
// appended to what the client sent), X-Forwarded-Proto/Host, and the Tailscale-User-*
// identity headers of a user-owned device. WebSocket upgrades included: the Control UI
// and the OpenClaw clients speak the gateway protocol over one.
//
// Run inside the container's network namespace (nsenter --net=...), so 127.0.0.1 is the
// server's loopback. Usage:
//   node mesh-serve.mjs <listen address> <listen port> <gateway port> <cert.pem> <key.pem>
// Prints "listening <address>:<port>" once it accepts connections; exits on SIGTERM or
// when stdin closes (the harness is gone).
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

const [address, listenPort, gatewayPort, certFile, keyFile] = process.argv.slice(2);
if (net.isIP(address ?? '') === 0 || !Number(listenPort) || !Number(gatewayPort) || !certFile || !keyFile) {
  process.stderr.write('usage: mesh-serve.mjs <listen address> <listen port> <gateway port> <cert.pem> <key.pem>\n');
  process.exit(2);
}

const IDENTITY = { 'tailscale-user-login': 'owner@e2e-mesh.invalid', 'tailscale-user-name': 'Device Owner', 'tailscale-user-profile-pic': '' };

/** The request's headers as tailscaled forwards them: whatever the client said about forwarding or identity is replaced. */
function forwarded(req) {
  const headers = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (/^(x-forwarded-|forwarded$|x-real-ip$|tailscale-)/i.test(name) || value === undefined) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const client = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  return { ...headers, 'x-forwarded-for': client, 'x-forwarded-proto': 'https', 'x-forwarded-host': req.headers.host ?? '', ...IDENTITY };
}

const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
  const upstream = http.request({ host: '127.0.0.1', port: Number(gatewayPort), method: req.method, path: req.url, headers: forwarded(req) }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
});

const tunnels = new Set();
server.on('upgrade', (req, socket, head) => {
  tunnels.add(socket);
  socket.on('close', () => tunnels.delete(socket));
  const upstream = net.connect(Number(gatewayPort), '127.0.0.1', () => {
    const lines = [`${req.method} ${req.url} HTTP/1.1`, ...Object.entries(forwarded(req)).map(([k, v]) => `${k}: ${v}`), '', ''];
    upstream.write(lines.join('\r\n'));
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket).pipe(upstream);
  });
  const close = () => {
    upstream.destroy();
    socket.destroy();
  };
  upstream.on('error', close);
  socket.on('error', close);
  socket.on('close', close);
  upstream.on('close', close);
});

server.listen(Number(listenPort), address, () => process.stdout.write(`listening ${address}:${listenPort}\n`));
const stop = () => {
  server.closeAllConnections();
  for (const socket of tunnels) socket.destroy();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.resume();
