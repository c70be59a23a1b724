// service-channel plugin: nonces seen within the replay window, kept in a small JSON
// file so a replay is refused also after a gateway restart. Each accepted nonce is
// written (temp file, fsync, rename, fsync of the folder) before the request goes on;
// expired entries are pruned on every write. One writer per process: accept() calls
// run one after another.
import { randomBytes } from "node:crypto";
import { constants as fsc } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";

export const MAX_NONCES = 100000;

export class NonceStoreError extends Error {}

export class NonceStore {
  constructor(file, options = {}) {
    this.file = file;
    this.maxEntries = options.maxEntries ?? MAX_NONCES;
    this.entries = undefined;
    this.queue = Promise.resolve();
  }

  // true: first use, now recorded on disk. false: seen before (a replay).
  accept(nonce, expiresAtMs, nowMs) {
    const run = this.queue.then(async () => {
      await this.load();
      for (const [key, expires] of this.entries) if (expires <= nowMs) this.entries.delete(key);
      if (this.entries.has(nonce)) return false;
      if (this.entries.size >= this.maxEntries) throw new NonceStoreError(`more than ${this.maxEntries} nonces within the window`);
      this.entries.set(nonce, expiresAtMs);
      try {
        await this.persist();
      } catch (error) {
        this.entries.delete(nonce);
        throw new NonceStoreError(`cannot write ${this.file}: ${error.code ?? error.message}`);
      }
      return true;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async load() {
    if (this.entries) return;
    let text;
    try {
      text = await fs.readFile(this.file, "utf8");
    } catch (error) {
      if (error.code === "ENOENT") {
        this.entries = new Map();
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
    this.entries = new Map(Object.entries(nonces).filter(([, expires]) => typeof expires === "number"));
  }

  async persist() {
    const dir = path.dirname(this.file);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const temp = path.join(dir, `.${path.basename(this.file)}.${process.pid}.${randomBytes(4).toString("hex")}`);
    const handle = await fs.open(temp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600);
    try {
      await handle.writeFile(JSON.stringify({ v: 1, nonces: Object.fromEntries(this.entries) }));
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
