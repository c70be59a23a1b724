import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { tempDir } from './tmp.js';

export interface TestCa {
  caFile: string;
  keyFile: string;
  certFile: string;
}

/** A throwaway CA and a server certificate for 127.0.0.1/localhost, made with real openssl. */
export function makeTestCa(): TestCa {
  const dir = tempDir('sd-ca-');
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
    '-subj', '/CN=service-deploy test CA', '-keyout', 'ca.key', '-out', 'ca.pem']);
  run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost',
    '-keyout', 'server.key', '-out', 'server.csr']);
  fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-extfile', 'ext.cnf', '-out', 'server.pem']);
  return { caFile: path.join(dir, 'ca.pem'), keyFile: path.join(dir, 'server.key'), certFile: path.join(dir, 'server.pem') };
}

export interface StaticServer {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

/** Serves the files of `root` over HTTPS on 127.0.0.1 (a loopback stand-in for the setup URL). */
export async function serveDirectory(root: string, ca: TestCa): Promise<StaticServer> {
  const requests: string[] = [];
  const server = https.createServer(
    { key: fs.readFileSync(ca.keyFile), cert: fs.readFileSync(ca.certFile) },
    (req, res) => {
      requests.push(req.url ?? '');
      const file = path.join(root, path.normalize(decodeURIComponent(req.url ?? '/')).replace(/^(\.\.[/\\])+/, ''));
      if (!file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
        res.writeHead(404).end('not found\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      fs.createReadStream(file).pipe(res);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref(); // a shared server must not keep a finished process alive
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
