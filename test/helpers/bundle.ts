import * as esbuild from 'esbuild';
import path from 'node:path';
import { REPO } from './binary.js';
import { tempDir } from './tmp.js';

/** Bundles a TypeScript entry into one CommonJS file runnable by the pinned Node, for child processes. */
export async function bundleScript(entry: string): Promise<string> {
  const outfile = path.join(tempDir('sd-bundle-'), `${path.basename(entry, '.ts')}.cjs`);
  await esbuild.build({
    entryPoints: [path.resolve(REPO, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node26',
    logLevel: 'error',
    banner: { js: 'var __import_meta_url = require("node:url").pathToFileURL(__filename).href;' },
    define: { 'import.meta.url': '__import_meta_url' },
  });
  return outfile;
}
