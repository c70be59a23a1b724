import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BARE_COMMANDS } from '../src/bare.js';
import { BINARY, REPO } from './helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from './helpers/sandbox.js';

let sb: Sandbox;
beforeAll(async () => {
  sb = await makeSandbox();
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
}, 120_000);
afterAll(async () => sb.close());

const run = (args: string[]) => execa(BINARY, args, { env: sb.env(), extendEnv: false, reject: false });
/** Durations, times and the machine's free disk space differ from run to run; nothing else may. */
const stable = (text: string) =>
  text
    .replace(/\d+ min ago/g, 'N min ago')
    .replace(/"durationMs": \d+/g, '"durationMs": N')
    .replace(/\(\d+ ms\)/g, '(N ms)')
    .replace(/[\d.]+ GiB free/g, 'N GiB free');

describe('bare commands (no flag, no argument) run without the CLI parser, exactly as through it', () => {
  it('main.ts sends exactly the bare commands of bare.ts there', () => {
    const main = fs.readFileSync(path.join(REPO, 'src/main.ts'), 'utf8');
    const listed = /const BARE = \[([^\]]*)\]/.exec(main)?.[1]?.match(/'([a-z-]+)'/g)?.map((s) => s.slice(1, -1));
    expect(listed?.sort()).toEqual(Object.keys(BARE_COMMANDS).sort());
  });

  it.each([
    ['status', '--no-json'],
    ['doctor', '--no-fix'],
    ['guard', '--no-check'],
  ])('`%s` alone gives what it gives through the parser with %s: output and exit code', async (command, flag) => {
    const parsed = await run([command, flag]);
    const bare = await run([command]);
    expect(bare.exitCode).toBe(parsed.exitCode);
    expect(stable(String(bare.stdout))).toBe(stable(String(parsed.stdout)));
    expect(stable(String(bare.stderr))).toBe(stable(String(parsed.stderr)));
  }, 60_000);

  it('a bad SERVICE_* variable is refused before a bare command runs, as through the parser', async () => {
    const env = sb.env({ SERVICE_MCP_URL: 'ftp://x.example' });
    const bare = await execa(BINARY, ['guard'], { env, extendEnv: false, reject: false });
    const parsed = await execa(BINARY, ['guard', '--no-check'], { env, extendEnv: false, reject: false });
    expect(bare.exitCode).toBe(2);
    expect(bare.stderr).toMatch(/^Error: SERVICE_MCP_URL/);
    expect(bare.stderr).toBe(parsed.stderr);
  }, 60_000);

  it('an error from a bare command is reported as through the parser: message, hint, exit code', async () => {
    const empty = await makeSandbox();
    try {
      const bare = await execa(BINARY, ['guard'], { env: empty.env(), extendEnv: false, reject: false });
      const parsed = await execa(BINARY, ['guard', '--no-check'], { env: empty.env(), extendEnv: false, reject: false });
      expect(bare.exitCode).toBe(2);
      expect(parsed.exitCode).toBe(2);
      expect(bare.stderr).toMatch(/^Error: no stored answers/);
      expect(bare.stderr).toContain('  -> run `service-deploy install` on this server first');
      expect(bare.stderr).toBe(parsed.stderr);
    } finally {
      await empty.close();
    }
  }, 60_000);
});
