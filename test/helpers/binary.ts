import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder above this file with our package.json (also when bundled). */
export const REPO = findRepo(path.dirname(fileURLToPath(import.meta.url)));

function findRepo(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && JSON.parse(fs.readFileSync(pkg, 'utf8')).name === 'service-deploy') return dir;
    if (dir === path.dirname(dir)) throw new Error(`no service-deploy package.json above ${start}`);
  }
}
export const BINARY = path.join(REPO, 'dist', 'service-deploy');
/** The pinned Node (npm package node-linux-<arch>, package.json), for comparisons and child scripts. */
export const PINNED_NODE = path.join(REPO, 'node_modules', '.bin', 'node');

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
