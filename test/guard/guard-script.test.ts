import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { BINARY } from '../helpers/binary.js';
import { makeHealthySandbox, type OpsSandbox } from '../helpers/ops-sandbox.js';

/**
 * SPEC 1.3 "Run enforcer manually: bash /usr/local/bin/service-guard.sh". The script
 * as the install writes it is executed, with bash, the way cron and an operator run it.
 * It execs the absolute /usr/local/bin/service-deploy, so it runs in a private mount
 * namespace (unshare, root) where /usr/local/bin holds the built binary: the machine's
 * own /usr/local/bin is not touched.
 */
let sb: OpsSandbox;
beforeEach(async () => {
  sb = await makeHealthySandbox();
});
afterEach(async () => {
  await sb.close();
});

function runGuardScript(args: string[] = []) {
  const script = path.join(sb.root, LAYOUT.guardScript);
  const inner = `mount -t tmpfs tmpfs /usr/local/bin && cp "$1" /usr/local/bin/service-deploy && shift && exec bash "$@"`;
  return execa('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', inner, 'sh', BINARY, script, ...args], {
    env: sb.env(),
    extendEnv: false,
    reject: false,
  });
}

describe('/usr/local/bin/service-guard.sh, executed', () => {
  it('restores a tampered config through the binary it names, and exits 0', async () => {
    const config = JSON.parse(sb.read(LAYOUT.runtimeConfig)!);
    const good = structuredClone(config);
    config.models.providers.openai = { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-proj-zzzzzzzzzzzzzzzz' };
    sb.write(LAYOUT.runtimeConfig, JSON.stringify(config), 0o600);
    const run = await runGuardScript();
    expect(run.exitCode, `${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/restored models\.providers\.openai: direct model-vendor provider/);
    expect(JSON.parse(sb.read(LAYOUT.runtimeConfig)!)).toEqual(good);
    expect(fs.readFileSync(path.join(sb.state, 'syslog'), 'utf8')).toMatch(/service-guard\x1frestored models\.providers\.openai/);
  });

  it('passes its arguments on (--check changes nothing) and its exit code back', async () => {
    const config = JSON.parse(sb.read(LAYOUT.runtimeConfig)!);
    config.gateway.bind = 'lan';
    const tampered = JSON.stringify(config);
    sb.write(LAYOUT.runtimeConfig, tampered, 0o600);
    const check = await runGuardScript(['--check', '--json']);
    expect(check.exitCode, `${check.stderr}`).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ check: true, restorations: [{ what: 'gateway.bind', before: 'lan', after: 'loopback' }] });
    expect(sb.read(LAYOUT.runtimeConfig)).toBe(tampered);

    fs.rmSync(path.join(sb.root, LAYOUT.answersFile));
    const failed = await runGuardScript();
    // Without answers the guard refuses (the exit-code rule: 2, nothing changed), and the script passes that on.
    expect(failed.exitCode).toBe(2);
    expect(failed.stderr).toMatch(/no stored answers/);
  });
});
