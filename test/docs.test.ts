import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers/binary.js';

/** Every doc the code, the templates, the scripts, the help texts or another doc names exists. */
describe('docs named anywhere exist', () => {
  it('docs/*.md referenced from src/, templates/, scripts/, install.sh, README.md and docs/', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else files.push(full);
      }
    };
    for (const dir of ['src', 'templates', 'scripts', 'docs']) walk(path.join(REPO, dir));
    files.push(path.join(REPO, 'install.sh'), path.join(REPO, 'README.md'));
    const named = new Map<string, string[]>();
    for (const file of files) {
      for (const match of fs.readFileSync(file, 'utf8').matchAll(/\bdocs\/([A-Za-z0-9_-]+\.md)\b/g)) {
        named.set(match[1]!, [...(named.get(match[1]!) ?? []), path.relative(REPO, file)]);
      }
    }
    expect(named.size).toBeGreaterThan(5);
    const missing = [...named].filter(([doc]) => !fs.existsSync(path.join(REPO, 'docs', doc))).map(([doc, by]) => `docs/${doc} (named by ${by.join(', ')})`);
    expect(missing).toEqual([]);
    expect(named.get('components.md')).toEqual(expect.arrayContaining(['src/steps/plugins.ts']));
  });
});
