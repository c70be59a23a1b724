import { describe } from 'vitest';
import { ENVIRONMENT_CASES } from './cases/environment.js';
import { hostileCases, hostileWorld } from './harness.js';

describe('hostile input: SERVICE_* environment variables', () => {
  hostileCases(hostileWorld(), 'environment', ENVIRONMENT_CASES);
});
