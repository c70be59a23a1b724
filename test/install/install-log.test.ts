import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { INSTALL_LOG_ROTATE_BYTES } from '../../src/pipeline/install-log.js';
import { LAYOUT } from '../../src/layout.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const sandboxes: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

it('install.log is bounded: a run that finds it at 2 MiB moves it to install.log.1 (replacing the older copy) and starts a new one, 0600', async () => {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const log = path.join(sb.root, LAYOUT.installLog);
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  // Below the size: a re-run appends.
  const small = fs.statSync(log).size;
  expect(small).toBeLessThan(INSTALL_LOG_ROTATE_BYTES);
  expect((await sb.install(['--non-interactive'])).exitCode).toBe(0);
  expect(fs.statSync(log).size).toBeGreaterThan(small);
  expect(fs.existsSync(`${log}.1`)).toBe(false);

  // At the size: the next run moves it aside whole and writes a new one.
  const old = `${fs.readFileSync(log, 'utf8')}${'x'.repeat(INSTALL_LOG_ROTATE_BYTES)}\n`;
  fs.writeFileSync(log, old, { mode: 0o600 });
  fs.writeFileSync(`${log}.1`, 'the older copy\n', { mode: 0o600 });
  expect((await sb.install(['--non-interactive'])).exitCode).toBe(0);
  expect(fs.readFileSync(`${log}.1`, 'utf8')).toBe(old);
  const fresh = fs.readFileSync(log, 'utf8');
  expect(fresh).toMatch(/install started: customer acme-dental-gmbh/);
  expect(fresh.length).toBeLessThan(INSTALL_LOG_ROTATE_BYTES);
  expect(fs.statSync(log).mode & 0o777).toBe(0o600);
  expect(fs.statSync(`${log}.1`).mode & 0o777).toBe(0o600);
});
