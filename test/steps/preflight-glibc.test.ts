import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { versionBelow } from '../../src/host/os.js';
import { GLIBC_FLOOR } from '../../src/steps/preflight.js';
import { FIRST_INSTALL, makeSandbox, snapshotFiles, type Sandbox } from '../helpers/sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { tempDir } from '../helpers/tmp.js';

const sandboxes: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

/** A PATH whose `getconf GNU_LIBC_VERSION` answers `answer` (a server with another C library), the sandbox's stand-ins after it. */
function pathWithGetconf(sb: Sandbox, answer: string): string {
  const dir = tempDir('sd-getconf-');
  fs.writeFileSync(path.join(dir, 'getconf'), `#!/bin/sh\n[ "$1" = GNU_LIBC_VERSION ] && { echo '${answer}'; exit 0; }\nexit 1\n`, { mode: 0o755 });
  return `${dir}:${sb.env().PATH}`;
}

describe('preflight: the oldest glibc the pinned components load on', () => {
  it('compares dotted versions numerically', () => {
    expect(versionBelow('2.31', '2.34')).toBe(true);
    expect(versionBelow('2.4', '2.34')).toBe(true);
    expect(versionBelow('2.34', '2.34')).toBe(false);
    expect(versionBelow('2.35', '2.34')).toBe(false);
    expect(versionBelow('3.0', '2.34')).toBe(false);
  });

  it(`refuses glibc 2.31 (Debian 11) in preflight, even with SERVICE_ALLOW_UNSUPPORTED_OS=1: exit 2, naming both versions, nothing changed`, async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const before = snapshotFiles(sb.root);
    const result = await sb.install([...FIRST_INSTALL.args, '--json'], { ...FIRST_INSTALL.env, SERVICE_ALLOW_UNSUPPORTED_OS: '1', PATH: pathWithGetconf(sb, 'glibc 2.31') });
    expect(result.exitCode, String(result.stderr)).toBe(2);
    const failed = jsonOutput('install', result.stdout).steps.find((s: { status: string }) => s.status === 'failed');
    expect(failed.id).toBe('preflight');
    expect(failed.error).toContain(`glibc 2.31 is older than ${GLIBC_FLOOR}`);
    expect(failed.error).toContain('QMD');
    const after = snapshotFiles(sb.root);
    for (const [file, mtime] of before) if (!file.startsWith('var/log/')) expect(after.get(file), file).toBe(mtime);
    expect(sb.calls().filter((c) => ['apt-get', 'npm', 'openclaw'].includes(c.command))).toEqual([]);
  });

  it(`installs on glibc ${GLIBC_FLOOR} (Ubuntu 22.04 has 2.35), and where getconf gives no glibc version (another C library)`, async () => {
    for (const answer of [`glibc ${GLIBC_FLOOR}`, 'musl']) {
      const sb = await makeSandbox();
      sandboxes.push(sb);
      const result = await sb.install(['--check', ...FIRST_INSTALL.args], { ...FIRST_INSTALL.env, PATH: pathWithGetconf(sb, answer) });
      expect(result.exitCode, `${answer}: ${result.stderr}`).toBe(0);
      expect(String(result.stderr), answer).not.toContain('glibc');
    }
  });
});
