// One way to run a TypeScript script of this repo with the pinned Node: bundled by
// esbuild into build/, its packages left external (demo.mjs and soak.mjs use it).
import path from 'node:path';

export async function bundleScript(repo, entry, name) {
  const esbuild = await import('esbuild');
  const outfile = path.join(repo, 'build', name);
  await esbuild.build({
    entryPoints: [path.join(repo, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node26',
    packages: 'external',
    logLevel: 'warning',
  });
  return outfile;
}
