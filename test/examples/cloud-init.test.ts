import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { tempDir } from '../helpers/tmp.js';

// examples/cloud-init/user-data.yaml is the portal's catalog deploy; the e2e boots a real
// cloud-init with it (test/e2e/cloud-init.e2e.ts). Here: Debian's cloud-init accepts it
// (`cloud-init schema`, the package unpacked by scripts/test-deps.sh), and it keeps the
// promises the e2e relies on.

const EXAMPLE = path.join(REPO, 'examples', 'cloud-init', 'user-data.yaml');
const CLOUD_INIT = path.join(REPO, '.cache', 'cloud-init', 'root');
const PYTHON = '/usr/bin/python3';

function schema(file: string) {
  return execa(PYTHON, [path.join(CLOUD_INIT, 'usr/bin/cloud-init'), 'schema', '--config-file', file], {
    env: { PATH: '/usr/bin:/bin', PYTHONPATH: path.join(CLOUD_INIT, 'usr/lib/python3/dist-packages'), LANG: 'C.UTF-8' },
    extendEnv: false,
    reject: false,
    timeout: 60_000,
  });
}

async function parsed(file: string): Promise<any> {
  const r = await execa(PYTHON, ['-c', 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', file]);
  return JSON.parse(r.stdout);
}

describe('examples/cloud-init/user-data.yaml (the catalog deploy as the portal sends it)', () => {
  it("passes Debian's `cloud-init schema`", async () => {
    expect(fs.existsSync(path.join(CLOUD_INIT, 'usr/bin/cloud-init')), 'run scripts/test-deps.sh (npm test does)').toBe(true);
    const r = await schema(EXAMPLE);
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/^Valid cloud-config: /m);
  });

  it('the schema check rejects a broken copy (control: the checker really checks)', async () => {
    const broken = path.join(tempDir('sd-userdata-'), 'user-data.yaml');
    fs.writeFileSync(broken, fs.readFileSync(EXAMPLE, 'utf8').replace("permissions: '0600'", 'permissions: 600'));
    const r = await schema(broken);
    expect(r.exitCode).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toMatch(/permissions: 600 is not of type 'string'/);
  });

  it('answers arrive as a 0600 root file and never in a command line; the runcmd is the curl | bash --catalog line; the result stays for the portal', async () => {
    const text = fs.readFileSync(EXAMPLE, 'utf8');
    expect(text.startsWith('#cloud-config\n')).toBe(true);
    const doc = await parsed(EXAMPLE);
    const answers = doc.write_files.find((f: { path: string }) => f.path === '/root/service-deploy/answers.json');
    expect(answers).toMatchObject({ owner: 'root:root', permissions: '0600' });
    // The JSON the install reads with --answers (the names docs/install.md lists).
    expect(Object.keys(JSON.parse(answers.content)).sort()).toEqual(['apiKey', 'customerName', 'mcpToken', 'meshAuthKey', 'modelId']);
    const script: string = doc.runcmd.map((c: string | string[]) => (Array.isArray(c) ? c.join(' ') : c)).join('\n');
    expect(script).toMatch(/curl -fsSL https:\/\/\S+\/install\.sh \| bash -s -- --catalog --answers \/root\/service-deploy\/answers\.json >/);
    // No secret placeholder (nor any answer) in what runs as a command.
    for (const placeholder of Object.values(JSON.parse(answers.content)) as string[]) expect(script).not.toContain(placeholder);
    expect(script).not.toMatch(/SERVICE_(API_KEY|MESH_AUTH_KEY|MCP_TOKEN)=/);
    expect(script).toContain('umask 077');
    expect(script).toMatch(/mv -f result\.json\.partial result\.json/);
    expect(script).toMatch(/exit "\$rc"/);
    expect(doc.final_message).toContain('/root/service-deploy/result.json');
  });
});
