import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
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
  /** The master process (its workers are its children). */
  pid: number;
  errorLog(): string;
  /** Every file the site and nginx.conf log to, read now (access and error logs). */
  logs(): string;
  stop(): Promise<void>;
}

/**
 * An nginx binary to run: this machine's (default) or another release unpacked from its
 * Debian package (test/helpers/nginx-versions.ts). `argv` builds the command line.
 */
export interface NginxBinary {
  version: string;
  /** Command and arguments that run nginx with `args`. */
  argv(args: string[]): [string, string[]];
  /** Whether it knows -e (nginx 1.19.5+); older ones open their built-in error log first. */
  hasE: boolean;
}

export const SYSTEM_NGINX: NginxBinary = { version: 'system', argv: (args) => [NGINX, args], hasE: true };

function nginxArgs(binary: NginxBinary, dir: string, extra: string[] = []): [string, string[]] {
  return binary.argv([...extra, '-p', dir, '-c', path.join(dir, 'nginx.conf'), ...(binary.hasE ? ['-e', path.join(dir, 'error.log')] : [])]);
}

/** `nginx -t` on a throwaway prefix with this site; returns its exit code and output. */
export async function nginxTest(siteText: string, binary: NginxBinary = SYSTEM_NGINX): Promise<{ code: number; output: string }> {
  const dir = prepare(siteText);
  const [command, args] = nginxArgs(binary, dir, ['-t']);
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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

export interface StartOptions {
  binary?: NginxBinary;
  /** Run inside this network namespace (readiness is read from its `ss`). */
  netns?: string;
  /** Address the site listens on (readiness probe); default 127.0.0.1. */
  host?: string;
}

/** The master's pid from its pid file, once nginx has written it whole. */
function pidIn(dir: string): number | undefined {
  try {
    const text = fs.readFileSync(path.join(dir, 'nginx.pid'), 'utf8');
    return text.endsWith('\n') && Number(text.trim()) > 0 ? Number(text.trim()) : undefined;
  } catch {
    return undefined;
  }
}

/** A real nginx in the foreground; stop() kills it (also on test failure, via afterAll). */
export async function startNginx(siteText: string, port: number, options: StartOptions = {}): Promise<RunningNginx> {
  const dir = prepare(siteText);
  const [command, args] = nginxArgs(options.binary ?? SYSTEM_NGINX, dir);
  const [cmd, argv] = options.netns ? ['ip', ['netns', 'exec', options.netns, command, ...args]] : [command, args];
  const child: ChildProcess = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 30_000;
  const host = options.host ?? '127.0.0.1';
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}${readLog(dir)}`);
    // nginx opens its sockets before it writes its pid file: wait for both.
    if ((options.netns ? listensIn(options.netns, host, port) : await canConnect(port, host)) && pidIn(dir) !== undefined) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not listen on ${host}:${port} within 30 s: ${stderr}${readLog(dir)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const masterPid = pidIn(dir)!;
  return {
    dir,
    port,
    pid: masterPid,
    errorLog: () => readLog(dir),
    logs: () => fs.readdirSync(dir).filter((f) => f.endsWith('.log')).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('\n'),
    stop: async () => {
      // The master (under `ip netns exec` or a loader, our child is not always nginx itself).
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        try {
          process.kill(masterPid, signal);
        } catch {
          // gone
        }
        if (child.exitCode === null) child.kill(signal);
        const gone = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 5000))]);
        if (gone) break;
      }
    },
  };
}

function listensIn(netns: string, host: string, port: number): boolean {
  const out = spawnSync('ip', ['netns', 'exec', netns, 'ss', '-Hltn'], { encoding: 'utf8' }).stdout ?? '';
  return out.split('\n').some((line) => line.includes(`${host}:${port} `));
}

function readLog(dir: string): string {
  try {
    return fs.readFileSync(path.join(dir, 'error.log'), 'utf8');
  } catch {
    return '';
  }
}

function canConnect(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port }, () => {
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

export interface Exchange {
  /** Every application byte the server sent (after the TLS handshake). */
  bytes: Buffer;
  text: string;
  status?: number;
  /** How it ended: the server closed (or reset) the connection, or our wait ran out. */
  end: 'closed' | 'timeout' | 'tls-error';
  ms: number;
}

/**
 * Sends `data` exactly as given (over TLS unless `plain`) and collects the answer until
 * the server closes the connection or `waitMs` passes. For malformed and hostile
 * requests rawRequest() cannot write.
 */
export function rawExchange(options: { port: number; host?: string; localAddress?: string; data: string | Buffer | Array<string | Buffer>; plain?: boolean; waitMs?: number; pauseMs?: number }): Promise<Exchange> {
  return new Promise((resolve) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    const parts = Array.isArray(options.data) ? options.data : [options.data];
    let done = false;
    const finish = (end: Exchange['end']) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const bytes = Buffer.concat(chunks);
      const text = bytes.toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1];
      resolve({ bytes, text, status: status ? Number(status) : undefined, end, ms: Date.now() - started });
    };
    const send = async () => {
      for (const [i, part] of parts.entries()) {
        if (i > 0 && options.pauseMs) await new Promise((r) => setTimeout(r, options.pauseMs));
        if (socket.destroyed) return;
        socket.write(part);
      }
    };
    const base = { host: options.host ?? '127.0.0.1', port: options.port, ...(options.localAddress ? { localAddress: options.localAddress } : {}) };
    const socket: net.Socket = options.plain
      ? net.connect(base, () => void send())
      : tls.connect({ ...base, rejectUnauthorized: false, servername: 'localhost' }, () => void send());
    const timer = setTimeout(() => finish('timeout'), options.waitMs ?? 5000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (error: NodeJS.ErrnoException) => finish(error.code === 'ECONNRESET' || error.code === 'EPIPE' ? 'closed' : 'tls-error'));
    socket.on('close', () => finish('closed'));
  });
}
