import { execa } from 'execa';
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, cleanEnv } from './helpers/binary.js';
import { makeTestCa, serveDirectory, type StaticServer, type TestCa } from './helpers/https-server.js';
import { tempDir } from './helpers/tmp.js';

const REPO_SCRIPT = fs.readFileSync(path.join(REPO, 'install.sh'), 'utf8');
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const FILE = `service-deploy-linux-${ARCH}`;
const KEY_LINE = /^RELEASE_PUBLIC_KEY="[^"]*"$/m;
/** By full path: some tests give the script a PATH of their own. */
const BASH = execFileSync('sh', ['-c', 'command -v bash'], { encoding: 'utf8' }).trim();

/** A stand-in "binary": records its arguments. */
function fakeBinary(marker: string, tag = ''): string {
  return `#!/bin/sh\n# ${tag}\nprintf '%s\\n' "$@" > "${marker}"\n`;
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A throwaway release key (ECDSA P-256, as the build's): the private half signs, the public half goes into install.sh. */
function releaseKey(): { privateKey: KeyObject; publicB64: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { privateKey, publicB64: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') };
}

/** What the build writes as SHA256SUMS.sig: a DER ECDSA signature over the SHA-256 of the sums. */
function signSums(sums: string, key: KeyObject): Buffer {
  return sign('sha256', Buffer.from(sums), { key, dsaEncoding: 'der' });
}

/** The fixed start of a P-256 public key's SubjectPublicKeyInfo in base64 (the curve's OIDs and the 0x04 point prefix). */
const P256_SPKI_PREFIX = 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE';

function xz(data: string | Buffer): Buffer {
  return execFileSync('xz', ['-1', '-c'], { input: data });
}

let ca: TestCa;
let server: StaticServer;
let served: string;
let marker: string;
let ours: ReturnType<typeof releaseKey>;
let other: ReturnType<typeof releaseKey>;
let SCRIPT: string;

interface Release {
  binary: string | Buffer;
  /** What is served as the .xz (default: the binary, compressed). */
  packed?: Buffer;
  /** SHA256SUMS as signed (default: the true sums of what is served). */
  sums?: string;
  /** Changes SHA256SUMS after it was signed. */
  tamperSums?: (sums: string) => string;
  /** Who signs: our key (default), another key, or nobody. */
  signer?: 'ours' | 'other' | 'none';
  /** Served as SHA256SUMS.sig instead of a signature (e.g. an older release's format). */
  signature?: Buffer;
}

function publish(release: Release): void {
  for (const f of fs.readdirSync(served)) fs.rmSync(path.join(served, f));
  const packed = release.packed ?? xz(release.binary);
  fs.writeFileSync(path.join(served, FILE), release.binary);
  fs.writeFileSync(path.join(served, `${FILE}.xz`), packed);
  const sums = release.sums ?? `${sha256(release.binary)}  ${FILE}\n${sha256(packed)}  ${FILE}.xz\n`;
  const signer = release.signer ?? 'ours';
  if (release.signature) fs.writeFileSync(path.join(served, 'SHA256SUMS.sig'), release.signature);
  else if (signer !== 'none') fs.writeFileSync(path.join(served, 'SHA256SUMS.sig'), signSums(sums, (signer === 'ours' ? ours : other).privateKey));
  fs.writeFileSync(path.join(served, 'SHA256SUMS'), release.tamperSums ? release.tamperSums(sums) : sums);
}

function sandbox(os = 'ID=ubuntu\nVERSION_ID="24.04"\n'): string {
  const root = tempDir('sd-installsh-');
  fs.mkdirSync(path.join(root, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(root, 'etc/os-release'), os);
  return root;
}

function runInstaller(root: string, args: string[] = [], script = SCRIPT, extraEnv: Record<string, string> = {}) {
  return execa(BASH, ['-s', '--', ...args], {
    input: script,
    reject: false,
    extendEnv: false,
    env: cleanEnv({ SERVICE_SETUP_URL: server.url, SERVICE_CA_BUNDLE: ca.caFile, SERVICE_DEPLOY_ROOT: root, ...extraEnv }),
  });
}

/** A PATH holding every tool install.sh uses except xz. */
function pathWithoutXz(): string {
  const dir = tempDir('sd-noxz-');
  for (const tool of ['curl', 'sha256sum', 'openssl', 'uname', 'mktemp', 'install', 'cut', 'dirname', 'mv', 'rm', 'id', 'cat', 'sh']) {
    const real = execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    fs.symlinkSync(real, path.join(dir, tool));
  }
  return dir;
}

/** Refused: exit non-zero, the message, nothing written under the root, the binary never ran. */
async function expectRefused(root: string, message: string | RegExp, script = SCRIPT) {
  fs.rmSync(marker, { force: true });
  const result = await runInstaller(root, ['--yes'], script);
  expect(result.exitCode, result.stderr).not.toBe(0);
  expect(result.stderr).toMatch(message);
  expect(fs.existsSync(path.join(root, 'usr')), 'nothing written to /usr/local/bin').toBe(false);
  expect(fs.existsSync(marker), 'the binary did not run').toBe(false);
  return result;
}

beforeAll(async () => {
  ca = makeTestCa();
  served = tempDir('sd-served-');
  marker = path.join(tempDir(), 'ran-with-args');
  server = await serveDirectory(served, ca);
  ours = releaseKey();
  other = releaseKey();
  SCRIPT = REPO_SCRIPT.replace(KEY_LINE, `RELEASE_PUBLIC_KEY="${ours.publicB64}"`);
});
afterAll(async () => server?.close());

describe('install.sh', () => {
  it('is shellcheck clean', async () => {
    const which = await execa('sh', ['-c', 'command -v shellcheck'], { reject: false });
    if (which.exitCode !== 0) return expect.soft(which.exitCode, 'shellcheck not installed').toBe(0);
    const result = await execa('shellcheck', ['-S', 'style', path.join(REPO, 'install.sh')], { reject: false });
    expect(result.stdout).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it('verifies the signature, downloads the .xz, checks it and what it unpacks to, installs and runs the binary with the arguments', async () => {
    publish({ binary: fakeBinary(marker) });
    const root = sandbox();
    const before = server.requests.length;
    const result = await runInstaller(root, ['--reset-clean', '--yes', 'two words']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toContain('installed');
    expect(ours.publicB64.startsWith(P256_SPKI_PREFIX)).toBe(true);
    expect(result.stderr).toContain(`SHA256SUMS: signature verified (release key ${ours.publicB64.slice(36, 48)}...)`);
    expect(server.requests.slice(before)).toEqual(['/SHA256SUMS', '/SHA256SUMS.sig', `/${FILE}.xz`]);
    const installed = path.join(root, 'usr/local/bin/service-deploy');
    expect(fs.statSync(installed).mode & 0o777).toBe(0o755);
    expect(fs.readFileSync(installed, 'utf8')).toBe(fakeBinary(marker));
    expect(fs.readFileSync(marker, 'utf8')).toBe('--reset-clean\n--yes\ntwo words\n');
  });

  it('where xz is missing, downloads the plain binary instead (and still checks it)', async () => {
    publish({ binary: fakeBinary(marker) });
    const root = sandbox();
    const before = server.requests.length;
    const result = await runInstaller(root, ['--version'], SCRIPT, { PATH: pathWithoutXz() });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toContain('xz is not installed');
    expect(server.requests.slice(before)).toEqual(['/SHA256SUMS', '/SHA256SUMS.sig', `/${FILE}`]);
    expect(fs.readFileSync(marker, 'utf8')).toBe('--version\n');

    publish({ binary: fakeBinary(marker), sums: `${'0'.repeat(64)}  ${FILE}\n${sha256(xz(fakeBinary(marker)))}  ${FILE}.xz\n` });
    fs.rmSync(marker, { force: true });
    const tampered = await runInstaller(sandbox(), [], SCRIPT, { PATH: pathWithoutXz() });
    expect(tampered.exitCode).not.toBe(0);
    expect(tampered.stderr).toContain(`checksum mismatch for ${FILE}`);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('skips the download when the installed binary is already current (after checking the signature)', async () => {
    publish({ binary: fakeBinary(marker) });
    const root = sandbox();
    await runInstaller(root);
    const before = server.requests.length;
    const again = await runInstaller(root, ['--version']);
    expect(again.exitCode).toBe(0);
    expect(again.stderr).toContain('already the current version');
    expect(server.requests.slice(before)).toEqual(['/SHA256SUMS', '/SHA256SUMS.sig']);
    expect(fs.readFileSync(marker, 'utf8')).toBe('--version\n');
  });

  it('refuses a tampered binary: a compressed download that does not match its checksum', async () => {
    const binary = fakeBinary(marker);
    const evil = xz(fakeBinary(marker, 'evil'));
    publish({ binary, sums: `${sha256(binary)}  ${FILE}\n${sha256(xz(binary))}  ${FILE}.xz\n`, packed: evil });
    await expectRefused(sandbox(), `checksum mismatch for ${FILE}.xz`);
  });

  it('refuses a tampered binary: a compressed download that matches its checksum but unpacks to another binary', async () => {
    const binary = fakeBinary(marker);
    const evil = xz(fakeBinary(marker, 'evil'));
    // The signed sums name the evil .xz, but the binary's own checksum is the real one.
    publish({ binary, packed: evil, sums: `${sha256(binary)}  ${FILE}\n${sha256(evil)}  ${FILE}.xz\n` });
    await expectRefused(sandbox(), `checksum mismatch for ${FILE} (unpacked from ${FILE}.xz)`);
  });

  it('refuses tampered sums: a checksum changed after signing', async () => {
    const evil = fakeBinary(marker, 'evil');
    const evilXz = xz(evil);
    // Whoever controls the server serves their binary and rewrites SHA256SUMS to match.
    publish({ binary: evil, packed: evilXz, tamperSums: () => `${sha256(evil)}  ${FILE}\n${sha256(evilXz)}  ${FILE}.xz\n`, sums: `${'1'.repeat(64)}  ${FILE}\n${'2'.repeat(64)}  ${FILE}.xz\n` });
    await expectRefused(sandbox(), /SHA256SUMS from .* is not signed by the service-deploy release key.*refusing/);
  });

  it('refuses a release without a signature', async () => {
    publish({ binary: fakeBinary(marker), signer: 'none' });
    await expectRefused(sandbox(), /SHA256SUMS\.sig: releases are signed, and without the signature nothing is installed/);
  });

  it('refuses a release signed by another key', async () => {
    publish({ binary: fakeBinary(marker), signer: 'other' });
    await expectRefused(sandbox(), /is not signed by the service-deploy release key/);
  });

  it('refuses a signature in another form: raw Ed25519 bytes (what builds made before ECDSA), the DER signature cut short, an empty file', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const binary = fakeBinary(marker);
    const sums = `${sha256(binary)}  ${FILE}\n${sha256(xz(binary))}  ${FILE}.xz\n`;
    const good = signSums(sums, ours.privateKey);
    for (const signature of [sign(null, Buffer.from(sums), privateKey), good.subarray(0, good.length - 1), Buffer.alloc(0)]) {
      publish({ binary, sums, signature });
      await expectRefused(sandbox(), /is not signed by the service-deploy release key/);
    }
  });

  it('checks the signature with one openssl command that OpenSSL 1.1.1 (Debian 11) knows as well as 3.x: dgst -sha256 -verify', () => {
    // Every openssl command in the script (comments dropped, continuation lines joined).
    const code = REPO_SCRIPT.split('\n').filter((line) => !/^\s*#/.test(line)).join('\n').replace(/\\\n\s*/g, ' ');
    const calls = [...code.matchAll(/(?:\$\(|^\s*|[;&|!]\s*)openssl\s+([^\n;|)]*)/gm)].map((m) => m[1]!.trim());
    expect(calls.map((c) => c.split(/\s+/)[0])).toEqual(['dgst']);
    const options = calls[0]!.split(/\s+/).filter((w) => w.startsWith('-'));
    expect(options).toEqual(['-sha256', '-verify', '-signature']);
    // `openssl dgst` options of OpenSSL 1.1.1 (its manual page); -rawin, -pkeyopt, -sigfile and
    // the rest of pkeyutl's raw mode are OpenSSL 3 only.
    const dgst111 = ['-help', '-c', '-r', '-hex', '-binary', '-digest', '-out', '-sign', '-passin', '-verify', '-prverify', '-signature', '-keyform', '-sigopt', '-hmac', '-mac', '-macopt', '-rand', '-writerand', '-engine', '-engine_impl', '-fips-fingerprint', '-list', '-sha256'];
    for (const option of options) expect(dgst111, `${option} is not an OpenSSL 1.1.1 dgst option`).toContain(option);
    expect(REPO_SCRIPT).not.toMatch(/pkeyutl|-rawin|-sigfile/);
  });

  it("the repository's own install.sh (no release key in it) refuses, naming why", async () => {
    publish({ binary: fakeBinary(marker) });
    expect(REPO_SCRIPT).toMatch(/^RELEASE_PUBLIC_KEY=""$/m);
    await expectRefused(sandbox(), /this install.sh has no release key/, REPO_SCRIPT);
  });

  it('does nothing at all when the download is cut short, wherever it is cut', async () => {
    publish({ binary: fakeBinary(marker) });
    // Cut at many points, including mid-way through the last line ("main \"$@\"").
    const cuts = new Set<number>([SCRIPT.length - 2, SCRIPT.length - 8, SCRIPT.lastIndexOf('\nmain ') + 1]);
    for (let i = 1; i <= 12; i++) cuts.add(Math.floor((SCRIPT.length * i) / 13));
    for (const cut of cuts) {
      fs.rmSync(marker, { force: true });
      const before = server.requests.length;
      const root = sandbox();
      await runInstaller(root, [], SCRIPT.slice(0, cut));
      expect(server.requests.length, `cut at ${cut}`).toBe(before);
      expect(fs.existsSync(path.join(root, 'usr')), `cut at ${cut}`).toBe(false);
      expect(fs.existsSync(marker), `cut at ${cut}`).toBe(false);
    }
  });

  it('refuses an unsupported OS unless SERVICE_ALLOW_UNSUPPORTED_OS=1', async () => {
    publish({ binary: fakeBinary(marker) });
    const debian = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n';
    const refused = await runInstaller(sandbox(debian));
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('debian 12 is not supported');
    expect(refused.stderr).toContain('SERVICE_ALLOW_UNSUPPORTED_OS=1');

    const allowed = await runInstaller(sandbox(debian), ['--help'], SCRIPT, { SERVICE_ALLOW_UNSUPPORTED_OS: '1' });
    expect(allowed.exitCode).toBe(0);
    expect(allowed.stderr).toContain('not supported');
  });

  it('accepts Ubuntu 22.04 too, and refuses a plain-http setup URL', async () => {
    publish({ binary: fakeBinary(marker) });
    const ok = await runInstaller(sandbox('ID=ubuntu\nVERSION_ID="22.04"\n'));
    expect(ok.exitCode).toBe(0);
    const http = await runInstaller(sandbox(), [], SCRIPT, { SERVICE_SETUP_URL: server.url.replace('https', 'http') });
    expect(http.exitCode).not.toBe(0);
    expect(http.stderr).toContain('must be an https:// URL');
  });

  describe('a machine without libatomic.so.1 (Node.js 25 and later needs it; minimal images lack it)', () => {
    /** A binary that, like the real one there, cannot start unless LD_LIBRARY_PATH holds libatomic.so.1; it records its run. */
    const needsLibatomic = (exitCode = 0) =>
      [
        '#!/bin/sh',
        'if [ ! -f "${LD_LIBRARY_PATH:-/nonexistent}/libatomic.so.1" ]; then',
        '  echo "$0: error while loading shared libraries: libatomic.so.1: cannot open shared object file: No such file or directory" >&2; exit 127',
        'fi',
        'if [ "$*" = --version ]; then echo 0.1.0; exit 0; fi',
        `printf '%s\\n' "$@" > "${marker}"`,
        // Where the library came from: its folder's mode (0700: root's alone) and content.
        `{ stat -c %a "$LD_LIBRARY_PATH/../../../.."; cat "$LD_LIBRARY_PATH/libatomic.so.1"; printf '%s\\n' "$LD_LIBRARY_PATH"; } > "${marker}.lib"`,
        `exit ${exitCode}`,
        '',
      ].join('\n');

    /** Stand-in apt-get (records its calls): `download` copies the package into the current folder, after `update` only when `lists` is 'stale'. */
    function aptTools(lists: 'fresh' | 'stale' | 'broken'): { dir: string; calls: () => string[] } {
      const dir = tempDir('sd-apt-');
      const stage = path.join(tempDir('sd-deb-'), 'pkg');
      const libDir = path.join(stage, 'usr/lib/x86_64-linux-gnu');
      fs.mkdirSync(libDir, { recursive: true });
      fs.mkdirSync(path.join(stage, 'DEBIAN'));
      fs.writeFileSync(path.join(libDir, 'libatomic.so.1'), 'the distribution\'s libatomic\n');
      fs.writeFileSync(path.join(stage, 'DEBIAN/control'), 'Package: libatomic1\nVersion: 12.2.0-14\nArchitecture: all\nMaintainer: test <t@invalid>\nDescription: stand-in\n');
      const deb = path.join(dir, 'libatomic1_12.2.0-14_all.deb');
      execFileSync('dpkg-deb', ['--root-owner-group', '--build', stage, deb], { stdio: 'ignore' });
      const log = path.join(dir, 'calls.log');
      fs.writeFileSync(
        path.join(dir, 'apt-get'),
        [
          '#!/bin/sh',
          `echo "$*" >> "${log}"`,
          'for a in "$@"; do last="$a"; done',
          `case "$*" in *" update") touch "${dir}/updated"; exit 0 ;; esac`,
          `if [ "${lists}" = broken ] || { [ "${lists}" = stale ] && [ ! -e "${dir}/updated" ]; }; then echo "E: Unable to locate package $last" >&2; exit 100; fi`,
          `cp "${deb}" .`,
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
      return { dir, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []) };
    }

    it('runs the binary with the distribution\'s copy of the library from its private temp folder: nothing installed, the folder gone afterwards', async () => {
      publish({ binary: needsLibatomic() });
      const apt = aptTools('fresh');
      const root = sandbox();
      fs.rmSync(marker, { force: true });
      const result = await runInstaller(root, ['install', '--check'], SCRIPT, { PATH: `${apt.dir}:${process.env.PATH}` });
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stderr).toContain('service-deploy needs libatomic.so.1 (Node.js), which this machine lacks: this run uses the copy in the distribution\'s libatomic1 package; the install adds the package');
      expect(fs.readFileSync(marker, 'utf8')).toBe('install\n--check\n');
      const [mode, library, libraryDir] = fs.readFileSync(`${marker}.lib`, 'utf8').trim().split('\n');
      expect(mode).toBe('700');
      expect(library).toBe("the distribution's libatomic");
      expect(fs.existsSync(libraryDir!), 'the temp folder is removed after the run').toBe(false);
      // Fetched, never installed: no lock taken, no package manager change (the install adds the package, after its preflight).
      expect(apt.calls()).toEqual(['-q -o APT::Sandbox::User=root download libatomic1']);
    });

    it('package lists missing or stale (a fresh image): fetched once, then the download; the binary\'s exit code is install.sh\'s', async () => {
      publish({ binary: needsLibatomic(2) });
      const apt = aptTools('stale');
      const result = await runInstaller(sandbox(), ['install'], SCRIPT, { PATH: `${apt.dir}:${process.env.PATH}` });
      expect(result.exitCode, result.stderr).toBe(2);
      expect(fs.readFileSync(marker, 'utf8')).toBe('install\n');
      expect(apt.calls()).toEqual(['-q -o APT::Sandbox::User=root download libatomic1', '-q -o DPkg::Lock::Timeout=300 update', '-q -o APT::Sandbox::User=root download libatomic1']);
    });

    it('no package to be had: refused, saying what to install; the binary never ran', async () => {
      publish({ binary: needsLibatomic() });
      const apt = aptTools('broken');
      fs.rmSync(marker, { force: true });
      const result = await runInstaller(sandbox(), ['install'], SCRIPT, { PATH: `${apt.dir}:${process.env.PATH}` });
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toContain('could not fetch the package libatomic1 with apt-get download: install it (apt-get install libatomic1) and run install.sh again');
      expect(fs.existsSync(marker)).toBe(false);
    });

    it('a binary that cannot start for another reason is refused, with the loader\'s words', async () => {
      publish({ binary: '#!/bin/sh\necho "error while loading shared libraries: libfoo.so.9: cannot open shared object file" >&2\nexit 127\n' });
      const result = await runInstaller(sandbox(), ['install']);
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toMatch(/usr\/local\/bin\/service-deploy does not start on this machine: error while loading shared libraries: libfoo\.so\.9/);
    });
  });

  it("installs and runs the real build: dist/'s signed SHA256SUMS, .xz and install.sh", async () => {
    for (const f of fs.readdirSync(served)) fs.rmSync(path.join(served, f));
    for (const f of ['SHA256SUMS', 'SHA256SUMS.sig', FILE, `${FILE}.xz`]) {
      if (fs.existsSync(path.join(REPO, 'dist', f))) fs.copyFileSync(path.join(REPO, 'dist', f), path.join(served, f));
    }
    const published = fs.readFileSync(path.join(REPO, 'dist/install.sh'), 'utf8');
    expect(published.replace(KEY_LINE, '')).toBe(REPO_SCRIPT.replace(KEY_LINE, ''));
    // An ECDSA P-256 public key (SubjectPublicKeyInfo, named curve, uncompressed point).
    expect(published).toMatch(new RegExp(`^RELEASE_PUBLIC_KEY="${P256_SPKI_PREFIX}[A-Za-z0-9+/]{86}=="$`, 'm'));
    const result = await runInstaller(sandbox(), ['--version'], published);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version);
  }, 120_000);

  it('names the same default setup URL as the embedded service profile', () => {
    const profile = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/service-profile.json'), 'utf8'));
    expect(REPO_SCRIPT).toContain(`DEFAULT_SETUP_URL="${profile.setupUrl}"`);
  });
});
