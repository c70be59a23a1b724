import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { lockedPackageDir } from '../../src/runtime/openclaw-place.js';
import { PLUGIN_PREFIX } from '../../src/runtime/openclaw.js';
import { BINARY, REPO } from '../helpers/binary.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { makeHealthySandbox, type OpsSandbox } from '../helpers/ops-sandbox.js';
import { makeSandbox, type Sandbox } from '../helpers/sandbox.js';

// What runs where (issue 29): doctor's report carries this binary's release and each
// runtime component's installed version against its pin, `status` reports the same
// versions (one reader: src/ops/versions.ts), and a component a failed or skipped update
// left behind is `behind` and fails the check that judges it.

const PINS = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/components.json'), 'utf8'));
const RELEASE: string = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version;
const PINNED = { node: PINS.node.version as string, openclaw: PINS.openclaw.version as string, qmd: PINS.qmd.version as string, 'lossless-claw': PINS.losslessClaw.version as string };
const OPENCLAW_PACKAGE = `${lockedPackageDir()}/package.json`;
const QMD_PACKAGE = `${LAYOUT.qmdPrefix}/node_modules/${PINS.qmd.package}/package.json`;
const LOSSLESS_PACKAGE = `${PLUGIN_PREFIX}/node_modules/${PINS.losslessClaw.package}/package.json`;

const onThePin = (name: keyof typeof PINNED) => ({ installed: PINNED[name], pinned: PINNED[name], behind: false });

let sb: (OpsSandbox | Sandbox) | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

describe('doctor: what runs where', () => {
  it('healthy: versions in --json (the release, every component at its pin) as status reads them, one line of them in the text; Node read once', async () => {
    const ops = await makeHealthySandbox();
    sb = ops;
    const run = await ops.run(['doctor', '--json']);
    expect(run.exitCode, String(run.stdout)).toBe(0);
    const out = jsonOutput('doctor', run.stdout);
    expect(Object.keys(out).at(-1)).toBe('versions');
    expect(out.versions).toEqual({ release: RELEASE, components: { node: onThePin('node'), openclaw: onThePin('openclaw'), qmd: onThePin('qmd'), 'lossless-claw': onThePin('lossless-claw') } });
    // One answer for node-runtime and the versions: the copied Node is not the file the install
    // stamped (a new inode), so it is run, once (on the server the stamp answers: no process).
    expect(ops.calls('node').filter((c) => c.args.join(' ') === '--version')).toHaveLength(1);

    const status = jsonOutput('status', (await ops.run(['status', '--json'])).stdout);
    for (const [name, c] of Object.entries(out.versions.components) as Array<[string, { installed: string }]>) expect(status.components[name].installed, name).toBe(c.installed);
    expect(status.binary.version).toBe(out.versions.release);

    const text = String((await ops.run(['doctor'])).stdout).trim().split('\n');
    expect(text.at(-2)).toBe(`service-deploy ${RELEASE} · Node ${PINNED.node} · OpenClaw ${PINNED.openclaw} · QMD ${PINNED.qmd} · lossless-claw ${PINNED['lossless-claw']}`);

    // Named checks: the versions all the same.
    const named = jsonOutput('doctor', (await ops.run(['doctor', 'os', '--json'])).stdout);
    expect(named.versions).toEqual(out.versions);
  });

  it('a server left behind: an earlier OpenClaw and QMD, lossless-claw gone: each behind, with its pin in the text line, and their checks fail', async () => {
    const ops = await makeHealthySandbox();
    sb = ops;
    const older = (file: string, version: string) => ops.write(file, JSON.stringify({ ...JSON.parse(ops.read(file)!), version }, null, 2));
    older(OPENCLAW_PACKAGE, '2026.9.5');
    older(QMD_PACKAGE, '2.8.2');
    fs.rmSync(path.join(ops.root, LOSSLESS_PACKAGE));

    const run = await ops.run(['doctor', '--json']);
    expect(run.exitCode).toBe(1);
    const out = jsonOutput('doctor', run.stdout);
    expect(out.versions.components).toEqual({
      node: onThePin('node'),
      openclaw: { installed: '2026.9.5', pinned: PINNED.openclaw, behind: true },
      qmd: { installed: '2.8.2', pinned: PINNED.qmd, behind: true },
      'lossless-claw': { installed: null, pinned: PINNED['lossless-claw'], behind: true },
    });
    const failed = out.checks.filter((c: { status: string }) => c.status === 'fail').map((c: { id: string }) => c.id);
    expect(failed).toEqual(expect.arrayContaining(['agent-runtime', 'plugins']));
    expect(failed).not.toContain('node-runtime');

    const text = await ops.run(['doctor']);
    expect(text.exitCode).toBe(1);
    expect(String(text.stdout)).toContain(
      `\nservice-deploy ${RELEASE} · Node ${PINNED.node} · OpenClaw 2026.9.5 (pin ${PINNED.openclaw}) · QMD 2.8.2 (pin ${PINNED.qmd}) · lossless-claw not installed (pin ${PINNED['lossless-claw']})\nsummary: `,
    );
  });

  it('nothing deployed: the report still has the versions (the release, nothing installed, every component behind its pin)', async () => {
    sb = await makeSandbox();
    const run = await execa(BINARY, ['doctor', '--json'], { env: sb.env(), extendEnv: false, reject: false });
    expect(run.exitCode).toBe(1);
    const out = jsonOutput('doctor', run.stdout);
    expect(out).toMatchObject({ ok: false, deployed: false, checks: [], error: { code: 'not-deployed' } });
    const nothing = (name: keyof typeof PINNED) => ({ installed: null, pinned: PINNED[name], behind: true });
    expect(out.versions).toEqual({ release: RELEASE, components: { node: nothing('node'), openclaw: nothing('openclaw'), qmd: nothing('qmd'), 'lossless-claw': nothing('lossless-claw') } });
  });
});
