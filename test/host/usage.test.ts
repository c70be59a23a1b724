import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PathMap } from '../../src/host/paths.js';
import { diskUsage, diskUsageOf, filesystemSize } from '../../src/host/usage.js';
import { tempDir } from '../helpers/tmp.js';

describe('diskUsage: what a store takes, as du counts it, with a bounded walk', () => {
  const root = () => {
    const dir = tempDir();
    return { dir, paths: new PathMap(dir), put: (p: string, bytes: number) => {
      fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      fs.writeFileSync(path.join(dir, p), 'x'.repeat(bytes));
    } };
  };

  it('counts allocated blocks: a sparse file takes almost nothing, a written one its size; a missing path nothing', () => {
    const { dir, paths, put } = root();
    put('/data/written', 64 * 1024);
    fs.closeSync(fs.openSync(path.join(dir, 'data/sparse'), 'w'));
    fs.truncateSync(path.join(dir, 'data/sparse'), 1024 ** 3);
    expect(diskUsage(paths, '/data/written').bytes).toBeGreaterThanOrEqual(64 * 1024);
    expect(diskUsage(paths, '/data/sparse').bytes).toBeLessThan(64 * 1024);
    expect(diskUsage(paths, '/nothing/here')).toEqual({ bytes: 0, files: 0, truncated: false });
  });

  it('walks folders only as deep as asked and never follows a symbolic link', () => {
    const { dir, paths, put } = root();
    put('/store/a', 8192);
    put('/store/sub/b', 8192);
    put('/elsewhere/big', 256 * 1024);
    fs.symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'store/link'));
    expect(diskUsage(paths, '/store', { depth: 0, maxEntries: 100 }).files).toBe(0);
    expect(diskUsage(paths, '/store', { depth: 1, maxEntries: 100 })).toMatchObject({ files: 1, truncated: false });
    const deep = diskUsage(paths, '/store', { depth: 2, maxEntries: 100 });
    expect(deep).toMatchObject({ files: 2, truncated: false });
    expect(deep.bytes).toBeLessThan(64 * 1024);
    expect(diskUsageOf(paths, ['/store/a', '/store/sub/b']).files).toBe(2);
  });

  it('stops at its entry limit and says the sum is a lower bound', () => {
    const { paths, put } = root();
    for (let i = 0; i < 50; i++) put(`/many/f${i}`, 10);
    const limited = diskUsage(paths, '/many', { depth: 1, maxEntries: 20 });
    expect(limited.truncated).toBe(true);
    expect(limited.files).toBeLessThan(20);
    expect(diskUsage(paths, '/many', { depth: 1, maxEntries: 51 })).toMatchObject({ files: 50, truncated: false });
  });

  it('filesystemSize is the size of the filesystem holding the path', () => {
    const { paths } = root();
    const size = filesystemSize(paths, '/');
    const stats = fs.statfsSync('/tmp');
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThanOrEqual(stats.blocks * stats.bsize * 2 + 1);
  });
});
