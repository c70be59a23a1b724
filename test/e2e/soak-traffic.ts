// The soak's traffic: signed chats through the channel (nginx on the container's address,
// port 18790: knock, bearer, HMAC with a fresh nonce per attempt), from several client
// addresses of the container's network slot, each kept within the channel's limits
// (10 a minute, 3 at once per address), following a plan of portal sessions (soak.ts).
// A chat that meets a gateway restart is retried as docs/channel-protocol.md tells a
// client: after the Retry-After the server sent (502/504 carry none: 5 s, as the 503's),
// with a new nonce; it counts as failed only once its retries are used up.
import { signRequest } from '../../src/channel/protocol.js';
import { channelPost } from './harness.js';
import type { Burst, ChatRecord, Plan } from './soak.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The client addresses ("127.0.0.N": N = 2..13, the harness maps them onto the slot's
 * client addresses). An address is handed out at most every `spacingMs` and to at most
 * `inFlight` requests at once: 6.5 s keeps nginx's 10 r/m (burst 9) and the plugin's
 * "10 accepted in any 60 s" from refusing (6 s would put an 11th request on the 60 s
 * boundary); retries are requests too and wait their turn here.
 */
export class AddressPool {
  private next = new Map<string, number>();
  private busy = new Map<string, number>();

  constructor(
    readonly addresses: string[],
    private readonly spacingMs = 6_500,
    private readonly inFlight = 2,
  ) {
    for (const a of addresses) {
      this.next.set(a, 0);
      this.busy.set(a, 0);
    }
  }

  async acquire(notBefore = 0): Promise<{ address: string; release(): void }> {
    for (;;) {
      const now = Date.now();
      let best: string | undefined;
      let soonest = Infinity;
      for (const a of this.addresses) {
        if (this.busy.get(a)! >= this.inFlight) continue;
        const at = Math.max(this.next.get(a)!, notBefore);
        if (at <= now && (best === undefined || this.next.get(a)! < this.next.get(best)!)) best = a;
        soonest = Math.min(soonest, at);
      }
      if (best !== undefined) {
        const address = best;
        this.next.set(address, now + this.spacingMs);
        this.busy.set(address, this.busy.get(address)! + 1);
        let released = false;
        return {
          address,
          release: () => {
            if (released) return;
            released = true;
            this.busy.set(address, this.busy.get(address)! - 1);
          },
        };
      }
      await sleep(Math.max(20, Math.min(250, (Number.isFinite(soonest) ? soonest : now + 100) - now)));
    }
  }
}

export interface ChatOutcome extends ChatRecord {
  sessionId?: string;
  reply?: string;
  error?: string;
}

/** Statuses a client retries (docs/channel-protocol.md): rate limited, the gateway not answering or restarting, the agent unavailable. */
const RETRYABLE = new Set([429, 502, 503, 504]);
/** Connection errors while nginx itself is up (a reset during a reload): retried like a 502. */
const RETRYABLE_ERRORS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'socket hang up']);

export class ChannelClient {
  constructor(
    private readonly secrets: { token: string; knock: string },
    private readonly pool: AddressPool,
    private readonly options: { startedAt: number; retryBudgetMs?: number; timeoutMs?: number } = { startedAt: Date.now() },
  ) {}

  /** One chat: signed, retried within the budget, never counted failed before that. */
  async chat(message: string, sessionId?: string): Promise<ChatOutcome> {
    const body = JSON.stringify(sessionId ? { message, sessionId } : { message });
    const first = Date.now();
    const budget = this.options.retryBudgetMs ?? 6 * 60_000;
    const refusals: Array<number | string> = [];
    let notBefore = 0;
    for (let attempt = 1; ; attempt++) {
      const lease = await this.pool.acquire(notBefore);
      const sent = Date.now();
      // A fresh timestamp and nonce for every attempt: a retry is a new request.
      const r = await channelPost({ knock: this.secrets.knock, localAddress: lease.address, headers: signRequest({ token: this.secrets.token, body }), body, timeoutMs: this.options.timeoutMs ?? 300_000 });
      lease.release();
      const done = Date.now();
      const base = { endedAtMs: done - this.options.startedAt, totalMs: done - first, attempts: attempt, refusals };
      if (r.status === 200) {
        try {
          const json = JSON.parse(r.body ?? '') as { reply?: string; sessionId?: string };
          if (typeof json.reply === 'string' && typeof json.sessionId === 'string') return { ...base, ok: true, latencyMs: done - sent, sessionId: json.sessionId, reply: json.reply };
        } catch {
          // not JSON: a failure below
        }
        refusals.push('200 without a ChannelResponse');
        return { ...base, ok: false, error: `200 with ${String(r.body).slice(0, 200)}` };
      }
      const what = r.status ?? r.error ?? 'no answer';
      refusals.push(what);
      const retryable = r.status !== undefined ? RETRYABLE.has(r.status) : RETRYABLE_ERRORS.has(String(r.error));
      if (!retryable || Date.now() - first > budget) {
        return { ...base, ok: false, error: `${what}: ${String(r.body ?? '').slice(0, 200)}${retryable ? ` (retries used up after ${Math.round((done - first) / 1000)} s)` : ''}` };
      }
      notBefore = Date.now() + retryAfterMs(r);
    }
  }
}

/** The server's Retry-After (seconds) from the error body's status: 429 and 503 carry one, nginx's 502/504 do not (then 5 s, the 503's). */
function retryAfterMs(r: { status?: number; headers?: Record<string, string | string[] | undefined> }): number {
  const header = r.headers?.['retry-after'];
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 5_000;
}

export interface DriverProgress {
  answered: number;
  failed: number;
  sessions: number;
}

/**
 * Runs a plan's bursts with `concurrency` conversations at once: each worker takes the
 * next burst and sends its messages one after another (the next after the reply), the
 * first message of a session without a sessionId (the server starts one), the rest with
 * the one it returned. A returning session's second visit waits for its first.
 */
export class SoakDriver {
  readonly chats: ChatOutcome[] = [];
  private nextBurst = 0;
  private stopped = false;
  private pausedUntil = 0;
  private sessionIds = new Map<number, Promise<string | undefined>>();
  private sessionStarted = new Set<number>();
  private listeners: Array<(chat: ChatOutcome, progress: DriverProgress) => void> = [];

  constructor(
    private readonly plan: Plan,
    private readonly client: ChannelClient,
    private readonly concurrency = 4,
  ) {}

  get progress(): DriverProgress {
    const answered = this.chats.filter((c) => c.ok).length;
    return { answered, failed: this.chats.length - answered, sessions: this.sessionStarted.size };
  }

  onChat(listener: (chat: ChatOutcome, progress: DriverProgress) => void): void {
    this.listeners.push(listener);
  }

  /** No new message after the ones in flight (the short form's early end). */
  stop(): void {
    this.stopped = true;
  }

  async run(): Promise<void> {
    await Promise.all(Array.from({ length: this.concurrency }, () => this.worker()));
  }

  private async worker(): Promise<void> {
    while (!this.stopped && this.nextBurst < this.plan.bursts.length) {
      const burst = this.plan.bursts[this.nextBurst++]!;
      if (burst.lullBeforeMs) this.pausedUntil = Math.max(this.pausedUntil, Date.now() + burst.lullBeforeMs);
      await this.runBurst(burst);
    }
  }

  private async runBurst(burst: Burst): Promise<void> {
    let resolveId: (id: string | undefined) => void = () => undefined;
    let sessionId: string | undefined;
    if (burst.part === 1) this.sessionIds.set(burst.session, new Promise((resolve) => (resolveId = resolve)));
    else sessionId = await this.sessionIds.get(burst.session);
    this.sessionStarted.add(burst.session);
    for (const message of burst.messages) {
      if (this.stopped) break;
      while (Date.now() < this.pausedUntil && !this.stopped) await sleep(Math.min(1000, this.pausedUntil - Date.now()));
      const outcome = await this.client.chat(message, sessionId);
      // A first message that failed after its retries leaves the session without an id:
      // its next message starts one, as the portal would.
      if (outcome.ok) sessionId = outcome.sessionId;
      if (burst.part === 1) resolveId(sessionId);
      this.chats.push(outcome);
      for (const listener of this.listeners) listener(outcome, this.progress);
    }
    resolveId(sessionId);
  }
}
