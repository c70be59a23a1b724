import fs from 'node:fs';
import type { SourceMap } from 'node:module';

/**
 * Stack traces of the bundled program, mapped back to the TypeScript sources
 * (`src/cli.ts:45:10` instead of `service-deploy.cjs:2:81234`). The build writes the
 * bundle's source map next to it and embeds it in the binary as an asset; it is read
 * only here, when a stack is about to be printed, so it costs nothing at start-up.
 * Node's own SourceMap (node:module) decodes it. Frames it cannot map stay as they are.
 */
const FRAME = /(?<file>[^\s()]*service-deploy\.cjs):(?<line>\d+):(?<column>\d+)/g;

let cached: SourceMap | null | undefined;

function loadMap(file: string): SourceMap | null {
  if (cached !== undefined) return cached;
  cached = null;
  try {
    const { SourceMap: Decoder } = process.getBuiltinModule('node:module');
    const sea = process.getBuiltinModule('node:sea');
    const text = sea?.isSea() ? sea.getAsset('service-deploy.cjs.map', 'utf8') : fs.readFileSync(`${file}.map`, 'utf8');
    cached = new Decoder(JSON.parse(text));
  } catch {
    // No map (a build without one, or an unreadable file): the frames stay as they are.
  }
  return cached;
}

export function sourceMapped(stack: string): string {
  return stack.replace(FRAME, (whole, file: string, line: string, column: string) => {
    const map = loadMap(file);
    const entry = map?.findEntry(Number(line) - 1, Number(column) - 1);
    if (!entry || !('originalSource' in entry) || !entry.originalSource) return whole;
    const source = entry.originalSource.replace(/^(?:file:\/\/)?(?:\.\.\/)+/, '');
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}
