#!/usr/bin/env node
// Writes schemas/<name>.schema.json, the published JSON Schema of every --json output,
// from the zod schemas that produce them (src/json/outputs.ts, and doctor's report in
// src/doctor/output.ts, whose fix ids come from the checks; docs/json.md).
// `--check`: write nothing, exit 1 when a committed file differs (test/json/ does the same).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(repo, 'build', 'json-schemas.mjs');
await esbuild.build({
  stdin: {
    contents: "export { OUTPUTS } from './src/json/outputs.ts'; export { doctorOutput } from './src/doctor/output.ts'; export { jsonSchemaOf } from './src/json/define.ts';",
    resolveDir: repo,
    loader: 'ts',
  },
  outfile: out,
  bundle: true, platform: 'node', format: 'esm', target: 'node26', packages: 'external', logLevel: 'warning',
});
const { OUTPUTS: defined, doctorOutput, jsonSchemaOf } = await import(pathToFileURL(out).href);
const OUTPUTS = [...defined, doctorOutput];
const dir = path.join(repo, 'schemas');
const check = process.argv.includes('--check');
const wanted = new Map(OUTPUTS.map((o) => [`${o.name}.schema.json`, `${JSON.stringify(jsonSchemaOf(o), null, 2)}\n`]));
const stale = [];
if (!check) fs.mkdirSync(dir, { recursive: true });
for (const [name, text] of wanted) {
  const file = path.join(dir, name);
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
  if (current === text) continue;
  stale.push(name);
  if (!check) fs.writeFileSync(file, text);
}
for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
  if (!name.endsWith('.schema.json') || wanted.has(name)) continue;
  stale.push(name);
  if (!check) fs.rmSync(path.join(dir, name));
}
if (check && stale.length) {
  console.error(`schemas/ is out of date (${stale.join(', ')}): run \`npm run schemas\``);
  process.exit(1);
}
console.error(check ? `schemas/: ${wanted.size} files up to date` : `schemas/: ${wanted.size} files${stale.length ? `, ${stale.length} written or removed` : ', unchanged'}`);
