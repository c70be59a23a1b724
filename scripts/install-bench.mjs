#!/usr/bin/env node
// npm run bench:install: fresh installs on the e2e's booted Debian 12 servers, serial
// (`install --serial`) against concurrent (the default), alternated, BENCH_ROUNDS of each
// (default 3), each on a server of its own; the medians, the ratios to their targets,
// whether the serial and the concurrent servers end alike, and the e2e's no-op re-run,
// model change and reset on each server in its mode (test/e2e/install-bench.ts;
// docs/e2e.md, "Install bench: serial vs concurrent"). A bench, not a test: not in CI,
// not in `npm test` nor in the default `npm run test:e2e`; about 2.5 minutes per install and its re-runs on a quiet 2-core machine (5 under load)
// It holds the e2e's machine-wide run lock (E2E_LOCK_DIR: another
// one, to run beside an e2e run), prepares the machine as the e2e does
// (scripts/e2e-machine.mjs), builds dist/ when it has no complete release, bundles the
// bench with esbuild and runs it with the pinned Node. Settings: BENCH_ROUNDS,
// BENCH_SERIAL_FLAG (default: --serial when `install --help` names it), BENCH_RERUNS=0, BENCH_OUT,
// E2E_CACHE_DIR, E2E_DIST, E2E_LOCK_DIR, E2E_LOCK_WAIT=0, E2E_KEEP=1.
import { CONTAINER_TOOLS, cleanLeftovers, containersUnavailable, releaseRunLock, runBundled, takeRunLock } from './e2e-machine.mjs';

const say = (line) => process.stdout.write(`[install-bench] ${line}\n`);
function fail(reason) {
  say(`error: ${reason}`);
  process.exit(1);
}

const unavailable = containersUnavailable(CONTAINER_TOOLS, say);
if (unavailable) fail(`cannot run: ${unavailable}`);
takeRunLock(say, fail);
let code = 1;
try {
  cleanLeftovers(undefined, say);
  code = await runBundled('test/e2e/install-bench.ts', 'install-bench.mjs', say);
} finally {
  cleanLeftovers(undefined, say);
  releaseRunLock();
}
process.exit(code);
