import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { placeholderEndpointHint } from '../../src/input.js';
import { REPO, cleanEnv } from '../helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));
const profile = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/service-profile.json'), 'utf8'));

describe('a binary built from the repository (placeholder endpoints)', { timeout: 120_000 }, () => {
  it('names the placeholder instead of blaming the network', () => {
    expect(placeholderEndpointHint(profile.mcpUrl, 'SERVICE_MCP_URL')).toMatch(/^mcp\.service\.example is a placeholder .*set SERVICE_MCP_URL/);
    expect(placeholderEndpointHint('https://mcp.real-service.com/mcp')).toBeUndefined();
    expect(placeholderEndpointHint('http://127.0.0.1:9/v1')).toBeUndefined();
  });

  it('the install (MCP step) and install.sh say so', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    // The embedded profile's MCP URL (the sandbox points it at a stand-in; '' = unset).
    const r = await sb.install(['--check', ...FIRST_INSTALL.args], { ...FIRST_INSTALL.env, SERVICE_MCP_URL: '' });
    expect(String(r.stdout)).toMatch(/cannot plan {3}mcp: .*mcp\.service\.example.* \(mcp\.service\.example is a placeholder \(this binary was built from the repository/);
    expect(String(r.stdout)).not.toContain('check the network');

    const root = tempDir('sd-placeholder-');
    fs.mkdirSync(path.join(root, 'etc'));
    fs.writeFileSync(path.join(root, 'etc/os-release'), 'ID=ubuntu\nVERSION_ID="24.04"\n');
    const sh = await execa('bash', ['-s'], { input: fs.readFileSync(path.join(REPO, 'install.sh')), env: cleanEnv({ SERVICE_DEPLOY_ROOT: root }), extendEnv: false, reject: false, timeout: 60_000 });
    expect(sh.exitCode).toBe(1);
    // The repository's copy carries no release key: it refuses before any download, saying which install.sh to use.
    expect(sh.stderr).toMatch(/no release key: it is the repository's copy.*use the install\.sh your setup URL serves/);
  });
});
