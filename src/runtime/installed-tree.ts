import type { Host } from '../host/index.js';
import type { InstalledPackage } from './npm-lock.js';

/** More package folders than any locked tree has (OpenClaw's: about 400): a bound on a runaway walk. */
const MAX_PACKAGES = 20_000;

/**
 * Every package folder under `project`/node_modules (nested ones included), named the
 * way a lock names them, with the name and version of its package.json. npm's own files
 * there (.bin, .package-lock.json, anything starting with a dot) are not packages. The
 * files are untrusted: an unreadable package.json gives a package without a version.
 */
export async function readInstalledTree(host: Host, project: string): Promise<InstalledPackage[]> {
  const found: InstalledPackage[] = [];
  const visit = async (relative: string): Promise<void> => {
    const dir = `${project}/${relative}`;
    for (const entry of await host.files.list(dir)) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        for (const scoped of await host.files.list(`${dir}/${entry}`)) {
          if (!scoped.startsWith('.')) await visitPackage(`${relative}/${entry}/${scoped}`);
        }
      } else {
        await visitPackage(`${relative}/${entry}`);
      }
    }
  };
  const visitPackage = async (relative: string): Promise<void> => {
    if (found.length >= MAX_PACKAGES) throw new Error(`${project}/node_modules holds more than ${MAX_PACKAGES} packages: not a tree npm installed from a lock`);
    const info = await host.files.stat(`${project}/${relative}`);
    if (!info) return;
    if (info.isSymlink) {
      found.push({ path: relative, link: true });
      return;
    }
    if (!info.isDirectory) return;
    found.push({ path: relative, ...(await packageIdentity(host, `${project}/${relative}/package.json`)) });
    await visit(`${relative}/node_modules`);
  };
  await visit('node_modules');
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function packageIdentity(host: Host, file: string): Promise<{ name?: string; version?: string }> {
  const text = await host.files.read(file).catch(() => undefined);
  if (!text) return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== 'object') return {};
    const { name, version } = parsed as { name?: unknown; version?: unknown };
    return { ...(typeof name === 'string' && { name }), ...(typeof version === 'string' && { version }) };
  } catch {
    return {};
  }
}
