import { describe } from 'vitest';
import { FLAG_CASES } from './cases/flags.js';
import { hostileCases, hostileWorld } from './harness.js';

describe('hostile input: flags, answers, answer files, the stored answers.json, commands', () => {
  hostileCases(hostileWorld(), 'flags and answers', FLAG_CASES);
});
