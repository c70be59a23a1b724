import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { tempDir } from '../helpers/tmp.js';

interface Store {
  accept(nonce: string, expiresAtMs: number, nowMs: number): Promise<boolean>;
}
// The plugin's nonce store, exactly as shipped (templates/service-channel.nonce-store.js).
const { NonceStore } = (await import(pathToFileURL(path.join(REPO, 'templates/service-channel.nonce-store.js')).href)) as {
  NonceStore: new (file: string, options?: { maxEntries?: number }) => Store;
};

describe('plugin nonce store', () => {
  it('accepts a nonce once, also for a new store on the same file (a restart), in a 0600 file', async () => {
    const file = path.join(tempDir(), 'service-channel', 'nonces.json');
    const a = new NonceStore(file);
    expect(await a.accept('n-0000000000000001', 10_000, 1_000)).toBe(true);
    expect(await a.accept('n-0000000000000001', 10_000, 2_000)).toBe(false);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    const b = new NonceStore(file);
    expect(await b.accept('n-0000000000000001', 10_000, 3_000)).toBe(false);
    expect(await b.accept('n-0000000000000002', 10_000, 3_000)).toBe(true);
  });

  it('prunes expired nonces on write', async () => {
    const file = path.join(tempDir(), 'nonces.json');
    const store = new NonceStore(file);
    await store.accept('old-0000000000000', 5_000, 1_000);
    await store.accept('new-0000000000000', 20_000, 6_000);
    expect(Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).nonces)).toEqual(['new-0000000000000']);
  });

  it('concurrent requests with the same nonce: exactly one wins', async () => {
    const store = new NonceStore(path.join(tempDir(), 'nonces.json'));
    const results = await Promise.all(Array.from({ length: 20 }, () => store.accept('same-000000000000', 10_000, 1_000)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('fails closed on a corrupt file and on a full store', async () => {
    const file = path.join(tempDir(), 'nonces.json');
    fs.writeFileSync(file, '{not json');
    await expect(new NonceStore(file).accept('x-00000000000000', 10_000, 1_000)).rejects.toThrow(/not valid JSON/);
    const small = new NonceStore(path.join(tempDir(), 'nonces.json'), { maxEntries: 2 });
    await small.accept('a-00000000000000', 10_000, 1_000);
    await small.accept('b-00000000000000', 10_000, 1_000);
    await expect(small.accept('c-00000000000000', 10_000, 1_000)).rejects.toThrow(/more than 2/);
  });
});

interface Admitting {
  admit(input: { nonce: string; expiresAtMs: number; nowMs: number; client?: string }): Promise<{ ok: true } | { ok: false; reason: string; retryAfterSeconds?: number }>;
}
const Admit = NonceStore as unknown as new (file: string, options?: { rateLimit?: number; rateWindowMs?: number; maxClients?: number }) => Admitting;

describe('plugin rate window (same store)', () => {
  const nonce = (i: number) => `nonce-${String(i).padStart(12, '0')}`;

  it('at most 10 per client in any 60 s (a sliding window, bounds included), other clients unaffected; the refused request uses up its nonce', async () => {
    const store = new Admit(path.join(tempDir(), 'nonces.json'));
    const t0 = 1_000_000;
    for (let i = 0; i < 10; i++) expect(await store.admit({ nonce: nonce(i), expiresAtMs: t0 + 400_000, nowMs: t0 + i * 1000, client: '198.51.100.1' })).toEqual({ ok: true });
    const refused = await store.admit({ nonce: nonce(10), expiresAtMs: t0 + 400_000, nowMs: t0 + 30_000, client: '198.51.100.1' });
    expect(refused).toEqual({ ok: false, reason: 'rate_limited', retryAfterSeconds: 31 });
    expect(await store.admit({ nonce: nonce(10), expiresAtMs: t0 + 400_000, nowMs: t0 + 30_001, client: '198.51.100.2' })).toEqual({ ok: false, reason: 'replayed' });
    expect(await store.admit({ nonce: nonce(11), expiresAtMs: t0 + 400_000, nowMs: t0 + 30_001, client: '198.51.100.2' })).toEqual({ ok: true });
    // The first one leaves the window only after 60 s have fully passed (t0 + 60 000 still counts).
    expect((await store.admit({ nonce: nonce(12), expiresAtMs: t0 + 400_000, nowMs: t0 + 60_000, client: '198.51.100.1' })).ok).toBe(false);
    expect(await store.admit({ nonce: nonce(13), expiresAtMs: t0 + 400_000, nowMs: t0 + 60_001, client: '198.51.100.1' })).toEqual({ ok: true });
    expect((await store.admit({ nonce: nonce(14), expiresAtMs: t0 + 400_000, nowMs: t0 + 60_002, client: '198.51.100.1' })).ok).toBe(false);
  });

  it('every 0.5 s for 59 s from one client: 10 accepted (the measurement of issue 18, without nginx)', async () => {
    const store = new Admit(path.join(tempDir(), 'nonces.json'));
    let accepted = 0;
    for (let i = 0; i < 118; i++) if ((await store.admit({ nonce: nonce(i), expiresAtMs: 10_000_000, nowMs: 5_000_000 + i * 500, client: '203.0.113.5' })).ok) accepted++;
    expect(accepted).toBe(10);
  });

  it('survives a restart (a new store on the same file), 0600', async () => {
    const file = path.join(tempDir(), 'state', 'nonces.json');
    const a = new Admit(file);
    for (let i = 0; i < 10; i++) await a.admit({ nonce: nonce(i), expiresAtMs: 400_000, nowMs: 1000 + i, client: '198.51.100.9' });
    const b = new Admit(file);
    expect(await b.admit({ nonce: nonce(99), expiresAtMs: 400_000, nowMs: 2000, client: '198.51.100.9' })).toMatchObject({ ok: false, reason: 'rate_limited' });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).rate['198.51.100.9']).toHaveLength(10);
  });

  it('forgets a client whose requests left the window; fails closed past maxClients', async () => {
    const file = path.join(tempDir(), 'nonces.json');
    const store = new Admit(file, { maxClients: 2 });
    await store.admit({ nonce: nonce(1), expiresAtMs: 400_000, nowMs: 1000, client: 'a' });
    await store.admit({ nonce: nonce(2), expiresAtMs: 400_000, nowMs: 1000, client: 'b' });
    await expect(store.admit({ nonce: nonce(3), expiresAtMs: 400_000, nowMs: 1000, client: 'c' })).rejects.toThrow(/more than 2 client addresses/);
    expect((await store.admit({ nonce: nonce(4), expiresAtMs: 400_000, nowMs: 70_000, client: 'c' })).ok).toBe(true);
    expect(Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).rate)).toEqual(['c']);
  });
});
