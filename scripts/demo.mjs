#!/usr/bin/env node
// Bundles scripts/demo.ts (it reuses the tests' sandbox helpers) and runs it with the pinned Node.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(repo, 'build/demo.mjs');
await esbuild.build({
  entryPoints: [path.join(repo, 'scripts/demo.ts')],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  packages: 'external',
  logLevel: 'warning',
});
execFileSync(process.execPath, [out], { stdio: 'inherit', cwd: repo });
