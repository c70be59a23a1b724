import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { waitUntil } from '../helpers/budget.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * SPEC 1.2 rule 4 / 8: the deploy waits for cloud-init (`cloud-init status --wait`)
 * before it takes the package manager. A `cloud-init` stand-in records its call and
 * finishes only when the test releases it (or never), with the exit code given.
 */
const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

function cloudInit(exitCode: number): { dir: string; release(): void } {
  const dir = tempDir('sd-cloud-init-');
  const released = path.join(dir, 'released');
  fs.writeFileSync(
    path.join(dir, 'cloud-init'),
    `#!/bin/sh\n. "${REPO}/test/helpers/standins/_lib.sh"\nstandin_record cloud-init "$@"\nwhile [ ! -f "${released}" ]; do sleep 0.05; done\nexit ${exitCode}\n`,
    { mode: 0o755 },
  );
  return { dir, release: () => fs.writeFileSync(released, '') };
}

async function sandbox(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  return sb;
}

describe('cloud-init status --wait', () => {
  it.each([0, 2])('the install waits for it (exit %i: done / done with recoverable errors), before any apt-get', async (code) => {
    const sb = await sandbox();
    const stand = cloudInit(code);
    const run = sb.install(FIRST_INSTALL.args, { ...FIRST_INSTALL.env, PATH: `${stand.dir}:${sb.env().PATH}` });
    let stderr = '';
    run.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await waitUntil('the install to run `cloud-init status --wait`', () => sb.calls('cloud-init').length > 0, { lastSeen: () => stderr.slice(-300) });
    expect(sb.calls('cloud-init')).toEqual([{ command: 'cloud-init', args: ['status', '--wait'] }]);
    // While cloud-init runs, the install takes nothing: no apt-get, nothing under /opt.
    expect(sb.calls('apt-get')).toEqual([]);
    expect(fs.existsSync(path.join(sb.root, 'opt'))).toBe(false);
    stand.release();
    const result = await run;
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const order = sb.calls().map((c) => c.command);
    expect(order.indexOf('cloud-init')).toBeLessThan(order.indexOf('apt-get'));
  });

  it('cloud-init still running at the end of --lock-timeout: a clear error, nothing installed', async () => {
    const sb = await sandbox();
    const stand = cloudInit(0);
    try {
      const result = await sb.install([...FIRST_INSTALL.args, '--lock-timeout', '2', '--json'], { ...FIRST_INSTALL.env, PATH: `${stand.dir}:${sb.env().PATH}` });
      expect(result.exitCode).toBe(1);
      const failed = JSON.parse(String(result.stdout)).steps.find((s: { status: string }) => s.status === 'failed');
      expect(failed.id).toBe('package-lock');
      expect(failed.error).toMatch(/cloud-init is still running/);
      expect(failed.hint).toMatch(/retry/);
      expect(sb.calls('apt-get')).toEqual([]);
      expect(fs.existsSync(path.join(sb.root, 'root/.openclaw'))).toBe(false);
    } finally {
      stand.release();
    }
  });
});
