import { execa } from 'execa';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, cleanEnv } from './helpers/binary.js';
import { makeTestCa, serveDirectory, type StaticServer, type TestCa } from './helpers/https-server.js';
import { tempDir } from './helpers/tmp.js';

const SCRIPT = fs.readFileSync(path.join(REPO, 'install.sh'), 'utf8');
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';

/** A stand-in "binary": records its arguments and whether its stdin is the pipe. */
function fakeBinary(marker: string): string {
  return `#!/bin/sh\nprintf '%s\\n' "$@" > "${marker}"\n`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

let ca: TestCa;
let server: StaticServer;
let served: string;
let marker: string;

function publish(binary: string, sums?: string): void {
  fs.writeFileSync(path.join(served, `service-deploy-linux-${ARCH}`), binary);
  fs.writeFileSync(path.join(served, 'SHA256SUMS'), sums ?? `${sha256(binary)}  service-deploy-linux-${ARCH}\n`);
}

function sandbox(os = 'ID=ubuntu\nVERSION_ID="24.04"\n'): string {
  const root = tempDir('sd-installsh-');
  fs.mkdirSync(path.join(root, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(root, 'etc/os-release'), os);
  return root;
}

function runInstaller(root: string, args: string[] = [], script = SCRIPT, extraEnv: Record<string, string> = {}) {
  return execa('bash', ['-s', '--', ...args], {
    input: script,
    reject: false,
    extendEnv: false,
    env: cleanEnv({ SERVICE_SETUP_URL: server.url, SERVICE_CA_BUNDLE: ca.caFile, SERVICE_DEPLOY_ROOT: root, ...extraEnv }),
  });
}

beforeAll(async () => {
  ca = makeTestCa();
  served = tempDir('sd-served-');
  marker = path.join(tempDir(), 'ran-with-args');
  server = await serveDirectory(served, ca);
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

  it('downloads, verifies, installs and runs the binary with the arguments after --', async () => {
    publish(fakeBinary(marker));
    const root = sandbox();
    const result = await runInstaller(root, ['--reset-clean', '--yes', 'two words']);
    expect(result.stderr).toContain('installed');
    expect(result.exitCode).toBe(0);
    const installed = path.join(root, 'usr/local/bin/service-deploy');
    expect(fs.statSync(installed).mode & 0o777).toBe(0o755);
    expect(fs.readFileSync(marker, 'utf8')).toBe('--reset-clean\n--yes\ntwo words\n');
  });

  it('skips the download when the installed binary is already current', async () => {
    publish(fakeBinary(marker));
    const root = sandbox();
    await runInstaller(root);
    const before = server.requests.length;
    const again = await runInstaller(root, ['--version']);
    expect(again.exitCode).toBe(0);
    expect(again.stderr).toContain('already the current version');
    expect(server.requests.slice(before)).toEqual(['/SHA256SUMS']);
    expect(fs.readFileSync(marker, 'utf8')).toBe('--version\n');
  });

  it('refuses to install or run a binary whose checksum does not match', async () => {
    fs.rmSync(marker, { force: true });
    publish(fakeBinary(marker), `${'0'.repeat(64)}  service-deploy-linux-${ARCH}\n`);
    const root = sandbox();
    const result = await runInstaller(root, ['--yes']);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain('checksum mismatch');
    expect(fs.existsSync(path.join(root, 'usr/local/bin/service-deploy'))).toBe(false);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('does nothing at all when the download is cut short, wherever it is cut', async () => {
    publish(fakeBinary(marker));
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
    publish(fakeBinary(marker));
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
    publish(fakeBinary(marker));
    const ok = await runInstaller(sandbox('ID=ubuntu\nVERSION_ID="22.04"\n'));
    expect(ok.exitCode).toBe(0);
    const http = await runInstaller(sandbox(), [], SCRIPT, { SERVICE_SETUP_URL: server.url.replace('https', 'http') });
    expect(http.exitCode).not.toBe(0);
    expect(http.stderr).toContain('must be an https:// URL');
  });

  it('installs and runs the real binary', async () => {
    const real = fs.readFileSync(path.join(REPO, 'dist', `service-deploy-linux-${ARCH}`));
    fs.writeFileSync(path.join(served, `service-deploy-linux-${ARCH}`), real);
    fs.copyFileSync(path.join(REPO, 'dist/SHA256SUMS'), path.join(served, 'SHA256SUMS'));
    const result = await runInstaller(sandbox(), ['--version']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim()).toBe(JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version);
  });

  it('names the same default setup URL as the embedded service profile', () => {
    const profile = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/service-profile.json'), 'utf8'));
    expect(SCRIPT).toContain(`DEFAULT_SETUP_URL="${profile.setupUrl}"`);
  });
});
