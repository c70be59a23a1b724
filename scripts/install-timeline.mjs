#!/usr/bin/env node
// npm run timeline -- RESULT.json [OUT.svg] [--title TEXT]: draws an install's timeline
// from its JSON result (`service-deploy install --json >RESULT.json`, or the catalog
// deploy's result.json): a bar per step from its startMs to its endMs, the critical path
// (the longest chain of the steps' needs, from this checkout's step list) marked. Writes
// OUT.svg (RESULT with .svg by default) and prints the critical path.
// npm run timeline -- --graph: prints the steps' needs as the Mermaid block of
// docs/install.md ("Where the time goes"; test/recipes.test.ts compares them).
// The TypeScript is bundled with esbuild into build/, as scripts/json-schemas.mjs does.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const fail = (message) => {
  console.error(`install-timeline: ${message}`);
  process.exit(1);
};

const out = path.join(repo, 'build', 'install-timeline.mjs');
await esbuild.build({
  stdin: {
    contents: "export { installSteps } from './src/steps/index.ts'; export { installTimeline, needsGraphMermaid, formatMs } from './src/pipeline/timeline.ts';",
    resolveDir: repo,
    loader: 'ts',
  },
  outfile: out,
  bundle: true, platform: 'node', format: 'esm', target: 'node26', packages: 'external', logLevel: 'warning',
});
const { installSteps, installTimeline, needsGraphMermaid, formatMs } = await import(pathToFileURL(out).href);

if (args.includes('--graph')) {
  process.stdout.write(needsGraphMermaid(installSteps()));
  process.exit(0);
}
const titleAt = args.indexOf('--title');
const title = titleAt >= 0 ? args[titleAt + 1] : undefined;
const files = args.filter((a, i) => !a.startsWith('--') && (titleAt < 0 || i !== titleAt + 1));
if (files.length < 1 || files.length > 2) fail('usage: npm run timeline -- RESULT.json [OUT.svg] [--title TEXT] | --graph');
const [input, output = input.replace(/(\.json)?$/, '.svg')] = files;
let result;
try {
  result = JSON.parse(fs.readFileSync(input, 'utf8'));
} catch (error) {
  fail(`${input}: not a JSON document (${error.message})`);
}
if (!Array.isArray(result?.steps)) fail(`${input}: no steps[]: not an install result (schemas/install.schema.json)`);
if (!result.steps.some((s) => s.startMs !== undefined)) fail(`${input}: no step has startMs and endMs: the result of a release before they were recorded`);
const drawn = installTimeline(result, installSteps(), title ?? `install timeline: ${path.basename(input)} (${result.ok ? 'ok' : 'failed'}, ${result.mode ?? 'apply'})`);
fs.writeFileSync(output, drawn.svg);
console.error(`wrote ${output}`);
console.log(`critical path: ${formatMs(drawn.critical.ms)}: ${drawn.critical.ids.join(' -> ')}`);
