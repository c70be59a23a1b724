import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { tempDir } from './tmp.js';

export const NGINX = fs.existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx';

/** A TCP port free right now on 127.0.0.1 (the kernel's pick, so parallel test files do not clash). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** nginx.conf for a throwaway prefix: everything under `dir`, the site included in http. */
export function nginxConf(dir: string, siteFile: string): string {
  return `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 256; }
http {
    access_log ${dir}/access.log;
    client_body_temp_path ${dir}/tmp/body;
    proxy_temp_path ${dir}/tmp/proxy;
    fastcgi_temp_path ${dir}/tmp/fastcgi;
    uwsgi_temp_path ${dir}/tmp/uwsgi;
    scgi_temp_path ${dir}/tmp/scgi;
    include ${siteFile};
}
`;
}

export interface RunningNginx {
  dir: string;
  port: number;
  errorLog(): string;
  stop(): Promise<void>;
}

/** `nginx -t` on a throwaway prefix with this site; returns its exit code and output. */
export async function nginxTest(siteText: string): Promise<{ code: number; output: string }> {
  const dir = prepare(siteText);
  return new Promise((resolve) => {
    const child = spawn(NGINX, ['-t', '-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
  });
}

function prepare(siteText: string): string {
  const dir = tempDir('sd-nginx-');
  fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
  fs.chmodSync(dir, 0o755);
  fs.writeFileSync(path.join(dir, 'site.conf'), siteText, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'nginx.conf'), nginxConf(dir, path.join(dir, 'site.conf')));
  return dir;
}

/** A real nginx in the foreground on loopback; stop() kills it (also on test failure, via afterAll). */
export async function startNginx(siteText: string, port: number): Promise<RunningNginx> {
  const dir = prepare(siteText);
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}${readLog(dir)}`);
    if (await canConnect(port)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not listen on ${port}: ${stderr}${readLog(dir)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    dir,
    port,
    errorLog: () => readLog(dir),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

function readLog(dir: string): string {
  try {
    return fs.readFileSync(path.join(dir, 'error.log'), 'utf8');
  } catch {
    return '';
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export interface RawAnswer {
  /** Every byte the server sent after the TLS handshake. */
  bytes: Buffer;
  status?: number;
  headers: string;
  body: string;
  protocol?: string;
}

/** One HTTP/1.1 request over node:tls, reading until the server closes. */
export function rawRequest(options: {
  port: number;
  localAddress?: string;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  ca?: string;
  minVersion?: tls.SecureVersion;
  maxVersion?: tls.SecureVersion;
}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const connectOptions: tls.ConnectionOptions = {
      host: '127.0.0.1',
      port: options.port,
      rejectUnauthorized: options.ca !== undefined,
      servername: 'localhost',
    };
    if (options.localAddress) (connectOptions as { localAddress?: string }).localAddress = options.localAddress;
    if (options.ca) connectOptions.ca = options.ca;
    if (options.minVersion) connectOptions.minVersion = options.minVersion;
    if (options.maxVersion) connectOptions.maxVersion = options.maxVersion;
    const socket = tls.connect(connectOptions);
    const chunks: Buffer[] = [];
    let protocol: string | undefined;
    socket.on('secureConnect', () => {
      protocol = socket.getProtocol() ?? undefined;
      const body = options.body ?? '';
      const headers = { host: 'localhost', connection: 'close', 'content-length': String(Buffer.byteLength(body)), ...options.headers };
      const head = `${options.method ?? 'POST'} ${options.path ?? '/service-channel/chat'} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
      socket.write(head + body);
    });
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (error) => (chunks.length === 0 && (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? finish() : reject(error)));
    socket.on('close', finish);
    let done = false;
    function finish() {
      if (done) return;
      done = true;
      const bytes = Buffer.concat(chunks);
      const text = bytes.toString('utf8');
      const [headers = '', ...rest] = text.split('\r\n\r\n');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1];
      let body = rest.join('\r\n\r\n');
      if (/^transfer-encoding: chunked$/im.test(headers)) body = dechunk(body);
      resolve({ bytes, status: status ? Number(status) : undefined, headers, body, protocol });
    }
  });
}

function dechunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol < 0) return out;
    const size = parseInt(rest.slice(0, eol), 16);
    if (!size) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}
