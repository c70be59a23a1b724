// Runs inside a container's network namespace (nsenter --net=...): listens on the
// container's 127.0.0.1:<port> and pipes every connection to a Unix socket of the host
// (Unix sockets live in the file system, not in a network namespace), where the harness
// connects it to the host's 127.0.0.1:<port>. So the container reaches the harness's
// loopback stand-ins at the very URLs they have on the host.
//
// Control on stdin, one line per port: "<port> <socket path>"; answers "ok <port>" or
// "error <port> <message>" on stdout. Exits when stdin closes (the harness is gone).
import net from 'node:net';
import readline from 'node:readline';

const servers = [];
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const [portText, socket] = line.trim().split(/\s+/);
  const port = Number(portText);
  if (!Number.isInteger(port) || port <= 0 || !socket) {
    process.stdout.write(`error ${portText} bad request\n`);
    return;
  }
  const server = net.createServer((inbound) => {
    const outbound = net.connect(socket);
    inbound.pipe(outbound).pipe(inbound);
    const close = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', close);
    outbound.on('error', close);
  });
  server.on('error', (error) => process.stdout.write(`error ${port} ${error.message}\n`));
  server.listen(port, '127.0.0.1', () => process.stdout.write(`ok ${port}\n`));
  servers.push(server);
});
lines.on('close', () => {
  for (const s of servers) s.close();
  process.exit(0);
});
