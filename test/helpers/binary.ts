import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BINARY = path.join(REPO, 'dist', 'service-deploy');
/** The pinned Node 24 (npm package), for comparisons and child scripts. */
export const NODE24 = path.join(REPO, 'node_modules', '.bin', 'node');

export function requireBinary(): string {
  if (!fs.existsSync(BINARY)) throw new Error('dist/service-deploy is missing: run `npm run build` first');
  return BINARY;
}

/** Environment for the binary without the test runner's NODE_OPTIONS and friends. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith('VITEST') || key === 'NODE_OPTIONS' || key.startsWith('SERVICE_')) continue;
    env[key] = value;
  }
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export interface RunBinaryOptions {
  env?: Record<string, string>;
  cwd?: string;
  input?: string;
  timeout?: number;
}

export function runBinary(args: string[], options: RunBinaryOptions = {}) {
  return execa(requireBinary(), args, {
    reject: false,
    extendEnv: false,
    env: options.env ?? cleanEnv(),
    cwd: options.cwd,
    input: options.input,
    timeout: options.timeout,
  });
}
