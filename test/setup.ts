import { afterAll } from 'vitest';
import { cleanupTempDirs } from './helpers/tmp.js';

afterAll(cleanupTempDirs);
