import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BINARY, REPO } from '../helpers/binary.js';
import { FIRST_INSTALL, NODE_VERSION, OPENCLAW_VERSION, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';

/** The Node this machine's binary is built on: the pinned node-linux-<arch> (package-lock.json), not the runtime's. */
const EMBEDDED_NODE: string = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8')).packages[`node_modules/node-linux-${process.arch}`].version;
const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

describe('status', () => {
  it('says nothing is deployed on a fresh server, then reports the deployment', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const before = await execa(BINARY, ['status', '--json'], { env: sb.env(), extendEnv: false, reject: false });
    // Nothing deployed is not a healthy deployment: exit 1, like doctor's not-deployed.
    expect(before.exitCode).toBe(1);
    const empty = jsonOutput('status', before.stdout);
    expect(empty).toMatchObject({ ok: false, deployed: false, error: { code: 'not-deployed', exitCode: 1 } });
    const bare = await execa(BINARY, ['status'], { env: sb.env(), extendEnv: false, reject: false });
    expect(bare.exitCode, 'status run bare (bare.ts, no parser)').toBe(1);
    expect(bare.stdout).toContain('No deployment found on this server');
    expect(empty.binary).toEqual({ version: JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version, node: EMBEDDED_NODE, arch: process.arch });
    expect(empty.components.openclaw.installed).toBeUndefined();
    expect(empty.services.mesh).toBe('not-installed');

    await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
    const after = jsonOutput('status', (await execa(BINARY, ['status', '--json'], { env: sb.env(), extendEnv: false })).stdout);
    expect(after).toMatchObject({
      ok: true,
      deployed: true,
      customer: 'Acme Dental GmbH',
      model: 'claude-sonnet-4-5',
      meshHostname: 'openclaw-acme-dental-gmbh',
      channel: false,
      components: { node: { installed: NODE_VERSION, pinned: NODE_VERSION }, openclaw: { installed: OPENCLAW_VERSION } },
      services: { gateway: true, health: true, mesh: 'running', serving: true },
    });
    const text = await execa(BINARY, ['status'], { env: sb.env(), extendEnv: false });
    expect(text.stdout.split('\n')[0]).toBe(`service-deploy ${empty.binary.version} (Node.js ${EMBEDDED_NODE}, linux-${process.arch})`);
    expect(text.stdout).toContain('customer Acme Dental GmbH');
    expect(text.stdout).toMatch(/ok {3}openclaw/);
    expect(text.exitCode).toBe(0);
    for (const secret of Object.values(FIRST_INSTALL.env)) expect(text.stdout + before.stdout).not.toContain(secret);
    expect(path.isAbsolute(BINARY)).toBe(true);

    // The gateway stopped (the unit inactive): exit 1, the report still whole.
    fs.rmSync(path.join(sb.state, 'user-openclaw-gateway.service.active'));
    const down = await execa(BINARY, ['status', '--json'], { env: sb.env(), extendEnv: false, reject: false });
    expect(down.exitCode).toBe(1);
    expect(jsonOutput('status', down.stdout)).toMatchObject({ ok: false, deployed: true, services: { gateway: false }, error: { code: 'gateway-down', exitCode: 1 } });
    const downText = await execa(BINARY, ['status'], { env: sb.env(), extendEnv: false, reject: false });
    expect(downText.exitCode).toBe(1);
    expect(downText.stdout).toContain('gateway inactive');
    expect(downText.stderr).toContain("status: the agent's gateway is down: openclaw-gateway.service is not active");

    // /healthz not answering while the unit is active is down too.
    fs.writeFileSync(path.join(sb.state, 'user-openclaw-gateway.service.active'), '');
    fs.writeFileSync(path.join(sb.state, 'unhealthy-version'), OPENCLAW_VERSION);
    const unhealthy = await execa(BINARY, ['status', '--json'], { env: sb.env(), extendEnv: false, reject: false });
    expect(unhealthy.exitCode).toBe(1);
    expect(jsonOutput('status', unhealthy.stdout)).toMatchObject({ ok: false, services: { gateway: true, health: false }, error: { code: 'gateway-down' } });
  });
});

describe('doctor on an OS the install was told to accept', () => {
  it('warns instead of failing when SERVICE_ALLOW_UNSUPPORTED_OS=1', async () => {
    const sb = await makeSandbox({ os: 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12"\n' });
    sandboxes.push(sb);
    const strict = await execa(BINARY, ['doctor', 'os', '--json'], { env: sb.env(), extendEnv: false, reject: false });
    expect(strict.exitCode).toBe(1);
    const allowed = await execa(BINARY, ['doctor', 'os', '--json'], { env: sb.env({ SERVICE_ALLOW_UNSUPPORTED_OS: '1' }), extendEnv: false, reject: false });
    expect(allowed.exitCode, allowed.stdout).toBe(0);
    expect(allowed.stdout).toContain('SERVICE_ALLOW_UNSUPPORTED_OS=1');
  });
});
