import path from 'node:path';
import type { Components } from '../components.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { downloadNode, nodeVersionIn, unpackNode } from './node-runtime.js';
import { UpgradeError } from './openclaw-upgrade.js';
import { installedOpenclawVersion, previousRelease } from '../runtime/openclaw-place.js';

/**
 * An upgrade of the pinned Node unpacks the new release beside the old prefix, carries
 * the global packages over, and switches by rename (the same shape as an OpenClaw
 * upgrade, openclaw-upgrade.ts):
 *
 *   /opt/service-deploy/node-next   <- the release tarball (SHASUMS256-checked), then a
 *                                      copy of every global package and bin link of the
 *                                      old prefix the tarball does not bring (OpenClaw on a
 *                                      server of the earlier layout; OpenClaw's project
 *                                      lies apart since the locks)
 *   /opt/service-deploy/node        -> /opt/service-deploy/node-previous (kept whole, for
 *                                      the rollback)
 *   /opt/service-deploy/node-next   -> /opt/service-deploy/node
 *
 * The old prefix keeps working until the switch; the gateway is stopped by then.
 */

/** Stages the pinned Node in LAYOUT.nodeNext with the current prefix's global packages; the live prefix is untouched. */
export async function stageNode(host: Host, components: Components): Promise<void> {
  const want = components.node.version;
  await host.files.remove(LAYOUT.nodeNext);
  const work = await host.files.makeTempDir(LAYOUT.nodeNext);
  try {
    let tarball: string;
    try {
      tarball = await downloadNode(host, components, host.paths.real(work));
    } catch (error) {
      throw new UpgradeError('download', `Node ${want} could not be downloaded: ${(error as Error).message}`, 'the installed version keeps running; check the network or the Node mirror and run the install again');
    }
    try {
      await unpackNode(tarball, host.paths.real(LAYOUT.nodeNext));
      const carried = await carryGlobalPackages(host, LAYOUT.nodePrefix, LAYOUT.nodeNext);
      host.log.debug(`node upgrade: carried into the new prefix: ${carried.join(', ') || 'nothing'}`);
    } catch (error) {
      await host.files.remove(LAYOUT.nodeNext);
      throw new UpgradeError('install', `Node ${want} could not be unpacked with the global packages: ${(error as Error).message}`, 'the installed version keeps running; run the install again');
    }
  } finally {
    await host.files.remove(work);
  }
  const version = await nodeVersionIn(host, LAYOUT.nodeNext);
  if (version !== want) {
    await host.files.remove(LAYOUT.nodeNext);
    throw new UpgradeError('install', `the new Node does not run as ${want}: node --version says ${version ?? 'nothing'}`, 'the installed version keeps running; run the install again');
  }
}

/**
 * Copies into `to` every global package (lib/node_modules) and bin entry of `from` that
 * the new release does not bring itself (its own npm and corepack win). Returns what
 * was copied.
 */
async function carryGlobalPackages(host: Host, from: string, to: string): Promise<string[]> {
  const carried: string[] = [];
  for (const dir of ['lib/node_modules', 'bin']) {
    const source = `${from}/${dir}`;
    const target = `${to}/${dir}`;
    if (!(await host.files.exists(source))) continue;
    await host.files.ensureDir(target, 0o755);
    const have = new Set(await host.files.list(target));
    for (const name of await host.files.list(source)) {
      if (have.has(name)) continue;
      await host.files.copyTree(path.posix.join(source, name), path.posix.join(target, name));
      carried.push(`${dir}/${name}`);
    }
  }
  return carried;
}

/** The staged prefix in, the live one kept as the previous (an earlier previous is dropped). */
export async function switchNodeToStaged(host: Host): Promise<void> {
  await host.files.remove(LAYOUT.nodePrevious);
  await host.files.rename(LAYOUT.nodePrefix, LAYOUT.nodePrevious);
  try {
    await host.files.rename(LAYOUT.nodeNext, LAYOUT.nodePrefix);
  } catch (error) {
    await host.files.rename(LAYOUT.nodePrevious, LAYOUT.nodePrefix);
    throw error;
  }
}

/** The previous prefix back in place (the newer one removed). False when there is none. */
export async function switchNodeToPrevious(host: Host): Promise<boolean> {
  if (!(await host.files.stat(LAYOUT.nodePrevious))?.isDirectory) return false;
  const newer = host.files.tempPathFor(LAYOUT.nodePrefix);
  if (await host.files.stat(LAYOUT.nodePrefix)) await host.files.rename(LAYOUT.nodePrefix, newer);
  await host.files.rename(LAYOUT.nodePrevious, LAYOUT.nodePrefix);
  await host.files.remove(newer);
  return true;
}

/**
 * What `service-deploy rollback` would bring back (the last upgrade's rollback point):
 * the OpenClaw version (from the kept Node prefix when there is one, it holds the
 * OpenClaw it ran; else from the kept package) and the kept Node's version.
 */
export async function rollbackPoint(host: Host): Promise<{ openclaw?: string; node?: string }> {
  const version = async (file: string): Promise<string | undefined> => {
    try {
      const v = (JSON.parse((await host.files.read(file)) ?? '') as { version?: unknown }).version;
      return typeof v === 'string' ? v : undefined;
    } catch {
      return undefined;
    }
  };
  const node = (await host.files.stat(`${LAYOUT.nodePrevious}/bin/node`)) ? await nodeVersionIn(host, LAYOUT.nodePrevious) : undefined;
  // A kept release first; else the one a kept Node prefix holds (the earlier layout's global
  // package), else the one that runs (OpenClaw's project is apart from the Node prefix).
  const kept = (await previousRelease(host))?.version;
  const openclaw = kept ?? (node ? ((await version(`${LAYOUT.nodePrevious}/lib/node_modules/openclaw/package.json`)) ?? (await installedOpenclawVersion(host))) : undefined);
  return { ...(openclaw ? { openclaw } : {}), ...(node ? { node } : {}) };
}
