import fs from 'node:fs/promises';
import path from 'node:path';
import { DeployError } from '../errors.js';
import type { Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { installedFilesProblem, recordProgramFiles } from '../pipeline/manifest.js';
import { bytesProgress } from '../pipeline/progress.js';
import { nodeFiles } from '../runtime/openclaw.js';

/** Node's naming of the machine's architecture in its release tarballs. */
function distArch(): string {
  return process.arch === 'arm64' ? 'arm64' : 'x64';
}

async function installedNodeVersion(ctx: Parameters<Step['check']>[0]): Promise<string | undefined> {
  const node = ctx.host.paths.real(`${LAYOUT.nodePrefix}/bin/node`);
  const result = await ctx.host.exec.run(node, ['--version'], { allowFailure: true, timeoutMs: 20_000 });
  return result.exitCode === 0 ? result.stdout.trim().replace(/^v/, '') : undefined;
}

/**
 * Node 24 for the agent runtime, in its own prefix (never the distribution's node):
 * the official release tarball, checked against SHASUMS256.txt, unpacked beside the
 * old prefix and swapped in with a rename.
 */
export const nodeRuntimeStep: Step = {
  id: 'node-runtime',
  title: 'Node.js for the agent runtime',
  async check(ctx) {
    const want = ctx.components.node.version;
    const have = await installedNodeVersion(ctx);
    // The right version, but the binary changed since it was unpacked: unpack it again.
    const damaged = have === want ? await installedFilesProblem(ctx.host, nodeFiles().required) : undefined;
    if (have === want && !damaged) return { changes: [] };
    return { changes: [{ target: LAYOUT.nodePrefix, summary: damaged ? `reinstall Node ${want}: ${damaged}` : have ? `Node ${have} -> ${want}` : `install Node ${want}` }] };
  },
  async apply(ctx) {
    const { host, components } = ctx;
    const version = components.node.version;
    const file = `node-v${version}-linux-${distArch()}.tar.gz`;
    const base = `${components.sources.nodeDistUrl}/v${version}`;
    const prefix = host.paths.real(LAYOUT.nodePrefix);
    // A private temp folder beside the prefix (same filesystem, so the swap is a rename).
    const work = host.paths.real(await host.files.makeTempDir(LAYOUT.nodePrefix));
    try {
      ctx.progress(`downloading ${file}`);
      const sums = await host.net.request(`${base}/SHASUMS256.txt`, { caFile: components.sources.caFile });
      if (sums.status !== 200) throw new DeployError(`${base}/SHASUMS256.txt: HTTP ${sums.status}`);
      const expected = sums.body.split('\n').map((l) => l.trim().split(/\s+/)).find(([, name]) => name === file)?.[0];
      if (!expected) throw new DeployError(`SHASUMS256.txt for Node ${version} has no entry for ${file}`);
      const tarball = path.join(work, file);
      const actual = await host.net.download(`${base}/${file}`, tarball, {
        caFile: components.sources.caFile,
        timeoutMs: 120_000,
        onProgress: (received, total) => ctx.progress(`downloading ${file}: ${bytesProgress(received, total)}`),
      });
      if (actual !== expected) {
        throw new DeployError(`checksum mismatch for ${file}: expected ${expected}, got ${actual}`, 'the download was corrupted or tampered with; nothing was installed');
      }
      ctx.progress(`unpacking ${file}`);
      const unpacked = path.join(work, 'node');
      await fs.mkdir(unpacked);
      const tar = await import('tar'); // only when Node is (re)installed: keeps it off every start
      await tar.x({ file: tarball, cwd: unpacked, strip: 1 });
      await fs.chmod(unpacked, 0o755);
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
  },
  async verify(ctx) {
    const have = await installedNodeVersion(ctx);
    if (have !== ctx.components.node.version) throw new Error(`node --version says ${have ?? 'nothing'} after install`);
  },
};
