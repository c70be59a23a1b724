// What the e2e harness serves to the container from loopback: the setup URL (install.sh
// + dist/), a Node release tarball with a real npm, the stand-in npm packages and a
// signed apt repository holding the stand-in mesh client. Slow pieces are cached under
// .cache/e2e/ (gitignored); cheap ones are made fresh in the run's work folder.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/binary.js';

// E2E_CACHE_DIR: another cache folder (an empty one measures a cold CI machine).
export const E2E_CACHE = process.env.E2E_CACHE_DIR ? path.resolve(process.env.E2E_CACHE_DIR) : path.join(REPO, '.cache', 'e2e');
const FIXTURES = path.join(REPO, 'test', 'e2e', 'fixtures');
const components = JSON.parse(fs.readFileSync(path.join(REPO, 'templates', 'components.json'), 'utf8'));
export const NODE_VERSION: string = components.node.version;
export const OPENCLAW_VERSION: string = components.openclaw.version;
/** The npm put into the test Node tarball (the official tarball bundles an npm 11). */
export const NPM_VERSION = '11.21.2';
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const DEB_ARCH = ARCH === 'arm64' ? 'arm64' : 'amd64';

/** PATH with the pinned Node (package.json) and its npm first. */
export function hostPath(): string {
  return `${path.join(REPO, 'node_modules', `node-linux-${ARCH}`, 'bin')}:${path.join(REPO, 'node_modules', '.bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`;
}

function run(cmd: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): string {
  return execFileSync(cmd, args, {
    cwd: options.cwd,
    env: options.env ?? { ...process.env, PATH: hostPath() },
    input: options.input,
    stdio: ['pipe', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  }).toString();
}

export function sha256File(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/**
 * Writes `file` through a temporary name, so a killed run never leaves half a cache entry.
 * Concurrent e2e jobs may make it at once: the first one to finish wins (a hard link never
 * replaces), and every job then uses that one file.
 */
function atomically(file: string, make: (tmp: string) => void): string {
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.partial-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  try {
    make(tmp);
    try {
      fs.linkSync(tmp, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return file;
}

/** `npm pack SPEC` into .cache/e2e/pkgs once; returns the tarball. */
export function packFromRegistry(spec: string, fileName: string): string {
  const dir = path.join(E2E_CACHE, 'pkgs');
  return atomically(path.join(dir, fileName), (tmp) => {
    const into = `${tmp}.d`;
    fs.mkdirSync(into, { recursive: true });
    try {
      run('npm', ['pack', spec, '--pack-destination', into, '--silent']);
      const [made] = fs.readdirSync(into).filter((f) => f.endsWith('.tgz'));
      if (!made) throw new Error(`npm pack ${spec} produced nothing`);
      fs.renameSync(path.join(into, made), tmp);
    } finally {
      fs.rmSync(into, { recursive: true, force: true });
    }
  });
}

/**
 * The Node release before this one's pin: what every server deployed by an earlier
 * service-deploy runs (the Node upgrade of test/e2e/node-upgrade.ts starts from it).
 */
export const PREVIOUS_NODE_VERSION = '24.21.0';

/**
 * The Node release tarballs the node-runtime step downloads (the pinned one and
 * PREVIOUS_NODE_VERSION), laid out like the official ones (bin/node, lib/node_modules/npm,
 * bin/npm and bin/npx symlinks) from the registry's Node binary of that release (the
 * pinned Node of node_modules where it is that release) and a real npm, with their
 * SHASUMS256.txt. Cached. Returns the folder to serve as SERVICE_NODE_DIST_URL.
 */
export function nodeDist(): string {
  const distRoot = path.join(E2E_CACHE, `node-dist-npm${NPM_VERSION}`);
  for (const version of [NODE_VERSION, PREVIOUS_NODE_VERSION]) nodeRelease(distRoot, version);
  return distRoot;
}

/** The Node binary of `version` for this machine: node_modules' when it is that release, else the registry's package. */
function nodeBinaryOf(version: string): string {
  const pinned = path.join(REPO, 'node_modules', `node-linux-${ARCH}`);
  if (JSON.parse(fs.readFileSync(path.join(pinned, 'package.json'), 'utf8')).version === version) return path.join(pinned, 'bin', 'node');
  const tgz = packFromRegistry(`node-linux-${ARCH}@${version}`, `node-linux-${ARCH}-${version}.tgz`);
  return atomically(path.join(E2E_CACHE, 'node-bin', `node-linux-${ARCH}-${version}`), (tmp) => {
    const dir = `${tmp}.d`;
    fs.mkdirSync(dir, { recursive: true });
    try {
      run('tar', ['-xzf', tgz, '-C', dir, '--no-same-owner', 'package/bin/node']);
      fs.renameSync(path.join(dir, 'package', 'bin', 'node'), tmp);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

function nodeRelease(distRoot: string, version: string): void {
  const name = `node-v${version}-linux-${ARCH}`;
  const versionDir = path.join(distRoot, `v${version}`);
  const tarball = path.join(versionDir, `${name}.tar.gz`);
  const sums = path.join(versionDir, 'SHASUMS256.txt');
  if (fs.existsSync(tarball) && fs.existsSync(sums)) return;
  const npmTgz = packFromRegistry(`npm@${NPM_VERSION}`, `npm-${NPM_VERSION}.tgz`);
  const node = nodeBinaryOf(version);
  fs.mkdirSync(versionDir, { recursive: true });
  atomically(tarball, (tmp) => {
    const stage = `${tmp}.stage`;
    fs.rmSync(stage, { recursive: true, force: true });
    const top = path.join(stage, name);
    fs.mkdirSync(path.join(top, 'bin'), { recursive: true });
    fs.mkdirSync(path.join(top, 'lib', 'node_modules', 'npm'), { recursive: true });
    fs.copyFileSync(node, path.join(top, 'bin', 'node'));
    fs.chmodSync(path.join(top, 'bin', 'node'), 0o755);
    run('tar', ['-xzf', npmTgz, '-C', path.join(top, 'lib', 'node_modules', 'npm'), '--strip-components=1', '--no-same-owner']);
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(top, 'bin', 'npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(top, 'bin', 'npx'));
    run('tar', ['-czf', tmp, '--owner=0', '--group=0', '-C', stage, name]);
    fs.rmSync(stage, { recursive: true, force: true });
  });
  // From the tarball that won (see atomically), through a temporary name.
  fs.writeFileSync(`${sums}.partial-${process.pid}`, `${sha256File(tarball)}  ${name}.tar.gz\n`);
  fs.renameSync(`${sums}.partial-${process.pid}`, sums);
}

/**
 * The folder served as SERVICE_SETUP_URL: the signed release the build made in dist/, as
 * a partner's setup server publishes it: install.sh (carrying the key that signed this
 * build), SHA256SUMS, SHA256SUMS.sig, the binaries and their .xz. Copied, so a rebuild
 * during the run cannot change them, and checked against SHA256SUMS after the copy.
 */
export function setupDir(work: string): string {
  const dir = path.join(work, 'setup');
  // E2E_DIST: test another build's dist/ folder (default: this checkout's).
  const dist = process.env.E2E_DIST ? path.resolve(process.env.E2E_DIST) : path.join(REPO, 'dist');
  fs.mkdirSync(dir, { recursive: true });
  const release = ['install.sh', 'SHA256SUMS', 'SHA256SUMS.sig', `service-deploy-linux-${ARCH}`, `service-deploy-linux-${ARCH}.xz`];
  for (const f of release) {
    if (!fs.existsSync(path.join(dist, f))) throw new Error(`${dist}/${f} is missing: run npm run build (the full build; --native makes no .xz)`);
  }
  for (const f of fs.readdirSync(dist).filter((n) => release.includes(n) || n.startsWith('service-deploy-linux-'))) {
    fs.copyFileSync(path.join(dist, f), path.join(dir, f));
  }
  for (const line of fs.readFileSync(path.join(dir, 'SHA256SUMS'), 'utf8').trim().split('\n')) {
    const [hash, name] = line.split(/\s+/);
    if (sha256File(path.join(dir, name!)) !== hash) throw new Error(`${dist}/${name} changed while it was copied (a rebuild?): run the e2e again`);
  }
  return dir;
}

/** npm tarballs of the stand-in packages (lossless-claw), made fresh from test/e2e/fixtures. QMD is the real one, from the registry. */
export function standinPackages(work: string): { losslessClaw: string } {
  const out = path.join(work, 'pkgs');
  fs.mkdirSync(out, { recursive: true });
  const pack = (fixture: string) => {
    const before = new Set(fs.readdirSync(out));
    run('npm', ['pack', path.join(FIXTURES, fixture), '--pack-destination', out, '--silent']);
    const made = fs.readdirSync(out).find((f) => !before.has(f));
    if (!made) throw new Error(`npm pack of fixture ${fixture} produced nothing`);
    return path.join(out, made);
  };
  return { losslessClaw: pack('lossless-claw') };
}

/**
 * A signed apt repository holding a dummy `tailscale` package (the CLI stand-in), laid
 * out like the real one: <root>/tailscale/debian/{<codename>.noarmor.gpg, dists/, pool/}.
 * SERVICE_MESH_APT_URL = <served root>/tailscale/ubuntu (the step swaps in /debian).
 * apt verifies InRelease against the key the install downloads (signed-by).
 */
export function meshAptRepo(work: string, codename: string): string {
  const root = path.join(work, 'apt');
  const repo = path.join(root, 'tailscale', 'debian');
  const version = '1.90.6~e2e';
  const stage = path.join(work, 'deb-stage');
  fs.mkdirSync(path.join(stage, 'DEBIAN'), { recursive: true });
  fs.mkdirSync(path.join(stage, 'usr', 'bin'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'tailscale', 'tailscale'), path.join(stage, 'usr', 'bin', 'tailscale'));
  fs.chmodSync(path.join(stage, 'usr', 'bin', 'tailscale'), 0o755);
  fs.copyFileSync(path.join(FIXTURES, 'tailscale', 'postrm'), path.join(stage, 'DEBIAN', 'postrm'));
  fs.chmodSync(path.join(stage, 'DEBIAN', 'postrm'), 0o755);
  fs.writeFileSync(
    path.join(stage, 'DEBIAN', 'control'),
    [
      'Package: tailscale',
      `Version: ${version}`,
      'Architecture: all',
      'Maintainer: service-deploy e2e <e2e@invalid>',
      'Section: net',
      'Priority: optional',
      'Description: e2e stand-in for the Tailscale mesh client CLI',
      ' Answers status, up, set, serve and logout from a local state file.',
      '',
    ].join('\n'),
  );
  const poolDir = path.join(repo, 'pool', 'main', 't', 'tailscale');
  fs.mkdirSync(poolDir, { recursive: true });
  const debName = `tailscale_${version.replace(/^\d+:/, '')}_all.deb`;
  const deb = path.join(poolDir, debName);
  run('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', stage, deb]);

  const control = run('dpkg-deb', ['-f', deb]).trimEnd();
  const packages = `${control}\nFilename: pool/main/t/tailscale/${debName}\nSize: ${fs.statSync(deb).size}\nSHA256: ${sha256File(deb)}\n\n`;
  const binDir = path.join(repo, 'dists', codename, 'main', `binary-${DEB_ARCH}`);
  fs.mkdirSync(binDir, { recursive: true });
  fs.writeFileSync(path.join(binDir, 'Packages'), packages);
  const rel = `main/binary-${DEB_ARCH}/Packages`;
  const release = [
    'Origin: service-deploy e2e',
    'Label: tailscale stand-in',
    `Suite: ${codename}`,
    `Codename: ${codename}`,
    `Date: ${new Date().toUTCString().replace('GMT', 'UTC')}`,
    `Architectures: ${DEB_ARCH}`,
    'Components: main',
    'SHA256:',
    ` ${sha256File(path.join(binDir, 'Packages'))} ${fs.statSync(path.join(binDir, 'Packages')).size} ${rel}`,
    '',
  ].join('\n');
  const dists = path.join(repo, 'dists', codename);
  fs.writeFileSync(path.join(dists, 'Release'), release);

  // A throwaway signing key; the public half is what the install fetches as the keyring.
  const gnupg = path.join(work, 'gnupg');
  fs.mkdirSync(gnupg, { mode: 0o700 });
  const env = { ...process.env, GNUPGHOME: gnupg };
  const gpg = (args: string[]) => run('gpg', ['--batch', '--no-tty', '--pinentry-mode', 'loopback', '--passphrase', '', ...args], { env });
  try {
    gpg(['--quick-generate-key', 'service-deploy e2e apt <e2e@invalid>', 'ed25519', 'sign', 'never']);
    fs.writeFileSync(path.join(repo, `${codename}.noarmor.gpg`), execFileSync('gpg', ['--batch', '--export'], { env }));
    gpg(['--yes', '--clearsign', '-o', path.join(dists, 'InRelease'), path.join(dists, 'Release')]);
  } finally {
    try {
      execFileSync('gpgconf', ['--kill', 'all'], { env, stdio: 'ignore' });
    } catch {
      // no agent was started
    }
  }
  return root;
}
