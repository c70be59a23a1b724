import { describe, expect, it } from 'vitest';
import { archiveCases } from './cases/archives.js';
import { ENVIRONMENT_CASES } from './cases/environment.js';
import { FLAG_CASES } from './cases/flags.js';

describe('the hostile-input suite', () => {
  it('has at least 150 distinct kinds of bad input, each named once', () => {
    const kinds = [...ENVIRONMENT_CASES, ...FLAG_CASES, ...archiveCases()].map((c) => c.kind);
    kinds.push('restore: a 1 GiB entry (a sparse file on the machine that made it)');
    expect(new Set(kinds).size).toBe(kinds.length);
    expect(kinds.length).toBeGreaterThanOrEqual(150);
    process.stdout.write(`hostile-input suite: ${kinds.length} kinds (environment ${ENVIRONMENT_CASES.length}, flags and answers ${FLAG_CASES.length}, archives ${kinds.length - ENVIRONMENT_CASES.length - FLAG_CASES.length})\n`);
  });
});
