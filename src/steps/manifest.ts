import fs from 'node:fs/promises';
import { isSingleExecutable } from '../assets.js';
import type { Components } from '../components.js';
import type { Host } from '../host/index.js';
import { Inspector } from '../host/inspect.js';
import { LAYOUT } from '../layout.js';
import { compareEntry, readManifest, recordFromDisk } from '../pipeline/manifest.js';
import type { Step } from '../pipeline/step.js';
import { recordedPaths, type RecordedPath, type Written } from '../pipeline/writes.js';
import { BINARY } from './guard.js';

/**
 * Paths to record now: what the steps and the pipeline declare that doctor checks
 * (recordedPaths), on disk but not in the manifest (a server installed before the
 * manifest existed, the log folder made before the steps run); our binary again when
 * install.sh replaced it.
 */
async function unrecorded(host: Host, writes: readonly Written[], components: Components): Promise<RecordedPath[]> {
  const inspector = new Inspector(host.paths);
  const { entries } = await readManifest(host);
  const wanted = recordedPaths(writes, components);
  const present = await Promise.all(wanted.map(async (w) => ((await inspector.info(w.path)) ? w : undefined)));
  const out = present.filter((w): w is RecordedPath => w !== undefined && !entries?.has(w.path));
  const binary = entries?.get(LAYOUT.binary);
  if (binary && (await runningFrom(host, LAYOUT.binary))) {
    // install.sh verified the new binary against SHA256SUMS and runs it: it is ours.
    const moved = await compareEntry(inspector, binary);
    if (moved.length > 0) out.push({ path: BINARY.path, options: { mode: BINARY.mode } });
  }
  return out;
}

async function runningFrom(host: Host, p: string): Promise<boolean> {
  if (!isSingleExecutable()) return false;
  const [self, target] = await Promise.all([fs.realpath(process.execPath), fs.realpath(host.paths.real(p)).catch(() => undefined)]);
  return self === target;
}

/**
 * The install manifest's last step: records what the install manages (`writes`: what
 * the steps before it and the pipeline declare) but the manifest does not hold yet.
 * Every other write was recorded by the step that made it, so it runs after them (`after`).
 */
export function manifestStep(writes: readonly Written[], after: readonly string[]): Step {
  return {
    id: 'manifest',
    title: 'Install manifest (what doctor checks)',
    needs: after,
    async check({ host, components }) {
      const missing = await unrecorded(host, writes, components);
      if (missing.length === 0) return { changes: [] };
      const names = missing.map((m) => m.path);
      const shown = names.length > 4 ? `${names.slice(0, 4).join(', ')} and ${names.length - 4} more` : names.join(', ');
      return { changes: [{ target: LAYOUT.manifestFile, summary: `${LAYOUT.manifestFile}: record ${shown}` }], data: missing };
    },
    async apply({ host }, plan) {
      await recordFromDisk(host, ...(plan.data as RecordedPath[]).map((m) => ({ path: m.path, options: m.options ?? {} })));
    },
  };
}
