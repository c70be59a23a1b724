// Download benchmark: what a new server fetches, and how long install.sh takes to fetch,
// verify and unpack it. dist/ (the signed release the build made) is served over loopback
// HTTPS; install.sh installs into a fresh sandbox root each round and runs `--version`.
// Reported: the .xz size (target <= 30 MB) against the plain binary, and install.sh's wall
// time with xz (download, two checksums, unpack) and without (the plain binary), medians.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { REPO, cleanEnv } from '../test/helpers/binary.js';
import { makeTestCa, serveDirectory } from '../test/helpers/https-server.js';
import { cleanupTempDirs, tempDir } from '../test/helpers/tmp.js';

const rounds = Number(process.env.BENCH_DOWNLOAD_ROUNDS ?? 5);
const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
const dist = path.join(REPO, 'dist');
const file = `service-deploy-linux-${arch}`;
for (const f of ['install.sh', 'SHA256SUMS.sig', `${file}.xz`]) {
  if (!fs.existsSync(path.join(dist, f))) {
    console.error(`dist/${f} is missing: run the full \`npm run build\` (--native makes no .xz)`);
    process.exit(1);
  }
}
const ca = makeTestCa();
const server = await serveDirectory(dist, ca);
const script = fs.readFileSync(path.join(dist, 'install.sh'), 'utf8');
const bash = execFileSync('sh', ['-c', 'command -v bash'], { encoding: 'utf8' }).trim();
/** A PATH with every tool install.sh uses except xz. */
const noXz = tempDir('sd-bench-noxz-');
for (const tool of ['curl', 'sha256sum', 'openssl', 'uname', 'mktemp', 'install', 'cut', 'dirname', 'mv', 'rm', 'id', 'grep']) {
  fs.symlinkSync(execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), path.join(noXz, tool));
}

async function installOnce(extra: Record<string, string>): Promise<number> {
  const root = tempDir('sd-bench-dl-');
  fs.mkdirSync(path.join(root, 'etc'));
  fs.writeFileSync(path.join(root, 'etc/os-release'), 'ID=ubuntu\nVERSION_ID="24.04"\n');
  const start = process.hrtime.bigint();
  const result = await execa(bash, ['-s', '--', '--version'], {
    input: script,
    reject: false,
    extendEnv: false,
    env: cleanEnv({ SERVICE_SETUP_URL: server.url, SERVICE_CA_BUNDLE: ca.caFile, SERVICE_DEPLOY_ROOT: root, ...extra }),
  });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.exitCode !== 0) throw new Error(`install.sh failed (${result.exitCode}):\n${result.stderr}`);
  fs.rmSync(root, { recursive: true, force: true });
  return ms;
}

try {
  const xzTimes: number[] = [];
  const plainTimes: number[] = [];
  for (let i = 0; i < rounds; i++) {
    xzTimes.push(await installOnce({}));
    plainTimes.push(await installOnce({ PATH: noXz }));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const packed = fs.statSync(path.join(dist, `${file}.xz`)).size;
  const plain = fs.statSync(path.join(dist, file)).size;
  const ok = packed <= 30e6;
  console.log(`${ok ? 'ok  ' : 'SLOW'} ${'download size (.xz)'.padEnd(40)} ${(packed / 1e6).toFixed(1).padStart(6)} MB (target <= 30 MB; plain binary ${(plain / 1e6).toFixed(1)} MB, ${((100 * packed) / plain).toFixed(0)}%)`);
  console.log(`     ${'install.sh: fetch, verify, unpack, run'.padEnd(40)} ${(median(xzTimes) / 1000).toFixed(2).padStart(6)} s  (with xz; without xz, the plain binary: ${(median(plainTimes) / 1000).toFixed(2)} s; loopback, ${rounds} rounds)`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await server.close();
  cleanupTempDirs();
}
