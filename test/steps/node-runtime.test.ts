import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_INSTALL, NODE_VERSION, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const NODE = 'opt/service-deploy/node/bin/node';
const STAMP = 'var/lib/service-deploy/node-runtime.json';
let sb: Sandbox;

async function rerun() {
  sb.clearCalls();
  const result = await sb.install(['--non-interactive', '--json']);
  expect(result.exitCode, String(result.stderr)).toBe(0);
  const step = JSON.parse(String(result.stdout)).steps.find((s: { id: string }) => s.id === 'node-runtime');
  return { step, nodeRuns: sb.calls('node').filter((c) => c.args[0] === '--version').length };
}

beforeAll(async () => {
  sb = await makeSandbox();
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
}, 120_000);
afterAll(async () => sb.close());

describe('node-runtime: the installed Node is run once per binary, then known by its identity', () => {
  it('the install stamps the binary it verified; a re-run does not run it again', async () => {
    const stamp = JSON.parse(sb.read(STAMP)!);
    expect(stamp.version).toBe(NODE_VERSION);
    expect(sb.stat(STAMP)!.mode & 0o777).toBe(0o600);
    const again = await rerun();
    expect(again.step.status).toBe('ok');
    expect(again.nodeRuns).toBe(0);
  }, 120_000);

  it('the same bytes written again (another identity): run and checked, only the stamp is rewritten, once', async () => {
    const file = path.join(sb.root, NODE);
    fs.writeFileSync(`${file}.new`, fs.readFileSync(file), { mode: 0o755 });
    fs.renameSync(`${file}.new`, file);
    const first = await rerun();
    expect(first.nodeRuns).toBeGreaterThan(0);
    expect(first.step.status).toBe('changed');
    expect(first.step.changes).toEqual([expect.stringMatching(/^record the verified Node .* binary/)]);
    const second = await rerun();
    expect(second).toMatchObject({ nodeRuns: 0, step: { status: 'ok' } });
  }, 120_000);

  it('another Node put in its place (it says another version) is noticed: an upgrade puts the pinned one back, verified and stamped', async () => {
    const file = path.join(sb.root, NODE);
    const original = fs.readFileSync(file);
    fs.writeFileSync(file, String(original).replace(/\$\{STANDIN_NODE_VERSION:-[^}]*\}/, '20.0.0'), { mode: 0o755 });
    expect(String(fs.readFileSync(file))).toContain('20.0.0');
    sb.clearCalls();
    const result = await sb.install(['--non-interactive', '--json']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const recap = JSON.parse(String(result.stdout));
    // A different Node on a deployed server is an upgrade (install/upgrade.ts), whose install stamps the new binary.
    expect(recap.upgrade).toMatchObject({ node: { from: '20.0.0', to: NODE_VERSION } });
    expect(recap.steps.find((s: { id: string }) => s.id === 'node-runtime').changes).toEqual([`record the verified Node ${NODE_VERSION} binary`]);
    expect(String(fs.readFileSync(file))).not.toContain('20.0.0');
    expect(JSON.parse(sb.read(STAMP)!).version).toBe(NODE_VERSION);
    expect(await rerun()).toMatchObject({ nodeRuns: 0, step: { status: 'ok' } });
  }, 120_000);

  it('a stamp that does not match the file is ignored: the binary is run', async () => {
    fs.writeFileSync(path.join(sb.root, STAMP), JSON.stringify({ identity: '1:2:3:4:5', version: NODE_VERSION }));
    const run = await rerun();
    expect(run.nodeRuns).toBeGreaterThan(0);
    expect(run.step.status).toBe('changed');
  }, 120_000);
});
