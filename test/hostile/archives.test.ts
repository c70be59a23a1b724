import { beforeAll, describe } from 'vitest';
import { oneGiBArchive } from '../helpers/crafted-archives.js';
import { archiveCases } from './cases/archives.js';
import { hostileCases, hostileWorld, type HostileCase } from './harness.js';

// The 1 GiB entry is made once (about 1 MB of gzip) before the cases run.
const sparse: { bytes?: Buffer } = {};
beforeAll(async () => {
  sparse.bytes = await oneGiBArchive();
}, 120_000);

describe('hostile input: crafted backup archives for restore', () => {
  const cases: HostileCase[] = archiveCases();
  cases.push({
    kind: 'restore: a 1 GiB entry (a sparse file on the machine that made it)',
    args: ['restore', 'one-gib.tar.gz'],
    get inputs() {
      return { 'one-gib.tar.gz': sparse.bytes! };
    },
    mention: /big.*over the limit of 512 MiB per entry/s,
  });
  hostileCases(hostileWorld(), 'archives', cases);
});
