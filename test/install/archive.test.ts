import { execa } from 'execa';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import * as tar from 'tar';
import { describe, expect, it } from 'vitest';
import { inspectArchive, openArchive } from '../../src/install/archive.js';
import { BACKUP_ROOTS } from '../../src/install/backup-set.js';
import { answersJson } from '../helpers/crafted-archives.js';
import { tempDir } from '../helpers/tmp.js';

/** A small deployment tree: long names (past ustar's 100 bytes), a relative and an OpenClaw skill link. */
function tree(): string {
  const root = tempDir('sd-archive-tree-');
  const deep = path.join(root, 'root/.openclaw/workspace', 'd'.repeat(60), 'e'.repeat(60));
  fs.mkdirSync(deep, { recursive: true });
  fs.writeFileSync(path.join(deep, `${'n'.repeat(120)}.md`), 'long\n');
  fs.writeFileSync(path.join(root, 'root/.openclaw/workspace/Café-ünïcode.md'), 'utf-8 name\n');
  fs.mkdirSync(path.join(root, 'root/.openclaw/plugin-skills'));
  fs.symlinkSync('/opt/service-deploy/node/lib/node_modules/openclaw/skills/weather', path.join(root, 'root/.openclaw/plugin-skills/weather'));
  fs.symlinkSync('workspace/Café-ünïcode.md', path.join(root, 'root/.openclaw/latest'));
  fs.mkdirSync(path.join(root, 'var/lib/service-deploy'), { recursive: true });
  fs.writeFileSync(path.join(root, 'var/lib/service-deploy/answers.json'), answersJson());
  return root;
}

async function inspect(file: string) {
  const handle = await openArchive(file, path.basename(file));
  try {
    return await inspectArchive(handle, path.basename(file));
  } finally {
    await handle.close();
  }
}

describe('the strict archive reader takes what real tar writers make', () => {
  const expectTree = (manifest: Awaited<ReturnType<typeof inspect>>) => {
    const byPath = new Map(manifest.items.map((i) => [i.path, i]));
    expect(byPath.get('/root/.openclaw/plugin-skills/weather')).toMatchObject({ kind: 'symlink', target: '/opt/service-deploy/node/lib/node_modules/openclaw/skills/weather' });
    expect(byPath.get('/root/.openclaw/latest')).toMatchObject({ kind: 'symlink', target: 'workspace/Café-ünïcode.md' });
    expect(byPath.get('/root/.openclaw/workspace/Café-ünïcode.md')).toMatchObject({ kind: 'file', size: 11 });
    expect([...byPath.keys()].some((p) => p.endsWith(`${'n'.repeat(120)}.md`))).toBe(true);
    expect(manifest.answers?.customerName).toBe('Crafted Co');
    // The roots it holds, in BACKUP_ROOTS order.
    expect(manifest.roots.map((r) => r.path)).toEqual(BACKUP_ROOTS.map((r) => r.path).filter((p) => p === '/root/.openclaw' || p === '/var/lib/service-deploy'));
  };

  it('node-tar (what the backup writes)', async () => {
    const root = tree();
    const file = path.join(tempDir(), 'node-tar.tar.gz');
    await tar.c({ gzip: true, file, cwd: root, portable: true }, ['root', 'var']);
    expectTree(await inspect(file));
  });

  for (const format of ['gnu', 'posix', 'ustar']) {
    it(`GNU tar, --format=${format} (a backup repacked by hand)`, async (ctx) => {
      const root = tree();
      const file = path.join(tempDir(), `${format}.tar.gz`);
      const result = await execa('tar', [`--format=${format}`, '-czf', file, '-C', root, 'root', 'var'], { reject: false });
      // ustar cannot hold names this long: GNU tar says so and we skip that format.
      if (format === 'ustar' && result.exitCode !== 0) ctx.skip();
      expect(result.exitCode, String(result.stderr)).toBe(0);
      expectTree(await inspect(file));
    });
  }

  it('refuses GNU tar\'s own sparse format and its xattrs, naming the entry', async () => {
    const root = tree();
    const big = path.join(root, 'root/.openclaw/workspace/sparse.img');
    const handle = await fsp.open(big, 'w');
    await handle.truncate(64 * 1024 * 1024);
    await handle.close();
    const file = path.join(tempDir(), 'sparse.tar.gz');
    await execa('tar', ['--format=posix', '--sparse', '-czf', file, '-C', root, 'root', 'var']);
    await expect(inspect(file)).rejects.toThrow(/sparse\.img.*GNU\.sparse/s);
  });
});
