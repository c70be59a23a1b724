import { defineConfig } from 'vitest/config';
import { budget } from './test/helpers/budget.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    // Once per run: the service stand-ins and the folder of the healthy servers (ops-sandbox.ts).
    globalSetup: ['test/global-setup.ts'],
    // Safety nets against a hang, not waits: tests wait for signals. They scale with the
    // machine's load and TEST_TIME_SCALE (test/helpers/budget.ts), so a loaded 2-core
    // machine running two suites at once is not a failure.
    testTimeout: budget(120_000),
    hookTimeout: budget(180_000),
    // Tests spawn real processes (nginx, the built binary); two cores on CI.
    pool: 'forks',
    maxWorkers: 2,
  },
});
