import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runBinary } from '../helpers/binary.js';
import { errorEnvelope, jsonOutput } from '../helpers/json-schemas.js';
import { FIRST_INSTALL } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * --json means JSON on stdout whatever happens (issue 21 item 6): usage errors, refusals
 * and failures print the error envelope (schemas/error.schema.json), with the same exit
 * code as the process. Everything here runs on an empty sandbox root and ends before any
 * command of the machine would run (answers, archives and flags are checked first).
 */

function emptyRoot(extra: Record<string, string> = {}) {
  const root = tempDir('sd-json-root-');
  return { root, env: cleanEnv({ SERVICE_DEPLOY_ROOT: root, ...extra }) };
}

describe('install --json / --catalog: missing or invalid answers are JSON too', () => {
  it('missing answers: exit 2, one envelope listing them', async () => {
    const { env, root } = emptyRoot();
    for (const mode of [['--json', '--non-interactive'], ['--catalog'], ['--json']]) {
      const run = await runBinary(['install', ...mode], { env, input: '' });
      expect(run.exitCode, mode.join(' ')).toBe(2);
      const envelope = errorEnvelope(run.stdout, run.exitCode);
      expect(envelope.error.code).toBe('refused');
      expect(envelope.error.message).toMatch(/missing answers[\s\S]*service API key/);
      expect(String(run.stderr)).toMatch(/missing answers/);
    }
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('an invalid answer names the field', async () => {
    const { env } = emptyRoot(FIRST_INSTALL.env);
    const run = await runBinary(['install', '--catalog', '--customer-name', 'Acme', '--mesh-hostname', 'Not_A_Host'], { env });
    expect(run.exitCode).toBe(2);
    expect(errorEnvelope(run.stdout, run.exitCode).error.message).toMatch(/mesh/i);
  });

  it('a bad flag value (--lock-timeout -1) and --no-json', async () => {
    const { env } = emptyRoot(FIRST_INSTALL.env);
    const run = await runBinary(['install', '--json', '--lock-timeout', '-1', ...FIRST_INSTALL.args], { env });
    expect(run.exitCode).toBe(2);
    expect(errorEnvelope(run.stdout, run.exitCode).error.message).toContain('--lock-timeout');
    const text = await runBinary(['install', '--json', '--no-json', '--lock-timeout', '-1', ...FIRST_INSTALL.args], { env });
    expect(text.exitCode).toBe(2);
    expect(String(text.stdout)).toBe('');
  });
});

describe('render, restore, doctor, guard, profile: the envelope on refusals', () => {
  it('render --json: the file as a document, and missing answers as an envelope', async () => {
    const { env } = emptyRoot({ ...FIRST_INSTALL.env, SERVICE_CUSTOMER_NAME: 'Acme Dental GmbH' });
    const ok = await runBinary(['render', 'cron', '--json'], { env });
    expect(ok.exitCode, String(ok.stderr)).toBe(0);
    const doc = jsonOutput('render', ok.stdout);
    expect(doc).toMatchObject({ ok: true, file: 'cron' });
    expect(doc.content).toContain('service-guard');
    const plain = await runBinary(['render', 'cron'], { env });
    expect(String(plain.stdout)).toBe(doc.content.replace(/\n$/, ''));
    const missing = await runBinary(['render', 'cron', '--json'], emptyRoot());
    expect(missing.exitCode).toBe(2);
    expect(errorEnvelope(missing.stdout, missing.exitCode).error.code).toBe('refused');
  });

  it('restore --json: an archive that is not there, or not an archive', async () => {
    const { env, root } = emptyRoot(FIRST_INSTALL.env);
    const absent = await runBinary(['restore', path.join(root, 'nope.tar.gz'), '--check', '--json'], { env });
    expect(absent.exitCode).toBe(2);
    expect(errorEnvelope(absent.stdout, absent.exitCode).error.message).toContain('nope.tar.gz');
    const junk = path.join(tempDir('sd-json-junk-'), 'junk.tar.gz');
    fs.writeFileSync(junk, 'not a tar archive');
    const bad = await runBinary(['restore', junk, '--json'], { env });
    expect(bad.exitCode).toBe(2);
    expect(errorEnvelope(bad.stdout, bad.exitCode).error.code).toBe('refused');
  });

  it('doctor --json on a server with nothing deployed: one not-deployed report, not a page of FAILs', async () => {
    const { env } = emptyRoot();
    const run = await runBinary(['doctor', '--json'], { env });
    expect(run.exitCode).toBe(1);
    const doc = jsonOutput('doctor', run.stdout);
    expect(doc).toMatchObject({ ok: false, deployed: false, checks: [], error: { code: 'not-deployed', exitCode: 1 } });
    const text = await runBinary(['doctor'], { env });
    expect(text.exitCode).toBe(1);
    expect(String(text.stdout)).toMatch(/^Nothing deployed here/);
    expect(String(text.stdout)).not.toMatch(/FAIL/);
    const unknown = await runBinary(['doctor', 'no-such-check', '--json'], { env });
    expect(unknown.exitCode).toBe(2);
    expect(errorEnvelope(unknown.stdout, unknown.exitCode).error.message).toContain('no-such-check');
  });

  it('guard --check --json with nothing deployed is refused as an envelope', async () => {
    const run = await runBinary(['guard', '--check', '--json'], emptyRoot());
    expect(run.exitCode).toBe(2);
    expect(errorEnvelope(run.stdout, run.exitCode).error.message).toMatch(/no stored answers/);
  });

  it('profile --json: a bad override is an envelope naming the variable', async () => {
    const run = await runBinary(['profile', '--json'], { env: cleanEnv({ SERVICE_PARTNER_API_URL: 'http://api.example.com' }) });
    expect(run.exitCode).toBe(2);
    expect(errorEnvelope(run.stdout, run.exitCode).error.message).toContain('SERVICE_PARTNER_API_URL');
  });

  it('a usage error of every command family, and no command at all', async () => {
    for (const args of [['frobnicate'], ['gateway', 'explode'], ['devices'], ['partner'], ['restore'], ['render', 'passwd']]) {
      const run = await runBinary([...args, '--json'], { env: cleanEnv() });
      expect(run.exitCode, args.join(' ')).toBe(2);
      expect(errorEnvelope(run.stdout, run.exitCode).error.code, args.join(' ')).toBe('usage');
    }
  });
});

describe('--verbose stack traces point into the TypeScript sources (issue 21 item 11)', () => {
  it('the binary maps its frames with the source map it embeds', async () => {
    const { env } = emptyRoot();
    const run = await runBinary(['render', 'cron', '--verbose'], { env });
    expect(run.exitCode).toBe(2);
    const frames = String(run.stderr).split('\n').filter((line) => /^\s+at /.test(line));
    expect(frames.length, String(run.stderr)).toBeGreaterThan(0);
    expect(frames.some((line) => /\(src\/answers\/resolve\.ts:\d+:\d+\)/.test(line)), frames.join('\n')).toBe(true);
    expect(frames.some((line) => /src\/commands\/render\.ts:\d+:\d+/.test(line)), frames.join('\n')).toBe(true);
    expect(frames.filter((line) => /chunks\/[\w.-]+\.js:/.test(line))).toEqual([]);
    // Without --verbose, no frames.
    const quiet = await runBinary(['render', 'cron'], { env });
    expect(String(quiet.stderr)).not.toMatch(/^\s+at /m);
  });
});
