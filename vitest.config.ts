import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests spawn real processes (nginx, the built binary); two cores on CI.
    pool: 'forks',
    maxWorkers: 2,
  },
});
