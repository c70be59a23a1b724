import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MIN_MEMORY } from '../../src/steps/preflight.js';
import { FIRST_INSTALL, makeSandbox, snapshotFiles, type Sandbox } from '../helpers/sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';

const sandboxes: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

/** A sandbox whose server reports `kib` of memory (MemTotal, as the kernel says it). */
async function serverWith(kib: number): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  fs.mkdirSync(path.join(sb.root, 'proc'), { recursive: true });
  fs.writeFileSync(path.join(sb.root, 'proc', 'meminfo'), `MemTotal:       ${kib} kB\nMemFree:          123456 kB\nMemAvailable:     234567 kB\n`);
  return sb;
}

// Issue 26: the soak holds the deployment at about 1.0 GiB at rest and 1.3 GiB at peak
// (docs/operations.md), so a 1 GiB server cannot hold it; a 2 GiB one reports a little
// less than 2 GiB (what the firmware and kernel keep).
describe('preflight: the memory the deployment needs (a 2 GiB server)', () => {
  it('refuses a 1 GiB server (MemTotal 0.95 GiB): exit 2, naming what it has and needs, nothing changed', async () => {
    const sb = await serverWith(1_000_000);
    const before = snapshotFiles(sb.root);
    const result = await sb.install([...FIRST_INSTALL.args, '--json'], FIRST_INSTALL.env);
    expect(result.exitCode, String(result.stderr)).toBe(2);
    const failed = jsonOutput('install', result.stdout).steps.find((s: { status: string }) => s.status === 'failed');
    expect(failed.id).toBe('preflight');
    expect(failed.error).toContain('only 1.0 GiB of memory: the deployment needs a server with 2 GiB');
    const after = snapshotFiles(sb.root);
    for (const [file, mtime] of before) if (!file.startsWith('var/log/')) expect(after.get(file), file).toBe(mtime);
    expect(sb.calls().filter((c) => ['apt-get', 'npm', 'openclaw'].includes(c.command))).toEqual([]);
  });

  it('accepts a 2 GiB server as the kernel reports it (MemTotal 1.9 GiB), and refuses just below the floor', async () => {
    expect(MIN_MEMORY).toBe(1.75 * 1024 ** 3);
    const twoGiB = await serverWith(2_000_000);
    const ok = await twoGiB.install(['--check', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(ok.exitCode, String(ok.stderr)).toBe(0);
    expect(String(ok.stderr)).not.toContain('of memory');
    const below = await serverWith(MIN_MEMORY / 1024 - 1);
    const refused = await below.install(['--check', ...FIRST_INSTALL.args], FIRST_INSTALL.env);
    expect(refused.exitCode).toBe(2);
    expect(String(refused.stderr)).toContain('the deployment needs a server with 2 GiB');
  });
});
