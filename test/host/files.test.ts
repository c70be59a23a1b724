import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Files } from '../../src/host/files.js';
import { PathMap } from '../../src/host/paths.js';
import { NODE24 } from '../helpers/binary.js';
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
      const child = execa(NODE24, [script, root, String(256 * 1024 + round * 4099)], { reject: false });
      // Kill at a different moment each round: before the first write, mid-stream, later.
      // From round 6 on, only after the child reported a finished write (a busy machine
      // may take longer to start it than the early rounds wait).
      if (round >= 6) await new Promise((resolve) => child.stdout!.once('data', resolve));
      await new Promise((resolve) => setTimeout(resolve, 5 + round * 13));
      child.kill('SIGKILL');
      await child;
      kills++;
      if (fs.existsSync(target)) expect(isWholeVersion(fs.readFileSync(target, 'utf8'))).toBe(true);
    }
    expect(kills).toBe(12);
    expect(fs.existsSync(target)).toBe(true);
  });
});
