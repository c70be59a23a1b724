import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { tempDir } from '../helpers/tmp.js';

// The channel plugin's nonce store, exactly as shipped (templates/service-channel.nonce-store.js),
// under floods of distinct nonces and distinct client addresses: a store of the deployment
// must stay bounded for months (docs/operations.md, "Stores and their bounds").

interface Admission {
  ok: boolean;
  reason?: string;
}
interface Store {
  admit(input: { nonce: string; expiresAtMs: number; nowMs: number; client?: string }): Promise<Admission>;
}
const mod = (await import(pathToFileURL(path.join(REPO, 'templates/service-channel.nonce-store.js')).href)) as {
  NonceStore: new (file: string, options?: { maxEntries?: number; maxClients?: number; rateLimit?: number; rateWindowMs?: number }) => Store;
  MAX_NONCES: number;
  MAX_CLIENTS: number;
};
const { NonceStore, MAX_NONCES, MAX_CLIENTS } = mod;

/** As the plugin remembers a nonce: until its timestamp leaves the ±300 s window (+1 s). */
const REPLAY_WINDOW_MS = 301_000;
const onDisk = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as { nonces: Record<string, number>; rate: Record<string, number[]> };
/** The longest nonce the protocol accepts (NONCE_PATTERN: 16-128 of [A-Za-z0-9_-]). */
const longNonce = (i: number) => `${'n'.repeat(120)}${String(i).padStart(8, '0')}`;
/** The longest address form the plugin sees (an IPv4-mapped IPv6 address). */
const longClient = (i: number) => `0000:0000:0000:0000:0000:ffff:${String(i).padStart(9, '0').replace(/(\d{3})(\d{3})(\d{3})/, '$1.$2.$3')}`;

describe('the nonce store stays bounded', () => {
  it('half an hour of steady traffic from 600 addresses: the file holds the replay window and the last minute only, and does not grow', async () => {
    const file = path.join(tempDir(), 'nonces.json');
    const store = new NonceStore(file);
    const t0 = 1_800_000_000_000;
    const sizes: number[] = [];
    let peakNonces = 0;
    let peakClients = 0;
    // One signed request every 3 s, each from a new address, each with a new nonce.
    for (let i = 0; i < 600; i++) {
      const now = t0 + i * 3000;
      expect((await store.admit({ nonce: longNonce(i), expiresAtMs: now + REPLAY_WINDOW_MS, nowMs: now, client: longClient(i) })).ok).toBe(true);
      const data = onDisk(file);
      peakNonces = Math.max(peakNonces, Object.keys(data.nonces).length);
      peakClients = Math.max(peakClients, Object.keys(data.rate).length);
      sizes.push(fs.statSync(file).size);
    }
    // 301 s of nonces at one per 3 s, 60 s of addresses: no more, however long it runs.
    expect(peakNonces).toBe(101);
    expect(peakClients).toBe(21);
    const steady = sizes.slice(200);
    expect(Math.max(...steady) - Math.min(...steady)).toBeLessThanOrEqual(64);
    expect(sizes.at(-1)).toBe(Math.max(...steady));
  });

  it('a flood of distinct nonces and addresses within one window fills the store to its caps, is refused beyond them without growing it, and the store empties once the window has passed', async () => {
    const file = path.join(tempDir(), 'nonces.json');
    const store = new NonceStore(file, { maxEntries: 300, maxClients: 200 });
    const now = 1_800_000_000_000;
    const flood = async (from: number, count: number, client: (i: number) => string) => {
      const results: Array<string> = [];
      for (let i = from; i < from + count; i++) {
        try {
          const r = await store.admit({ nonce: longNonce(i), expiresAtMs: now + REPLAY_WINDOW_MS, nowMs: now, client: client(i) });
          results.push(r.ok ? 'ok' : r.reason!);
        } catch (error) {
          results.push((error as Error).message);
        }
      }
      return results;
    };
    // Distinct addresses: the address cap is reached first; each request beyond it is refused and not recorded.
    const byAddress = await flood(0, 260, longClient);
    expect(byAddress.filter((r) => r === 'ok')).toHaveLength(200);
    expect(new Set(byAddress.slice(200))).toEqual(new Set(['more than 200 client addresses within the rate window']));
    const full = fs.statSync(file).size;
    expect(Object.keys(onDisk(file).nonces)).toHaveLength(200);
    // Distinct nonces from addresses already known: the nonce cap (those over the rate limit still use up their nonce).
    const byNonce = await flood(1000, 150, (i) => longClient(i % 200));
    expect(byNonce.filter((r) => r === 'ok' || r === 'rate_limited')).toHaveLength(100);
    expect(new Set(byNonce.slice(100))).toEqual(new Set(['more than 300 nonces within the window']));
    const capped = onDisk(file);
    expect(Object.keys(capped.nonces)).toHaveLength(300);
    expect(Object.keys(capped.rate)).toHaveLength(200);
    expect(Object.values(capped.rate).every((times) => times.length <= 10)).toBe(true);
    expect(fs.statSync(file).size).toBeGreaterThan(full);
    const atCaps = fs.statSync(file).size;
    await flood(5000, 50, longClient);
    expect(fs.statSync(file).size).toBe(atCaps);

    // After the window: the next request is taken and the store holds just it.
    const later = now + REPLAY_WINDOW_MS + 1;
    expect((await store.admit({ nonce: longNonce(9999), expiresAtMs: later + REPLAY_WINDOW_MS, nowMs: later, client: longClient(1) })).ok).toBe(true);
    const after = onDisk(file);
    expect(Object.keys(after.nonces)).toEqual([longNonce(9999)]);
    expect(Object.keys(after.rate)).toEqual([longClient(1)]);
  });

  it('at the production caps the file stays under 24 MB (measured bytes per entry, the longest nonces and addresses)', async () => {
    // Each accepted request adds one nonce and at most one time to its address's list,
    // and a time leaves after 60 s, a nonce after 301 s or more: the times, and so the
    // addresses, never outnumber the nonces. The worst case is MAX_NONCES nonces, each
    // from its own address: measured here on 400 of them, then scaled.
    const file = path.join(tempDir(), 'nonces.json');
    const store = new NonceStore(file);
    const now = 1_800_000_000_000;
    const n = 400;
    for (let i = 0; i < n; i++) await store.admit({ nonce: longNonce(i), expiresAtMs: now + 2 * REPLAY_WINDOW_MS, nowMs: now, client: longClient(i) });
    const perRequest = fs.statSync(file).size / n;
    expect(MAX_NONCES).toBe(100_000);
    expect(MAX_CLIENTS).toBe(100_000);
    const worst = perRequest * MAX_NONCES;
    expect(worst).toBeLessThan(24 * 1024 ** 2);
  });
});
