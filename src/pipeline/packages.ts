import * as z from '../zod.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureFolder, writeRecorded } from './files.js';
import { STATE_DIR } from './manifest.js';
import type { WrittenFile } from './writes.js';

/**
 * The apt packages the install added to this server (LAYOUT.packagesFile): what dpkg
 * had after each of our `apt-get install` runs and not before, dependencies included.
 * `uninstall` purges exactly these and leaves every package the system had before.
 * Written like every file of ours (atomic, in the manifest); input from disk when read.
 */
const PackagesJson = z.strictObject({
  comment: z.optional(z.string()),
  packages: z.array(z.string().check(z.regex(/^[a-z0-9][a-z0-9+.-]{0,127}$/, 'not a Debian package name'))),
});

export const PACKAGES_FILE: WrittenFile = { path: LAYOUT.packagesFile, type: 'file', mode: 0o600, check: 'sha256' };

export interface PackagesRead {
  packages: string[];
  /** Why the record is not usable; undefined when it is (or simply missing: `missing`). */
  problem?: string;
  missing?: boolean;
}

export async function readAddedPackages(host: Host): Promise<PackagesRead> {
  const text = await host.files.read(LAYOUT.packagesFile);
  if (text === undefined) return { packages: [], missing: true };
  try {
    const parsed = PackagesJson.safeParse(JSON.parse(text));
    if (!parsed.success) return { packages: [], problem: `${LAYOUT.packagesFile}: ${parsed.error.issues[0]!.path.join('.')}: ${parsed.error.issues[0]!.message}` };
    return { packages: [...new Set(parsed.data.packages)].sort() };
  } catch (error) {
    return { packages: [], problem: `${LAYOUT.packagesFile} is not JSON: ${(error as Error).message}` };
  }
}

/** Adds `added` to the record (a package once ours stays ours until uninstall). */
export async function recordAddedPackages(host: Host, added: readonly string[]): Promise<void> {
  if (added.length === 0) return;
  const current = await readAddedPackages(host);
  const packages = [...new Set([...current.packages, ...added])].sort();
  const content = `${JSON.stringify({ comment: 'Written by service-deploy: the apt packages its install added; `service-deploy uninstall` purges these. Do not edit.', packages }, null, 2)}\n`;
  if (!(await host.files.exists(STATE_DIR.path))) await ensureFolder(host, STATE_DIR);
  await writeRecorded(host, PACKAGES_FILE, content);
}
