import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { REPO } from './binary.js';
import type { NginxBinary } from './nginx.js';
import { hostDebianMirror } from '../e2e/container.js';

/**
 * The nginx releases the site must work with, besides this machine's (Debian 12: 1.22):
 * Debian 11's 1.18 (the release Ubuntu 22.04 ships) and Debian 13's 1.26 (newer than
 * Ubuntu 24.04's 1.24). Their .deb files (and the libraries they need that Debian 12
 * does not have) are downloaded once with apt-get from the Debian mirror this machine
 * uses, into a private apt state under .cache/nginx-releases/, and unpacked there; apt
 * and dpkg of this machine are not touched. A release that cannot be fetched is
 * reported (the tests for it say why they were skipped).
 */
export const CACHE = path.join(REPO, '.cache', 'nginx-releases');

interface Release {
  suite: string;
  packages: string[];
  /** The binary inside the unpacked root. */
  binary: string;
  /** true: run through the release's own loader and libc (built for a newer glibc). */
  ownLibc: boolean;
  hasE: boolean;
}

const RELEASES: Release[] = [
  { suite: 'bullseye', packages: ['nginx-core', 'libssl1.1', 'libpcre3'], binary: 'usr/sbin/nginx', ownLibc: false, hasE: false },
  { suite: 'trixie', packages: ['nginx', 'libssl3t64', 'libpcre2-8-0', 'libc6', 'libcrypt1', 'zlib1g'], binary: 'usr/sbin/nginx', ownLibc: true, hasE: true },
];

export interface OtherReleases {
  binaries: NginxBinary[];
  /** suite -> why it is not available. */
  missing: Record<string, string>;
}

export async function otherNginxReleases(): Promise<OtherReleases> {
  const out: OtherReleases = { binaries: [], missing: {} };
  for (const release of RELEASES) {
    try {
      out.binaries.push(await ensureRelease(release));
    } catch (error) {
      out.missing[release.suite] = (error as Error).message.split('\n').slice(0, 3).join(' ');
    }
  }
  return out;
}

async function ensureRelease(release: Release): Promise<NginxBinary> {
  const dir = path.join(CACHE, release.suite);
  const root = path.join(dir, 'root');
  const ready = path.join(dir, '.ready');
  if (!fs.existsSync(ready)) await fetchRelease(release, dir, root, ready);
  const lib = path.join(root, 'usr/lib/x86_64-linux-gnu');
  const libs = [lib, path.join(root, 'lib/x86_64-linux-gnu')].join(':');
  const bin = path.join(root, release.binary);
  const version = fs.readFileSync(ready, 'utf8').trim();
  const run = (args: string[]): [string, string[]] =>
    release.ownLibc ? [path.join(lib, 'ld-linux-x86-64.so.2'), ['--library-path', libs, bin, ...args]] : ['env', [`LD_LIBRARY_PATH=${libs}`, bin, ...args]];
  return {
    version,
    hasE: release.hasE,
    // Without -e, nginx opens its built-in /var/log/nginx/error.log before reading the
    // config: a private tmpfs there (own mount namespace) keeps this machine's log untouched.
    argv: (args) => {
      if (release.hasE) return run(args);
      const [command, rest] = run(args);
      return ['unshare', ['-m', 'sh', '-c', 'mkdir -p /var/log/nginx && mount -t tmpfs none /var/log/nginx && exec "$@"', 'sh', command, ...rest]];
    },
  };
}

async function fetchRelease(release: Release, dir: string, root: string, ready: string): Promise<void> {
  if (process.arch !== 'x64') throw new Error(`only x86_64 releases are fetched (this is ${process.arch})`);
  fs.mkdirSync(dir, { recursive: true });
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch {
      if (fs.existsSync(ready)) return;
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 5 * 60_000) fs.rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (fs.existsSync(ready)) return;
    const mirror = hostDebianMirror();
    if (!mirror) throw new Error('no Debian mirror in this machine\'s apt sources');
    const apt = path.join(dir, 'apt');
    fs.rmSync(apt, { recursive: true, force: true });
    for (const d of ['state/lists/partial', 'cache/archives/partial', 'debs']) fs.mkdirSync(path.join(apt, d), { recursive: true });
    fs.writeFileSync(path.join(apt, 'sources.list'), `deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror} ${release.suite} main\n`);
    const options = [
      '-o', `Dir::Etc::SourceList=${path.join(apt, 'sources.list')}`,
      '-o', 'Dir::Etc::SourceParts=/dev/null',
      '-o', `Dir::State=${path.join(apt, 'state')}`,
      '-o', 'Dir::State::status=/dev/null',
      '-o', `Dir::Cache=${path.join(apt, 'cache')}`,
      '-o', 'APT::Sandbox::User=root',
    ];
    await execa('apt-get', [...options, '-qq', 'update'], { timeout: 5 * 60_000 });
    await execa('apt-get', [...options, '-qq', 'download', ...release.packages], { cwd: path.join(apt, 'debs'), timeout: 5 * 60_000 });
    fs.rmSync(root, { recursive: true, force: true });
    fs.mkdirSync(root, { recursive: true });
    for (const deb of fs.readdirSync(path.join(apt, 'debs')).filter((f) => f.endsWith('.deb'))) {
      await execa('dpkg-deb', ['-x', path.join(apt, 'debs', deb), root]);
    }
    const nginxDeb = fs.readdirSync(path.join(apt, 'debs')).find((f) => /^nginx(-core)?_/.test(f))!;
    fs.rmSync(apt, { recursive: true, force: true });
    fs.writeFileSync(ready, `${nginxDeb.split('_')[1]}\n`);
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}
