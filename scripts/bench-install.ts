// Install benchmark: the no-op re-run's wall time as a ratio to `--version`, both
// measured in the same rounds (interleaved) on a sandbox server with the test
// stand-ins. Target: at most 3x.
import { execa } from 'execa';
import { BINARY } from '../test/helpers/binary.js';
import { FIRST_INSTALL, makeSandbox } from '../test/helpers/sandbox.js';
import { cleanupTempDirs } from '../test/helpers/tmp.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 15);
const sb = await makeSandbox();
try {
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  if (first.exitCode !== 0) throw new Error(`setup install failed: ${first.stderr}`);
  const env = sb.env();
  const time = async (args: string[]) => {
    const start = process.hrtime.bigint();
    const result = await execa(BINARY, args, { env, extendEnv: false, reject: false });
    if (result.exitCode !== 0) throw new Error(`${args.join(' ')}: exit ${result.exitCode}\n${result.stderr}`);
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  const version: number[] = [];
  const noop: number[] = [];
  for (let i = 0; i < rounds; i++) {
    version.push(await time(['--version']));
    noop.push(await time(['install', '--non-interactive', '--json']));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ratio = median(noop) / median(version);
  const ok = ratio <= 3;
  console.log(`${ok ? 'ok  ' : 'SLOW'} ${'no-op install re-run / --version'.padEnd(40)} ${ratio.toFixed(2).padStart(6)}x  (target <= 3x; ${median(noop).toFixed(0)} ms vs ${median(version).toFixed(1)} ms, ${rounds} rounds)`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await sb.close();
  cleanupTempDirs();
}
