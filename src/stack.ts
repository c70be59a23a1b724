import type { SourceMap } from 'node:module';

/**
 * Stack traces of the bundled program, mapped back to the TypeScript sources
 * (`src/cli.ts:45:10` instead of `chunks/main.js:2:81234`). The build writes a source
 * map next to each chunk and embeds it in the binary as an asset; it is read only here,
 * when a stack is about to be printed, so it costs nothing at start-up. Node's own
 * SourceMap (node:module) decodes it. Frames it cannot map stay as they are.
 */
const FRAME = /(?<file>chunks\/(?<name>[\w.-]+\.js)):(?<line>\d+):(?<column>\d+)/g;

const maps = new Map<string, SourceMap | null>();

function loadMap(name: string): SourceMap | null {
  const known = maps.get(name);
  if (known !== undefined) return known;
  let map: SourceMap | null = null;
  try {
    const { SourceMap: Decoder } = process.getBuiltinModule('node:module');
    const sea = process.getBuiltinModule('node:sea');
    // Outside the single executable (tests run the sources) there are no chunks to map.
    if (sea?.isSea()) map = new Decoder(JSON.parse(sea.getAsset(`chunks/${name}.map`, 'utf8')));
  } catch {
    // No map (a build without one): the frames stay as they are.
  }
  maps.set(name, map);
  return map;
}

export function sourceMapped(stack: string): string {
  return stack.replace(FRAME, (whole, _file: string, name: string, line: string, column: string) => {
    const map = loadMap(name);
    const entry = map?.findEntry(Number(line) - 1, Number(column) - 1);
    if (!entry || !('originalSource' in entry) || !entry.originalSource) return whole;
    const source = entry.originalSource.replace(/^(?:file:\/\/)?(?:\.\.\/)+/, '');
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}
