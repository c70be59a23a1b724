#!/usr/bin/env node
// npm run soak: the deployment under thousands of portal chats on a booted server, the
// resource curves sampled every minute (test/e2e/soak-bench.ts; docs/operations.md,
// "Soak"). A bench, not a test: not in CI, about an hour and a half. It takes the e2e's
// machine-wide run lock (one heavy run at a time: e2e runs wait for it, and it waits for
// them), prepares the machine as the e2e does (scripts/e2e-machine.mjs), builds dist/
// when it has no complete release, bundles the bench with esbuild and runs it with the
// pinned Node. Settings: SOAK_* variables (docs/operations.md), E2E_CACHE_DIR,
// E2E_KEEP=1 (leave the server up afterwards), E2E_LOCK_WAIT=0.
import { CONTAINER_TOOLS, cleanLeftovers, containersUnavailable, releaseRunLock, runBundled, takeRunLock } from './e2e-machine.mjs';

const say = (line) => process.stdout.write(`[soak] ${line}\n`);
function fail(reason) {
  say(`error: ${reason}`);
  process.exit(1);
}

// SOAK_REPORT=FILE: only the table and plot of an earlier run's soak.json, made again.
const reportOnly = Boolean(process.env.SOAK_REPORT);
if (!reportOnly) {
  const unavailable = containersUnavailable(CONTAINER_TOOLS, say);
  if (unavailable) fail(`cannot run: ${unavailable}`);
  takeRunLock(say, fail);
}
let code = 1;
try {
  if (!reportOnly) cleanLeftovers(undefined, say);
  code = await runBundled('test/e2e/soak-bench.ts', 'soak-bench.mjs', say, { build: !reportOnly });
} finally {
  if (!reportOnly) {
    cleanLeftovers(undefined, say);
    releaseRunLock();
  }
}
process.exit(code);
