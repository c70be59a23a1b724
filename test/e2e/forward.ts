// Makes the host's loopback services (the stand-ins, the egress proxy) reachable at the
// same 127.0.0.1:<port> inside a container that has a network namespace of its own:
// scripts/netns-forward.mjs listens inside and pipes to a Unix socket, this side pipes
// that socket to the host's 127.0.0.1:<port>. Nothing listens on a host address but
// loopback, and no route or firewall rule is involved.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { REPO } from '../helpers/binary.js';

const SCRIPT = path.join(REPO, 'test', 'e2e', 'scripts', 'netns-forward.mjs');

export class Forwarder {
  private child: ChildProcess;
  private servers: net.Server[] = [];
  private sockets = new Set<net.Socket>();
  private waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private ports = new Set<number>();
  private output = '';

  constructor(
    netnsPath: string,
    private readonly dir: string,
  ) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.child = spawn('nsenter', [`--net=${netnsPath}`, process.execPath, SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr!.on('data', (c) => (this.output = (this.output + c).slice(-2000)));
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const [word, port, ...rest] = line.split(' ');
      const waiter = this.waiting.get(Number(port));
      if (!waiter) return;
      this.waiting.delete(Number(port));
      if (word === 'ok') waiter.resolve();
      else waiter.reject(new Error(`forwarding port ${port} into the container: ${rest.join(' ')}`));
    });
    this.child.on('exit', (code) => {
      for (const [port, w] of this.waiting) w.reject(new Error(`the forwarder for port ${port} exited (${code}): ${this.output}`));
      this.waiting.clear();
    });
  }

  /** Makes the host's 127.0.0.1:<port> answer at 127.0.0.1:<port> inside the container. */
  async add(port: number): Promise<void> {
    if (this.ports.has(port)) return;
    this.ports.add(port);
    const socket = path.join(this.dir, `${port}.sock`);
    fs.rmSync(socket, { force: true });
    const server = net.createServer((inbound) => {
      const outbound = net.connect(port, '127.0.0.1');
      inbound.pipe(outbound).pipe(inbound);
      this.sockets.add(inbound).add(outbound);
      const close = () => {
        inbound.destroy();
        outbound.destroy();
        this.sockets.delete(inbound);
        this.sockets.delete(outbound);
      };
      inbound.on('close', close);
      inbound.on('error', close);
      outbound.on('error', close);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socket, resolve));
    this.servers.push(server);
    const ready = new Promise<void>((resolve, reject) => this.waiting.set(port, { resolve, reject }));
    this.child.stdin!.write(`${port} ${socket}\n`);
    await withTimeout(ready, 30_000, `the forwarder did not listen on port ${port} within 30 s: ${this.output}`);
  }

  /** Adds the port of every http(s)://127.0.0.1:<port> URL. */
  async addUrls(...urls: string[]): Promise<void> {
    for (const url of urls) {
      const u = new URL(url);
      if (u.hostname === '127.0.0.1' && u.port) await this.add(Number(u.port));
    }
  }

  async close(): Promise<void> {
    this.child.stdin!.end();
    const exited = new Promise<void>((resolve) => (this.child.exitCode !== null ? resolve() : this.child.once('exit', () => resolve())));
    await withTimeout(exited, 5_000, '').catch(() => this.child.kill('SIGKILL'));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
          }),
      ),
    );
    this.servers = [];
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([promise, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(timer));
}
