import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DoctorContext } from '../../src/doctor/context.js';
import { CHECKS } from '../../src/doctor/index.js';
import { runChecks } from '../../src/doctor/run.js';
import { Inspector } from '../../src/host/inspect.js';
import { LAYOUT } from '../../src/layout.js';
import { HASH_BY_STAMP_ABOVE, compareEntry, readManifest, recordWrittenFile } from '../../src/pipeline/manifest.js';
import { makeHealthySandbox, type OpsSandbox } from '../helpers/ops-sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';

let sb: OpsSandbox;
beforeEach(async () => {
  sb = await makeHealthySandbox();
});
afterEach(async () => {
  await sb.close();
});

const byId = (id: string) => CHECKS.find((c) => c.id === id)!;
async function check(id: string) {
  const [report] = await runChecks(new DoctorContext(sb.host), [byId(id)]);
  return report!;
}

describe('files check', () => {
  it('names the file and the difference: mode of a secret, owner, type, content', async () => {
    fs.chmodSync(path.join(sb.root, LAYOUT.answersFile), 0o644);
    fs.lchownSync(path.join(sb.root, LAYOUT.guardScript), 65534, 65534);
    fs.appendFileSync(path.join(sb.root, LAYOUT.gatewayUnitFile), '\nExecStartPre=/tmp/x\n');
    const cron = path.join(sb.root, LAYOUT.guardCron);
    fs.renameSync(cron, `${cron}.moved`);
    fs.symlinkSync(`${cron}.moved`, cron);
    const report = await check('files');
    expect(report.status).toBe('fail');
    expect(report.message).toContain(`${LAYOUT.answersFile} is mode 0644, recorded 0600 (a secret readable by every user)`);
    expect(report.message).toContain(`${LAYOUT.guardScript} is owned by 65534:65534, recorded root:root`);
    expect(report.message).toMatch(new RegExp(`${LAYOUT.gatewayUnitFile} changed since service-deploy wrote it \\(\\d+ bytes, recorded \\d+; SHA-256 [0-9a-f]{12}…, recorded [0-9a-f]{12}…\\)`));
    expect(report.message).toContain(`${LAYOUT.guardCron} is a symbolic link to ${cron}.moved, recorded a regular file`);
    expect(report.fixable).toBe(true);
    expect(report.commands).toEqual(expect.arrayContaining(['service-deploy doctor --fix', `chmod 0600 ${LAYOUT.answersFile}`, `chown root:root ${LAYOUT.guardScript}`]));
  });

  it('a secret it cannot restore is named with the command that does, and is not called fixable', async () => {
    fs.appendFileSync(path.join(sb.root, LAYOUT.channelEnv), 'EXTRA=1\n');
    const report = await check('files');
    expect(report.message).toContain(`${LAYOUT.channelEnv} changed since service-deploy wrote it`);
    expect(report.fixable).toBe(false);
    expect(report.commands).toEqual(['service-deploy install --channel']);
  });

  it('a missing manifest warns; an invalid one fails naming the entry', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.manifestFile));
    expect(await check('files')).toMatchObject({ status: 'warn', message: expect.stringContaining(`${LAYOUT.manifestFile} is missing`) });
    fs.writeFileSync(path.join(sb.root, LAYOUT.manifestFile), JSON.stringify({ schemaVersion: 1, entries: [{ path: '/etc/passwd', type: 'file', uid: 0, gid: 0, mode: '0644', check: 'sha256', secret: false, sha256: 'a'.repeat(64) }] }));
    expect(await check('files')).toMatchObject({ status: 'fail', fixable: false, message: expect.stringMatching(/entries\.0\.path \(\/etc\/passwd\): not a place service-deploy writes/) });
  });

  it('without a manifest (an older install), our own files are still written again by --fix, and recorded', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.manifestFile));
    fs.rmSync(path.join(sb.root, LAYOUT.openclawWrapper));
    const broken = await check('agent-runtime');
    expect(broken).toMatchObject({ status: 'fail', fixable: true, action: 'files' });
    const run = await sb.run(['doctor', '--fix', '--json', 'agent-runtime']);
    const out = jsonOutput('doctor', run.stdout);
    expect(out.fixes).toEqual([expect.objectContaining({ id: 'files', ok: true })]);
    expect(out.checks[0].status).toBe('pass');
    expect((await readManifest(sb.host)).entries?.get(LAYOUT.openclawWrapper)?.mode).toBe(0o755);
  });
});

describe('manifest fingerprints', () => {
  it('a big file is re-hashed only when inode, size, mtime or ctime moved; a same-size rewrite with the old mtime is still caught', async () => {
    const p = `${LAYOUT.stateDir}/big.bin`;
    const real = path.join(sb.root, p);
    const bytes = Buffer.alloc(HASH_BY_STAMP_ABOVE + 4096, 7);
    fs.writeFileSync(real, bytes, { mode: 0o600 });
    await recordWrittenFile(sb.host, p, bytes, { mode: 0o600 });
    const inspector = new Inspector(sb.host.paths);
    const entry = (await readManifest(sb.host)).entries!.get(p)!;
    expect(await compareEntry(inspector, entry)).toEqual([]);
    // Unchanged fingerprint: the recorded hash is trusted without reading the file
    // (a wrong recorded hash goes unnoticed, which shows the file was not hashed).
    expect(await compareEntry(inspector, { ...entry, sha256: 'b'.repeat(64) })).toEqual([]);
    // Same size, mtime set back: the ctime moved, so it is hashed, and the change found.
    const { atime, mtime } = fs.statSync(real);
    const fd = fs.openSync(real, 'r+');
    fs.writeSync(fd, Buffer.from([8]), 0, 1, 100);
    fs.closeSync(fd);
    fs.utimesSync(real, atime, mtime);
    expect((await compareEntry(inspector, entry)).map((d) => d.kind)).toEqual(['content']);
  });
});
