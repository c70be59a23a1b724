// Operations benchmarks, as ratios to `service-deploy --version` measured in the same run:
//   doctor on a healthy sandbox   target <= 4x
//   a no-op guard                 target <= 2x
// The sandbox is the tests' healthy deployed server (test/helpers/ops-sandbox.ts: a
// SERVICE_DEPLOY_ROOT folder made by the install, the stand-in commands on PATH, a real
// gateway process); `doctor` must pass on it and `guard` must be a no-op before anything
// is timed, and no timed guard may restart the gateway.
// Usage: node build/bench-ops.mjs [--json]   (BENCH_ROUNDS, default 15)
import { execa } from 'execa';
import { BINARY } from '../test/helpers/binary.js';
import { makeHealthySandbox, startHealthyServers } from '../test/helpers/ops-sandbox.js';
import { cleanupTempDirs } from '../test/helpers/tmp.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 15);
const run = await startHealthyServers();
const sb = await makeHealthySandbox({ servers: run.servers });
try {
  const env = sb.env();
  const sd = (args: string[]) => execa(BINARY, args, { env, extendEnv: false, reject: false });
  const check = await sd(['doctor', '--json']);
  const report = JSON.parse(String(check.stdout));
  // Healthy: every check passes, or is skipped for an option not chosen (a backup schedule).
  const bad = report.checks.filter((c: { status: string }) => c.status !== 'pass' && c.status !== 'skip');
  if (!report.ok || bad.length > 0) {
    throw new Error(`the bench sandbox is not healthy:\n${bad.map((c: { id: string; status: string; message: string }) => `  ${c.id}: ${c.status} ${c.message}`).join('\n')}`);
  }
  const noop = await sd(['guard', '--json']);
  if (noop.exitCode !== 0 || JSON.parse(String(noop.stdout)).changed) throw new Error(`guard on the healthy sandbox was not a no-op:\n${noop.stdout}\n${noop.stderr}`);
  const restarts = () => sb.calls('systemctl').filter((c) => c.args.includes('restart')).length;
  const setupRestarts = restarts();

  const cases: Record<string, string[]> = { '--version': ['--version'], doctor: ['doctor'], 'guard (no-op)': ['guard'] };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, args] of Object.entries(cases)) {
      const start = process.hrtime.bigint();
      const result = await sd(args);
      times[name]!.push(Number(process.hrtime.bigint() - start) / 1e6);
      if (result.exitCode !== 0) throw new Error(`${args.join(' ')}: exit ${result.exitCode}\n${result.stdout}\n${result.stderr}`);
    }
  }
  if (restarts() > setupRestarts) throw new Error(`a no-op guard restarted the gateway (${restarts() - setupRestarts} restarts logged)`);

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(times['--version']!);
  const rows = ([
    ['doctor (healthy) / --version', median(times.doctor!), 4],
    ['guard (no-op) / --version', median(times['guard (no-op)']!), 2],
  ] as const).map(([what, ms, target]) => ({ what, ratio: Number((ms / base).toFixed(2)), target, ok: ms / base <= target, detail: `${ms.toFixed(1)} ms vs ${base.toFixed(1)} ms` }));
  console.log(`service-deploy operations benchmarks (${rounds} rounds, medians, ratios from this run)`);
  for (const r of rows) console.log(`${r.ok ? 'ok  ' : 'SLOW'} ${r.what.padEnd(40)} ${String(r.ratio).padStart(6)}x  (target <= ${r.target}x; ${r.detail})`);
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
  process.exitCode = rows.every((r) => r.ok) ? 0 : 1;
} finally {
  await sb.close();
  await run.close();
  cleanupTempDirs();
}
