import { createHash } from 'node:crypto';
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.js';
import { LAYOUT } from '../../src/layout.js';
import { MANAGED_PLACES } from '../../src/install/footprint.js';
import { manifestContent, readManifest, recordFromDisk, recordWrittenFile, type ManifestEntry } from '../../src/pipeline/manifest.js';
import { BINARY, REPO } from '../helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

interface JsonEntry {
  path: string;
  type: string;
  uid: number;
  gid: number;
  mode: string;
  check: string;
  secret: boolean;
  sha256?: string;
  target?: string;
}

function manifest(sb: Sandbox): JsonEntry[] {
  return JSON.parse(sb.read(LAYOUT.manifestFile)!).entries;
}

const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** Every file and link under the sandbox root (program paths). */
function allFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(`/${path.relative(root, full)}`);
    }
  };
  walk(root);
  return out.sort();
}

/** Written by others than service-deploy (fixtures, systemd, npm's tree) or not ours to check (logs, the manifest itself). */
const NOT_OURS = [
  /^\/etc\/os-release$/,
  /^\/sys\//, // the machine's cgroup tree (systemd's, not a file the install writes)
  /^\/var\/lib\/systemd\/linger\//,
  /^\/var\/log\/service-deploy\//,
  /^\/var\/lib\/service-deploy\/manifest\.json$/,
  /^\/opt\/service-deploy\/plugins\/package\.json$/, // npm adds the dependency to it
  /^\/opt\/service-deploy\/node\/bin\/(npm|qmd|openclaw|_lib\.sh|\.openclaw-standin)$/, // the rest of the (stand-in) Node tarball
  /^\/opt\/service-deploy\/openclaw-current$/, // the link to the package that runs: doctor's agent-runtime checks its target (it moves with an upgrade and a rollback)
  /^\/opt\/service-deploy\/qmd\/node_modules\/\.bin\/_lib\.sh$/, // the stand-in qmd's helper
  /^\/opt\/service-deploy\/qmd\/package\.json$/, // npm records the dependencies in it
  // npm's trees from the shipped locks (doctor's runtime-trees compares them with the locks;
  // the files each program runs from are recorded) and OpenClaw's project package.json, as shipped.
  /^\/opt\/service-deploy\/(openclaw|qmd)\/node_modules\//,
  /^\/opt\/service-deploy\/openclaw\/package\.json$/,
  /^\/root\/\.(cache|config)\/qmd\//, // QMD's own index and collection config (its data, checked by doctor's memory check)
  /^\/(etc\/logrotate\.d\/nginx|usr\/sbin\/logrotate)$/, // the packages' own files (the apt-get stand-in writes them)
];

describe('install manifest', () => {
  let sb: Sandbox;

  it('a channel install records every file it writes: type, owner, mode, SHA-256; 0600; secrets marked', async () => {
    sb = await makeSandbox();
    sandboxes.push(sb);
    const run = await sb.install([...FIRST_INSTALL.args, '--channel'], FIRST_INSTALL.env);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(sb.stat(LAYOUT.manifestFile)!.mode & 0o777).toBe(0o600);
    const entries = manifest(sb);
    const byPath = new Map(entries.map((e) => [e.path, e]));

    const files = allFiles(sb.root).filter((p) => !NOT_OURS.some((re) => re.test(p)));
    expect(files.filter((p) => !byPath.has(p)), 'files the install wrote but did not record').toEqual([]);

    for (const e of entries) {
      const real = path.join(sb.root, e.path);
      const st = fs.lstatSync(real);
      expect(e.type, e.path).toBe(st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : 'file');
      expect(e.mode, e.path).toBe(`0${(st.mode & 0o777).toString(8)}`);
      expect([e.uid, e.gid], e.path).toEqual([0, 0]);
      if (e.check === 'sha256' && e.type === 'file') expect(e.sha256, e.path).toBe(sha256(real));
      expect(e.secret, e.path).toBe(e.type === 'file' && (st.mode & 0o077) === 0);
    }
    expect(byPath.get(LAYOUT.runtimeConfig)).toMatchObject({ check: 'structure', secret: true });
    expect(byPath.get(LAYOUT.runtimeConfig)!.sha256).toBeUndefined();
    for (const secret of [LAYOUT.answersFile, LAYOUT.channelEnv, LAYOUT.tlsKey, LAYOUT.nginxSite]) expect(byPath.get(secret)?.secret, secret).toBe(true);
    expect(byPath.get(LAYOUT.binary)).toMatchObject({ mode: '0755', sha256: sha256(BINARY) });
    // OpenClaw's project: the lock and the package's files; npm links programs into .bin/: recorded as links with their targets.
    expect(byPath.get(`${LAYOUT.openclawProject}/package-lock.json`)).toMatchObject({ type: 'file', check: 'sha256' });
    expect(byPath.get(`${LAYOUT.openclawProject}/node_modules/openclaw/openclaw.mjs`)).toMatchObject({ type: 'file', mode: '0755' });
    expect(byPath.get(LAYOUT.qmdBin)).toMatchObject({ type: 'symlink' });
    expect(byPath.get(LAYOUT.stateDir)).toMatchObject({ type: 'directory', mode: '0700', check: 'metadata' });
    // The manifest holds hashes, never a secret value.
    const text = sb.read(LAYOUT.manifestFile)!;
    for (const secret of Object.values(FIRST_INSTALL.env)) expect(text).not.toContain(secret);
  }, 180_000);

  it('a re-run with nothing to do leaves the manifest byte for byte (no write)', async () => {
    const before = fs.statSync(path.join(sb.root, LAYOUT.manifestFile));
    const run = await sb.install([...FIRST_INSTALL.args, '--channel', '--json'], FIRST_INSTALL.env);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(JSON.parse(String(run.stdout)).recap.changed).toBe(0);
    const after = fs.statSync(path.join(sb.root, LAYOUT.manifestFile));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  }, 60_000);

  it('a program file changed since npm wrote it is reinstalled by the next run, and recorded again', async () => {
    const entry = `${LAYOUT.openclawProject}/node_modules/openclaw/openclaw.mjs`;
    fs.writeFileSync(path.join(sb.root, entry), 'console.log("tampered")\n');
    const run = await sb.install([...FIRST_INSTALL.args, '--channel', '--json'], FIRST_INSTALL.env);
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const step = JSON.parse(String(run.stdout)).steps.find((s: { id: string }) => s.id === 'agent-runtime');
    expect(step.status).toBe('changed');
    expect(JSON.stringify(step.changes)).toContain(`reinstall OpenClaw`);
    expect(sb.read(entry)).toBe(fs.readFileSync(path.join(REPO, 'test/helpers/standins/openclaw'), 'utf8')); // npm (the stand-in) unpacked it again
    expect(manifest(sb).find((e) => e.path === entry)!.sha256).toBe(sha256(path.join(sb.root, entry)));
    // Installed afresh beside and renamed in: nothing left beside the project.
    expect(fs.readdirSync(path.join(sb.root, 'opt/service-deploy')).filter((n) => n !== 'openclaw' && n.startsWith('openclaw') && n !== 'openclaw-current')).toEqual([]);
  }, 60_000);

  it('the guard records what it restores', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.channelDropIn));
    const guard = await execa(BINARY, ['guard'], { env: sb.env(), extendEnv: false, reject: false });
    expect(guard.exitCode, String(guard.stderr)).toBe(0);
    const entry = manifest(sb).find((e) => e.path === LAYOUT.channelDropIn)!;
    expect(entry.sha256).toBe(sha256(path.join(sb.root, LAYOUT.channelDropIn)));
  });

  it('is kept in the reset backup and removed by the reset', async () => {
    const reset = await sb.install(['--reset-clean', '--yes', '--json']);
    expect(reset.exitCode, String(reset.stderr)).toBe(0);
    const archive = path.join(sb.root, JSON.parse(String(reset.stdout)).backup);
    const names: string[] = [];
    await tar.t({ file: archive, onReadEntry: (e) => names.push(e.path) });
    expect(names).toContain(LAYOUT.manifestFile.slice(1));
    expect(sb.stat(LAYOUT.manifestFile)).toBeUndefined();
  }, 60_000);
});

describe('manifest file', () => {
  it('round-trips, and refuses entries outside the places service-deploy writes, setuid or world-writable modes', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const host = createHost({ env: sb.env(), quiet: true });
    const good: ManifestEntry = { path: LAYOUT.guardCron, type: 'file', uid: 0, gid: 0, mode: 0o644, check: 'sha256', secret: false, sha256: 'a'.repeat(64), size: 3 };
    fs.mkdirSync(path.join(sb.root, LAYOUT.stateDir), { recursive: true });
    const put = (entries: ManifestEntry[]) => fs.writeFileSync(path.join(sb.root, LAYOUT.manifestFile), manifestContent(entries));

    put([good]);
    expect((await readManifest(host, MANAGED_PLACES)).entries?.get(LAYOUT.guardCron)).toEqual(good);
    // A reader that acts on the entries (doctor, uninstall) names the places its writers declare.
    put([good, { ...good, path: '/etc/shadow' }]);
    expect((await readManifest(host, MANAGED_PLACES)).problem).toMatch(/entries\.1\.path \(\/etc\/shadow\): not a place service-deploy writes/);
    put([{ ...good, path: `${LAYOUT.runtimeDir}/../../etc/shadow` }]);
    expect((await readManifest(host)).problem).toMatch(/not a place service-deploy writes/);
    put([{ ...good, mode: 0o4755 }]);
    expect((await readManifest(host)).problem).toMatch(/no setuid, setgid, sticky or world-writable mode/);
    put([{ ...good, mode: 0o666 }]);
    expect((await readManifest(host)).problem).toMatch(/world-writable/);
    fs.writeFileSync(path.join(sb.root, LAYOUT.manifestFile), '{ not json');
    expect((await readManifest(host)).problem).toMatch(/is not JSON/);

    // A writer starts afresh from a manifest it cannot read, and writes it 0600.
    fs.mkdirSync(path.join(sb.root, '/etc/cron.d'), { recursive: true });
    fs.writeFileSync(path.join(sb.root, LAYOUT.guardCron), 'x\n');
    await recordWrittenFile(host, LAYOUT.guardCron, 'x\n', { mode: 0o644 });
    const read = await readManifest(host);
    expect([...read.entries!.keys()]).toEqual([LAYOUT.guardCron]);
    expect(fs.statSync(path.join(sb.root, LAYOUT.manifestFile)).mode & 0o777).toBe(0o600);
  });

  it('an entry outside the places stays with a writer that records something else, and the install drops it', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const install = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
    expect(install.exitCode, String(install.stderr)).toBe(0);
    const host = createHost({ env: sb.env(), quiet: true });
    const entries = manifest(sb) as unknown as Array<Record<string, unknown>>;
    const planted = { ...entries.find((e) => e.path === LAYOUT.guardCron)!, path: '/etc/shadow' };
    fs.writeFileSync(path.join(sb.root, LAYOUT.manifestFile), JSON.stringify({ schemaVersion: 1, entries: [...entries, planted] }));
    expect((await readManifest(host, MANAGED_PLACES)).problem).toMatch(/\(\/etc\/shadow\): not a place service-deploy writes/);
    // The guard records what it restores without losing the rest (or the planted entry: not its to judge).
    await recordWrittenFile(host, LAYOUT.guardCron, sb.read(LAYOUT.guardCron)!, { mode: 0o644 });
    expect(manifest(sb).map((e) => e.path)).toEqual([...entries.map((e) => e.path as string), '/etc/shadow'].sort());
    // The next install leaves it out, with a warning, and doctor reads every other entry again.
    const again = await sb.install([]);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(String(again.stderr)).toMatch(/\/etc\/shadow: not a place service-deploy writes; left out of the manifest/);
    const read = await readManifest(host, MANAGED_PLACES);
    expect(read.problem).toBeUndefined();
    expect([...read.entries!.keys()]).toEqual(entries.map((e) => e.path));
  });

  it('read twice, the same file is parsed once, each reader gets its own map; a changed file is read anew', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const host = createHost({ env: sb.env(), quiet: true });
    const good: ManifestEntry = { path: LAYOUT.guardCron, type: 'file', uid: 0, gid: 0, mode: 0o644, check: 'sha256', secret: false, sha256: 'a'.repeat(64), size: 3 };
    fs.mkdirSync(path.join(sb.root, LAYOUT.stateDir), { recursive: true });
    fs.writeFileSync(path.join(sb.root, LAYOUT.manifestFile), manifestContent([good]));
    const first = await readManifest(host);
    first.entries!.delete(LAYOUT.guardCron);
    first.entries!.set(LAYOUT.guardScript, { ...good, path: LAYOUT.guardScript });
    const second = await readManifest(host);
    expect([...second.entries!.keys()]).toEqual([LAYOUT.guardCron]);
    fs.writeFileSync(path.join(sb.root, LAYOUT.manifestFile), manifestContent([{ ...good, mode: 0o600 }]));
    expect((await readManifest(host)).entries!.get(LAYOUT.guardCron)!.mode).toBe(0o600);
    fs.writeFileSync(path.join(sb.root, LAYOUT.manifestFile), manifestContent([{ ...good, mode: 0o4755 }]));
    expect((await readManifest(host)).problem).toMatch(/no setuid/);
  });

  it('records a symbolic link (as npm links a program into bin/) with its target, and reads it back', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const host = createHost({ env: sb.env(), quiet: true });
    const bin = path.join(sb.root, LAYOUT.openclawBin);
    fs.mkdirSync(path.dirname(bin), { recursive: true });
    fs.symlinkSync('../lib/node_modules/openclaw/openclaw.mjs', bin);
    await recordFromDisk(host, LAYOUT.openclawBin);
    const read = await readManifest(host);
    expect(read.problem).toBeUndefined();
    expect(read.entries?.get(LAYOUT.openclawBin)).toMatchObject({ type: 'symlink', target: '../lib/node_modules/openclaw/openclaw.mjs' });
  });

  it('keeps every record when many are made at once (one writer, in order)', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const host = createHost({ env: sb.env(), quiet: true });
    const dir = `${LAYOUT.channelPluginDir}`;
    fs.mkdirSync(path.join(sb.root, dir), { recursive: true });
    const names = Array.from({ length: 20 }, (_, i) => `${dir}/f${i}.js`);
    for (const n of names) fs.writeFileSync(path.join(sb.root, n), n);
    await Promise.all(names.map((n) => recordWrittenFile(host, n, n, { mode: 0o644 })));
    expect([...(await readManifest(host)).entries!.keys()].sort()).toEqual([...names].sort());
  });
});
