// service-channel plugin: the durable state of the channel, in one small JSON file so
// it survives a gateway restart:
//   - nonces seen within the replay window (a replay is refused);
//   - per client address, the times of the requests accepted in the last rate window
//     (at most `rateLimit` in any `rateWindowMs`, exactly: a sliding window, not a bucket).
// Each accepted request is written (temp file, fsync, rename, fsync of the folder)
// before it goes on; expired entries are pruned on every write. One writer per
// process: calls run one after another.
import { randomBytes } from "node:crypto";
import { constants as fsc } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";

export const MAX_NONCES = 100000;
export const MAX_CLIENTS = 100000;

export class NonceStoreError extends Error {}

export class NonceStore {
  constructor(file, options = {}) {
    this.file = file;
    this.maxEntries = options.maxEntries ?? MAX_NONCES;
    this.maxClients = options.maxClients ?? MAX_CLIENTS;
    this.rateLimit = options.rateLimit ?? 10;
    this.rateWindowMs = options.rateWindowMs ?? 60000;
    this.entries = undefined;
    this.rate = undefined;
    this.queue = Promise.resolve();
  }

  // true: first use, now recorded on disk. false: seen before (a replay).
  async accept(nonce, expiresAtMs, nowMs) {
    return (await this.admit({ nonce, expiresAtMs, nowMs })).ok;
  }

  // One request that passed the signature: its nonce must be new and, when `client` is
  // given, the client must have fewer than `rateLimit` accepted requests in the last
  // `rateWindowMs`. Returns { ok: true } (recorded on disk), { ok: false, reason:
  // "replayed" } or { ok: false, reason: "rate_limited", retryAfterSeconds }. A request
  // refused for its rate still uses up its nonce (recorded): the client signs anew.
  admit({ nonce, expiresAtMs, nowMs, client }) {
    const run = this.queue.then(async () => {
      await this.load();
      this.prune(nowMs);
      if (this.entries.has(nonce)) return { ok: false, reason: "replayed" };
      if (this.entries.size >= this.maxEntries) throw new NonceStoreError(`more than ${this.maxEntries} nonces within the window`);
      const times = client === undefined ? undefined : this.rate.get(client) ?? [];
      const limited = times !== undefined && times.length >= this.rateLimit;
      if (times !== undefined && !this.rate.has(client) && this.rate.size >= this.maxClients) {
        throw new NonceStoreError(`more than ${this.maxClients} client addresses within the rate window`);
      }
      this.entries.set(nonce, expiresAtMs);
      if (times !== undefined && !limited) this.rate.set(client, [...times, nowMs]);
      try {
        await this.persist();
      } catch (error) {
        this.entries.delete(nonce);
        if (times !== undefined) {
          if (times.length === 0) this.rate.delete(client);
          else this.rate.set(client, times);
        }
        throw new NonceStoreError(`cannot write ${this.file}: ${error.code ?? error.message}`);
      }
      if (limited) return { ok: false, reason: "rate_limited", retryAfterSeconds: Math.floor((times[0] + this.rateWindowMs - nowMs) / 1000) + 1 };
      return { ok: true };
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  prune(nowMs) {
    for (const [key, expires] of this.entries) if (expires <= nowMs) this.entries.delete(key);
    for (const [client, times] of this.rate) {
      // Kept while t >= now - window: any closed interval of rateWindowMs holds at most rateLimit.
      const live = times.filter((t) => t >= nowMs - this.rateWindowMs);
      if (live.length === 0) this.rate.delete(client);
      else if (live.length !== times.length) this.rate.set(client, live);
    }
  }

  async load() {
    if (this.entries) return;
    let text;
    try {
      text = await fs.readFile(this.file, "utf8");
    } catch (error) {
      if (error.code === "ENOENT") {
        this.entries = new Map();
        this.rate = new Map();
        return;
      }
      throw new NonceStoreError(`cannot read ${this.file}: ${error.code ?? error.message}`);
    }
    let data;
    try {
      data = JSON.parse(text);
    } catch {
      // Fail closed: accepting requests with a forgotten nonce list would allow replays.
      throw new NonceStoreError(`${this.file} is not valid JSON; after 5 minutes none of its nonces matter: move it aside then to reset it`);
    }
    const nonces = data && typeof data.nonces === "object" && data.nonces ? data.nonces : {};
    const rate = data && typeof data.rate === "object" && data.rate ? data.rate : {};
    this.entries = new Map(Object.entries(nonces).filter(([, expires]) => typeof expires === "number"));
    this.rate = new Map(
      Object.entries(rate)
        .filter(([, times]) => Array.isArray(times))
        .map(([client, times]) => [client, times.filter((t) => typeof t === "number").sort((a, b) => a - b)]),
    );
  }

  async persist() {
    const dir = path.dirname(this.file);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const temp = path.join(dir, `.${path.basename(this.file)}.${process.pid}.${randomBytes(4).toString("hex")}`);
    const handle = await fs.open(temp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600);
    try {
      await handle.writeFile(JSON.stringify({ v: 1, nonces: Object.fromEntries(this.entries), rate: Object.fromEntries(this.rate) }));
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await fs.rename(temp, this.file);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw error;
    }
    const dirHandle = await fs.open(dir, "r");
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  }
}
