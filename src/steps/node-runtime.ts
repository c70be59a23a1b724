import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DeployError } from '../errors.js';
import type { Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { writeRecorded } from '../pipeline/files.js';
import { installedFilesProblem, recordProgramFiles } from '../pipeline/manifest.js';
import { bytesProgress } from '../pipeline/progress.js';
import type { WrittenFile, WrittenFolder } from '../pipeline/writes.js';
import { nodeFiles } from '../runtime/openclaw.js';
import type { Components } from '../components.js';
import type { Host } from '../host/index.js';

/** Node's naming of the machine's architecture in its release tarballs. */
function distArch(): string {
  return process.arch === 'arm64' ? 'arm64' : 'x64';
}

type Ctx = Parameters<Step['check']>[0];
const NODE_BIN = `${LAYOUT.nodePrefix}/bin/node`;

/** Our programs' folder: the pinned Node and the runtime's packages, the upgrades' kept copies and their record. */
export const PROGRAMS_DIR: WrittenFolder = { path: '/opt/service-deploy', type: 'folder' };
/** Node's release tarball, unpacked beside the old prefix and swapped in. */
export const NODE_PREFIX: WrittenFolder = { path: LAYOUT.nodePrefix, type: 'folder', mode: 0o755, staged: true };
/** The installed Node's identity and the version it printed (see installedNode). */
export const NODE_STAMP: WrittenFile = { path: LAYOUT.nodeStamp, type: 'file', mode: 0o600, check: 'sha256' };

/** What `node --version` of the Node in `prefix` says (without the v), or undefined when it does not run. */
export async function nodeVersionIn(host: Host, prefix: string): Promise<string | undefined> {
  const node = host.paths.real(`${prefix}/bin/node`);
  const result = await host.exec.run(node, ['--version'], { allowFailure: true, timeoutMs: 20_000 });
  return result.exitCode === 0 ? result.stdout.trim().replace(/^v/, '') : undefined;
}

/**
 * The identity of a file: device, inode, size, modification and change times (ns).
 * The change time cannot be set back by anyone: any write, rename over, chmod or chown
 * of the file, and any other file put in its place, gives another identity.
 */
function fileIdentity(realPath: string): string | undefined {
  try {
    const st = statSync(realPath, { bigint: true }); // synchronous: see Files.read
    return [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(':');
  } catch {
    return undefined;
  }
}

/**
 * The installed Node's version. `node --version` is run once per binary: its answer is
 * kept in LAYOUT.nodeStamp with the binary's identity, and while the binary is that very
 * file the stamp answers (a re-run spawns no process for it). `stamped` false: the answer
 * came from running it (no stamp, or another file than the one stamped).
 */
async function installedNode(host: Host): Promise<{ version?: string; stamped: boolean }> {
  const stamped = await stampedNodeVersion(host);
  if (stamped !== undefined) return { version: stamped, stamped: true };
  return { version: await nodeVersionIn(host, LAYOUT.nodePrefix), stamped: false };
}

/**
 * The version the installed Node printed when the install verified it, while the binary
 * is still that very file (see installedNode); undefined otherwise: run it. Read-only.
 */
export async function stampedNodeVersion(host: Host): Promise<string | undefined> {
  const identity = fileIdentity(host.paths.real(NODE_BIN));
  if (identity === undefined) return undefined;
  const stamp = await host.files.read(LAYOUT.nodeStamp);
  try {
    const recorded = JSON.parse(stamp ?? 'null') as { identity?: unknown; version?: unknown } | null;
    if (recorded?.identity === identity && typeof recorded.version === 'string') return recorded.version;
  } catch {
    // an unreadable stamp: run the binary
  }
  return undefined;
}

/** Runs the installed binary; when it says `want`, stamps that very file (see installedNode). */
async function verifyAndStamp(ctx: Ctx, want: string): Promise<void> {
  const identity = fileIdentity(ctx.host.paths.real(NODE_BIN));
  const have = await nodeVersionIn(ctx.host, LAYOUT.nodePrefix);
  if (have !== want) throw new Error(`node --version says ${have ?? 'nothing'} after install`);
  await writeRecorded(ctx.host, NODE_STAMP, `${JSON.stringify({ identity, version: have })}\n`);
}

/**
 * The pinned Node's release tarball, downloaded into `work` (a private folder) and
 * checked against SHASUMS256.txt. Returns its real path.
 */
export async function downloadNode(host: Host, components: Components, work: string, progress: (what: string) => void = () => undefined): Promise<string> {
  const version = components.node.version;
  const file = `node-v${version}-linux-${distArch()}.tar.gz`;
  const base = `${components.sources.nodeDistUrl}/v${version}`;
  progress(`downloading ${file}`);
  const sums = await host.net.request(`${base}/SHASUMS256.txt`, { caFile: components.sources.caFile });
  if (sums.status !== 200) throw new DeployError(`${base}/SHASUMS256.txt: HTTP ${sums.status}`);
  const expected = sums.body.split('\n').map((l) => l.trim().split(/\s+/)).find(([, name]) => name === file)?.[0];
  if (!expected) throw new DeployError(`SHASUMS256.txt for Node ${version} has no entry for ${file}`);
  const tarball = path.join(work, file);
  const actual = await host.net.download(`${base}/${file}`, tarball, {
    caFile: components.sources.caFile,
    timeoutMs: 120_000,
    onProgress: (received, total) => progress(`downloading ${file}: ${bytesProgress(received, total)}`),
  });
  if (actual !== expected) {
    throw new DeployError(`checksum mismatch for ${file}: expected ${expected}, got ${actual}`, 'the download was corrupted or tampered with; nothing was installed');
  }
  return tarball;
}

/** Unpacks a Node release tarball into the new folder `dest` (real path), with the node prefix's mode. */
export async function unpackNode(tarball: string, dest: string): Promise<void> {
  await fs.mkdir(dest);
  const tar = await import('tar'); // only when Node is (re)installed: keeps it off every start
  await tar.x({ file: tarball, cwd: dest, strip: 1 });
  await fs.chmod(dest, NODE_PREFIX.mode!);
}

/**
 * The pinned Node (26) for the agent runtime, in its own prefix (never the distribution's node):
 * the official release tarball, checked against SHASUMS256.txt, unpacked beside the
 * old prefix and swapped in with a rename. A change of the pinned version on a
 * deployed server is an upgrade instead (install/upgrade.ts: the old prefix kept for
 * a rollback); this step installs Node where there is none, or reinstalls a damaged one.
 * The binary it verified is stamped (see installedNode), so a re-run does not run it.
 */
export const nodeRuntimeStep: Step = {
  id: 'node-runtime',
  title: 'Node.js for the agent runtime',
  // system-packages: Node 26 loads libatomic.so.1 (libatomic1), which a minimal server lacks.
  needs: ['system-packages'],
  writes: [PROGRAMS_DIR, NODE_PREFIX, { type: 'programs', path: LAYOUT.nodePrefix, files: () => nodeFiles() }, NODE_STAMP],
  async check(ctx) {
    const want = ctx.components.node.version;
    const { version: have, stamped } = await installedNode(ctx.host);
    // The right version, but the binary changed since it was unpacked: unpack it again.
    const damaged = have === want ? await installedFilesProblem(ctx.host, nodeFiles().required) : undefined;
    if (have === want && !damaged && stamped) return { changes: [] };
    // The right Node, run and checked just now but not stamped yet (installed by an older
    // service-deploy, switched in by an upgrade, or put back by a restore): only the stamp is written.
    if (have === want && !damaged) return { changes: [{ target: LAYOUT.nodeStamp, summary: `record the verified Node ${want} binary` }], data: 'stamp' };
    const upgrade = `Node ${have} -> ${want} (upgrade: verified backup first, the new Node unpacked beside the old one with the global packages and switched in, /healthz; rolled back by itself on any failure)`;
    return { changes: [{ target: LAYOUT.nodePrefix, summary: damaged ? `reinstall Node ${want}: ${damaged}` : have ? upgrade : `install Node ${want}` }] };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    if (plan.data === 'stamp') return verifyAndStamp(ctx, components.node.version);
    const prefix = host.paths.real(LAYOUT.nodePrefix);
    // A private temp folder beside the prefix (same filesystem, so the swap is a rename).
    const work = host.paths.real(await host.files.makeTempDir(LAYOUT.nodePrefix));
    try {
      const tarball = await downloadNode(host, components, work, ctx.progress);
      ctx.progress(`unpacking ${path.basename(tarball)}`);
      const unpacked = path.join(work, 'node');
      await unpackNode(tarball, unpacked);
      // Swap: the old prefix (with its global packages) goes aside, then away.
      const old = host.paths.real(host.files.tempPathFor(LAYOUT.nodePrefix));
      const hadOld = await fs.stat(prefix).then(() => true, () => false);
      if (hadOld) await fs.rename(prefix, old);
      await fs.rename(unpacked, prefix);
      if (hadOld) await fs.rm(old, { recursive: true, force: true });
    } finally {
      await fs.rm(work, { recursive: true, force: true });
    }
    await recordProgramFiles(host, nodeFiles());
    await verifyAndStamp(ctx, components.node.version);
  },
  async verify(ctx) {
    const have = await nodeVersionIn(ctx.host, LAYOUT.nodePrefix);
    if (have !== ctx.components.node.version) throw new Error(`node --version says ${have ?? 'nothing'} after install`);
  },
};
