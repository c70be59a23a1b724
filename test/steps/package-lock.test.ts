import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BINARY } from '../helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

// The catalog deploy runs from cloud-init's runcmd (examples/cloud-init/user-data.yaml):
// `cloud-init status --wait` from in there waits for itself. The real boot is in the e2e
// (test/e2e/cloud-init.e2e.ts); here, the decision, with a stand-in cloud-init on PATH.

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

/** A sandbox whose PATH has a `cloud-init` that records its calls and answers "status: done". */
async function sandboxWithCloudInit(): Promise<{ sb: Sandbox; bin: string }> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const bin = tempDir('sd-cloudinit-');
  fs.writeFileSync(path.join(bin, 'cloud-init'), `#!/bin/sh\necho "$*" >>"${path.join(sb.state, 'cloud-init-calls')}"\necho "status: done"\n`, { mode: 0o755 });
  return { sb, bin };
}

const calls = (sb: Sandbox) => (fs.existsSync(path.join(sb.state, 'cloud-init-calls')) ? fs.readFileSync(path.join(sb.state, 'cloud-init-calls'), 'utf8').trim().split('\n') : []);

describe('package-lock step and cloud-init', () => {
  it('waits for cloud-init to finish when run on its own (ssh, a shell)', async () => {
    const { sb, bin } = await sandboxWithCloudInit();
    const result = await execa(BINARY, ['install', ...FIRST_INSTALL.args], { env: sb.env({ ...FIRST_INSTALL.env, PATH: `${bin}:${sb.env().PATH}` }), extendEnv: false, reject: false, timeout: 120_000 });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(calls(sb)).toContain('status --wait');
    expect(result.stderr).not.toContain('inside cloud-init');
  });

  it('run by cloud-init (an ancestor process is cloud-init), it waits only for the package locks, saying why', async () => {
    const { sb, bin } = await sandboxWithCloudInit();
    // A parent whose arguments name cloud-init, as "/usr/bin/python3 /usr/bin/cloud-init modules --mode=final" does.
    const parent = path.join(tempDir('sd-ci-parent-'), 'cloud-init');
    fs.writeFileSync(parent, '#!/bin/sh\n"$@"\nexit $?\n', { mode: 0o755 });
    const result = await execa('/bin/sh', [parent, BINARY, 'install', ...FIRST_INSTALL.args], {
      env: sb.env({ ...FIRST_INSTALL.env, PATH: `${bin}:${sb.env().PATH}` }),
      extendEnv: false,
      reject: false,
      timeout: 120_000,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(calls(sb)).not.toContain('status --wait');
    expect(result.stderr).toMatch(/running inside cloud-init \(pid \d+: \/bin\/sh \S*cloud-init .*\): not waiting for cloud-init to finish, only for the package locks/);
  });
});
