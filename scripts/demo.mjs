#!/usr/bin/env node
// Bundles scripts/demo.ts (it reuses the tests' sandbox helpers) and runs it with the pinned
// Node; its arguments (--keep) go to the demo.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleScript } from './bundle-script.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = await bundleScript(repo, 'scripts/demo.ts', 'demo.mjs');
// A signal goes on to the demo, which stops its stand-ins and removes its sandbox; this
// process then exits with its code.
const demo = spawn(process.execPath, [out, ...process.argv.slice(2)], { stdio: 'inherit', cwd: repo });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => demo.kill(signal));
demo.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
