import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers/binary.js';

/**
 * The layers of src/ (docs/architecture.md), top first. A file may import files of its
 * own layer or of any layer below it, never above. Peers within a layer are held to
 * "no cycle between folders" below.
 */
const LAYERS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['entry', ['main.ts', 'cli.ts', 'bare.ts']],
  ['commands', ['commands/']],
  ['orchestration', ['install/', 'doctor/', 'ops/']],
  ['enforcement', ['guard/']],
  ['steps', ['steps/']],
  ['pipeline', ['pipeline/']],
  ['domain', ['answers/', 'config/', 'runtime/', 'channel/', 'partner/', 'render/']],
  ['host', ['host/']],
  ['foundation', ['profile.ts', 'profile-values.ts', 'components.ts', 'assets.ts', 'layout.ts', 'errors.ts', 'output.ts', 'version.ts', 'input.ts', 'environment.ts', 'stack.ts', 'zod.ts', 'json/']],
];

/** Folders that are reached only through their index.ts (one door). */
const ONE_DOOR = ['answers/'];

const SRC = path.join(REPO, 'src');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

interface Edge {
  from: string;
  to: string;
}

function sourceFiles(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [path.relative(SRC, full)] : [];
  });
}

/** Every import of one file that names another file of src/ (type-only imports included). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(SRC, file), 'utf8');
  const out: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]!;
    if (!spec.startsWith('.')) continue;
    const target = path.relative(SRC, path.resolve(path.dirname(path.join(SRC, file)), spec)).replace(/\.js$/, '.ts');
    out.push(target);
  }
  return out;
}

function layerOf(file: string): number {
  const index = LAYERS.findIndex(([, places]) => places.some((p) => (p.endsWith('/') ? file.startsWith(p) : file === p)));
  if (index < 0) throw new Error(`src/${file} belongs to no layer: add its folder to LAYERS and docs/architecture.md`);
  return index;
}

/** Top-level folder of a file ("steps"), or the file itself when it sits in src/ directly. */
function folderOf(file: string): string {
  return file.includes('/') ? file.slice(0, file.indexOf('/')) : file;
}

/** Strongly connected components with more than one member (or a self-loop): the import cycles. */
function cycles(nodes: Iterable<string>, edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (next.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return found;
}

const files = sourceFiles();
const edges: Edge[] = files.flatMap((from) => importsOf(from).map((to) => ({ from, to })));

describe('architecture: data flows one way (docs/architecture.md)', () => {
  it('reads a real import graph', () => {
    expect(files.length).toBeGreaterThan(80);
    expect(edges.length).toBeGreaterThan(200);
    for (const e of edges) expect(files, `src/${e.from} imports src/${e.to}, which does not exist`).toContain(e.to);
  });

  it('every file sits in a layer, and no import runs up a layer', () => {
    const upward = edges
      .filter((e) => layerOf(e.to) < layerOf(e.from))
      .map((e) => `src/${e.from} (${LAYERS[layerOf(e.from)]![0]}) imports src/${e.to} (${LAYERS[layerOf(e.to)]![0]})`);
    expect(upward).toEqual([]);
  });

  it('has no import cycle between files', () => {
    expect(cycles(files, edges)).toEqual([]);
  });

  it('has no import cycle between top-level folders', () => {
    const folderEdges = edges.map((e) => ({ from: folderOf(e.from), to: folderOf(e.to) })).filter((e) => e.from !== e.to);
    expect(cycles(new Set(files.map(folderOf)), folderEdges)).toEqual([]);
  });

  it('reaches one-door folders only through their index.ts', () => {
    const around = edges
      .filter((e) => ONE_DOOR.some((door) => e.to.startsWith(door) && !e.from.startsWith(door) && e.to !== `${door}index.ts`))
      .map((e) => `src/${e.from} imports src/${e.to}`);
    expect(around).toEqual([]);
  });

  it('finds a planted upward import and a planted cycle (the checks can fail)', () => {
    const planted = [...edges, { from: 'host/files.ts', to: 'steps/index.ts' }];
    expect(planted.some((e) => layerOf(e.to) < layerOf(e.from))).toBe(true);
    expect(cycles(['a', 'b', 'c'], [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'a' }])).toEqual([['a', 'b', 'c']]);
  });
});
