import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The real-server e2e (npm run test:e2e -> scripts/e2e.mjs). Not part of `npm test`:
// its include is test/**/*.test.ts, this file is server.e2e.ts.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export default defineConfig({
  root: repo,
  test: {
    include: ['test/e2e/**/*.e2e.ts'],
    testTimeout: 15 * 60_000,
    hookTimeout: 15 * 60_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    // One scenario with one container: never retried, never run twice at once.
    retry: 0,
  },
});
