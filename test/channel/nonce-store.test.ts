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
