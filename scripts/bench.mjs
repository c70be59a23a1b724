#!/usr/bin/env node
// Benchmarks, reported as ratios measured in this one run (machines here are noisy).
// Each command runs N times, interleaved round by round so drift hits all alike;
// the median wall time is compared with a baseline from the same rounds.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const binary = path.join(repo, 'dist/service-deploy');
const node = path.join(repo, 'node_modules/.bin/node');
const rounds = Number(process.env.BENCH_ROUNDS ?? 25);
if (!fs.existsSync(binary)) {
  console.error('dist/service-deploy is missing: run `npm run build` first');
  process.exit(1);
}

const env = { PATH: process.env.PATH, HOME: process.env.HOME };
const cases = {
  'node -e 0': [node, ['-e', '0']],
  '--version': [binary, ['--version']],
  '--help': [binary, ['--help']],
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, [cmd, args]] of Object.entries(cases)) {
    const start = process.hrtime.bigint();
    const result = spawnSync(cmd, args, { env, stdio: ['ignore', 'ignore', 'ignore'] });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${name} exited ${result.status}`);
    times[name].push(ms);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(times['node -e 0']);

const rows = [];
const row = (what, ratio, target, detail) =>
  rows.push({ what, ratio: Number(ratio.toFixed(2)), target, ok: ratio <= target, detail });
row('--version cold start / node -e 0', median(times['--version']) / base, 1.5,
  `${median(times['--version']).toFixed(1)} ms vs ${base.toFixed(1)} ms`);
row('--help cold start / node -e 0', median(times['--help']) / base, 1.5,
  `${median(times['--help']).toFixed(1)} ms vs ${base.toFixed(1)} ms`);
const strippedFile = path.join(repo, `build/node-${process.arch}.stripped-size`);
if (fs.existsSync(strippedFile)) {
  const stripped = Number(fs.readFileSync(strippedFile, 'utf8'));
  const size = fs.statSync(binary).size;
  row('binary size / stripped node', size / stripped, 1.1, `${(size / 1e6).toFixed(1)} MB vs ${(stripped / 1e6).toFixed(1)} MB`);
}

console.log(`service-deploy benchmarks (${rounds} rounds, medians, ratios from this run)`);
for (const r of rows) console.log(`${r.ok ? 'ok  ' : 'SLOW'} ${r.what.padEnd(40)} ${String(r.ratio).padStart(6)}x  (target <= ${r.target}x; ${r.detail})`);
if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
let failed = !rows.every((r) => r.ok);

// The other benchmarks, each printing its own ratios (exit 1 when a target is missed).
const esbuild = await import('esbuild');
for (const name of ['bench-install', 'bench-ops', 'bench-download']) {
  await esbuild.build({
    entryPoints: [path.join(repo, `scripts/${name}.ts`)],
    outfile: path.join(repo, `build/${name}.mjs`),
    bundle: true, platform: 'node', format: 'esm', target: 'node26', packages: 'external', logLevel: 'warning',
  });
}
for (const script of ['build/bench-install.mjs', 'build/bench-ops.mjs', 'build/bench-download.mjs', 'scripts/bench-channel.mjs']) {
  if (!fs.existsSync(path.join(repo, script))) continue;
  console.log(`\n${script}`);
  const result = spawnSync(process.execPath, [path.join(repo, script)], { stdio: 'inherit', cwd: repo });
  if (result.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
