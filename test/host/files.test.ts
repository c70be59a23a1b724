import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Files } from '../../src/host/files.js';
import { PathMap } from '../../src/host/paths.js';
import { PINNED_NODE } from '../helpers/binary.js';
import { waitUntil } from '../helpers/budget.js';
import { bundleScript } from '../helpers/bundle.js';
import { tempDir } from '../helpers/tmp.js';

/** A file written by the atomic-writer fixture is whole when its trailer names its own version. */
function isWholeVersion(text: string): boolean {
  const match = /^v(\d+):[\s\S]*\|end v(\d+)\n$/.exec(text);
  return match !== null && match[1] === match[2];
}

describe('Files (sandbox root)', () => {
  it('maps absolute program paths under SERVICE_DEPLOY_ROOT', async () => {
    const root = tempDir();
    const files = new Files(new PathMap(root));
    await files.write('/etc/x/y.conf', 'hello\n', { mode: 0o640 });
    expect(fs.readFileSync(path.join(root, 'etc/x/y.conf'), 'utf8')).toBe('hello\n');
    expect((await files.stat('/etc/x/y.conf'))?.mode).toBe(0o640);
    expect(await files.read('/etc/x/missing')).toBeUndefined();
    expect(() => files.real('relative/path')).toThrow(/absolute/);
  });

  it('sets the final mode even when it is wider than the 0600 temp file, and leaves no temp file', async () => {
    const root = tempDir();
    const files = new Files(new PathMap(root));
    await files.write('/a/b', 'one', { mode: 0o644 });
    await files.write('/a/b', 'two', { mode: 0o600 });
    expect(fs.statSync(path.join(root, 'a/b')).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.join(root, 'a'))).toEqual(['b']);
  });

  it('leaves the old or the new file, never a mix, when killed at any point (kill -9)', async () => {
    const script = await bundleScript('test/fixtures/atomic-writer.ts');
    const root = tempDir();
    const target = path.join(root, 'etc/app/config.txt');
    let kills = 0;
    for (let round = 0; round < 12; round++) {
      const child = execa(PINNED_NODE, [script, root, String(256 * 1024 + round * 4099)], { reject: false, buffer: false });
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      // The kill window opens when the writer says "ready" (a busy machine may take seconds
      // to start Node); then kill after a different number of finished writes each round
      // (0 = before the first one completes), plus a varying sub-write delay.
      const after = round % 4;
      await waitUntil(`the writer to say ready and finish ${after} write(s) (round ${round})`, () => {
        const lines = out.split('\n').filter(Boolean);
        return lines[0] === 'ready' && lines.length - 1 >= after;
      }, { budgetMs: 60_000, intervalMs: 1, lastSeen: () => JSON.stringify(out.slice(-80)) });
      if (round % 3 !== 0) await new Promise((resolve) => setImmediate(resolve));
      child.kill('SIGKILL');
      await child;
      kills++;
      if (fs.existsSync(target)) expect(isWholeVersion(fs.readFileSync(target, 'utf8'))).toBe(true);
    }
    expect(kills).toBe(12);
    // Rounds that waited for a finished write must have left a whole file.
    expect(fs.existsSync(target)).toBe(true);
  });
});
