// A Chrome DevTools Protocol client over `--remote-debugging-pipe` (fd 3: commands in,
// fd 4: answers and events out, each message JSON ended by a NUL byte). No port, no
// WebSocket, no browser download: it drives whatever Chromium binary it is given (the
// one the deployment installs for its agent, test/e2e/browser-device.ts). Hand-written
// rather than playwright-core: the few calls the e2e makes (a tab, a navigation, a key
// typed, the page's storage, the WebSocket frames) are a screen of code, and the
// lockfile stays as it is.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface CdpEvent {
  method: string;
  params: Json;
  sessionId?: string;
}

export class Cdp {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void; method: string }>();
  private readonly listeners = new Set<(event: CdpEvent) => void>();
  private buffer = '';
  private stderrTail = '';
  readonly exited: Promise<number | null>;
  readonly child: ChildProcess;

  private constructor(child: ChildProcess) {
    this.child = child;
    const out = child.stdio[4] as Readable;
    out.setEncoding('utf8');
    out.on('data', (chunk: string) => this.receive(chunk));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (c: string) => (this.stderrTail = (this.stderrTail + c).slice(-4000)));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    void this.exited.then((code) => {
      for (const [, p] of this.pending) p.reject(new Error(`the browser exited (${code}) before answering ${p.method}: ${this.stderrTail.slice(-1500)}`));
      this.pending.clear();
    });
  }

  /** Starts `command ...args --remote-debugging-pipe` and waits until it answers. */
  static async launch(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Cdp> {
    const child = spawn(command, [...args, '--remote-debugging-pipe'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: options.env ?? process.env });
    const cdp = new Cdp(child);
    try {
      await cdp.send('Browser.getVersion', {}, undefined, options.timeoutMs ?? 60_000);
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
    return cdp;
  }

  /** What the browser printed last on stderr (for failure messages). */
  get stderr(): string {
    return this.stderrTail;
  }

  send(method: string, params: Json = {}, sessionId?: string, timeoutMs = 60_000): Promise<Json> {
    const id = this.nextId++;
    const message = JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer from the browser within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      (this.child.stdio[3] as Writable).write(`${message}\0`);
    });
  }

  /** Every event until the returned function is called. */
  on(listener: (event: CdpEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Asks the browser to close, then waits for it to exit (killed after the budget). */
  async close(timeoutMs = 15_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.send('Browser.close', {}, undefined, timeoutMs).catch(() => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    for (let end = this.buffer.indexOf('\0'); end >= 0; end = this.buffer.indexOf('\0')) {
      const text = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 1);
      const message = JSON.parse(text) as Json;
      if (typeof message.id === 'number') {
        const p = this.pending.get(message.id);
        if (!p) continue;
        this.pending.delete(message.id);
        if (message.error) p.reject(new Error(`${p.method}: ${message.error.message}${message.error.data ? ` (${message.error.data})` : ''}`));
        else p.resolve(message.result);
      } else if (typeof message.method === 'string') {
        for (const listener of this.listeners) listener({ method: message.method, params: message.params, sessionId: message.sessionId });
      }
    }
  }
}

/** One tab of the browser, attached in flat mode (its commands carry its session id). */
export class Tab {
  readonly cdp: Cdp;
  readonly targetId: string;
  readonly sessionId: string;

  private constructor(cdp: Cdp, targetId: string, sessionId: string) {
    this.cdp = cdp;
    this.targetId = targetId;
    this.sessionId = sessionId;
  }

  /** A new tab; in `browserContextId` (Target.createBrowserContext), storage apart from the others'. */
  static async open(cdp: Cdp, browserContextId?: string): Promise<Tab> {
    const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank', ...(browserContextId ? { browserContextId } : {}) });
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const tab = new Tab(cdp, targetId, sessionId);
    await tab.send('Page.enable');
    await tab.send('Runtime.enable');
    return tab;
  }

  send(method: string, params: Json = {}, timeoutMs?: number): Promise<Json> {
    return this.cdp.send(method, params, this.sessionId, timeoutMs);
  }

  /** This tab's events. */
  on(listener: (event: CdpEvent) => void): () => void {
    return this.cdp.on((event) => event.sessionId === this.sessionId && listener(event));
  }

  /** The value of a page expression (awaited when it is a promise); page exceptions are thrown. */
  async evaluate<T = Json>(expression: string): Promise<T> {
    const r = await this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  /** Polls a page expression until it is truthy; returns its value. */
  async waitFor<T = Json>(expression: string, what: string, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
      try {
        const value = await this.evaluate<T>(expression);
        if (value) return value;
        last = value;
      } catch (error) {
        last = (error as Error).message; // a navigation in between: try again
      }
      if (Date.now() > deadline) throw new Error(`waited ${Math.round(timeoutMs / 1000)} s for ${what}; last: ${JSON.stringify(last)?.slice(0, 500)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** Navigates and waits for the load event. */
  async goto(url: string, timeoutMs = 60_000): Promise<void> {
    const loaded = new Promise<void>((resolve) => {
      const off = this.on((e) => e.method === 'Page.loadEventFired' && (off(), resolve()));
    });
    const r = await this.send('Page.navigate', { url });
    if (r.errorText) throw new Error(`navigating to ${url}: ${r.errorText}`);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([loaded, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${url} did not load within ${timeoutMs / 1000} s`)), timeoutMs)))]).finally(() => clearTimeout(timer));
  }

  async close(): Promise<void> {
    await this.cdp.send('Target.closeTarget', { targetId: this.targetId });
  }
}
