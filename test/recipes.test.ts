import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OWN_FILES } from '../src/doctor/own-files.js';
import { CHECKS, FIXES, fixesOf } from '../src/doctor/index.js';
import { selectChecks } from '../src/doctor/run.js';
import { lazyFix, pass, type Check } from '../src/doctor/types.js';
import { BACKUP_ROOTS } from '../src/install/backup-set.js';
import { FOOTPRINT, MANAGED_PLACES, footprint } from '../src/install/footprint.js';
import { TEMP_DIRS } from '../src/install/leftovers.js';
import { RESET_REMOVES } from '../src/install/reset.js';
import { UNINSTALL_REMOVES } from '../src/install/uninstall.js';
import { loadComponents } from '../src/components.js';
import { needsProblems } from '../src/pipeline/needs.js';
import type { Step } from '../src/pipeline/step.js';
import {
  backupModes,
  backupRoots,
  desired,
  isInPlaces,
  manifestPlaces,
  recordedPaths,
  removedIfEmpty,
  resetRemoves,
  rewritable,
  tempDirs,
  uninstallRemoves,
  type WrittenFile,
  type WrittenFolder,
} from '../src/pipeline/writes.js';
import { installSteps, installWrites } from '../src/steps/index.js';
import { needsGraphMermaid } from '../src/pipeline/timeline.js';
import { REPO } from './helpers/binary.js';

/**
 * docs/architecture.md's "Adding a step" and "Adding a check" stay true: what they name
 * exists, and a step or a check added to its registry (here a fixture, at test time) is
 * in every set derived from the declarations, with nothing else edited.
 */

const doc = fs.readFileSync(path.join(REPO, 'docs/architecture.md'), 'utf8');
const section = (title: string) => {
  const start = doc.indexOf(`## ${title}\n`);
  expect(start, `docs/architecture.md has "## ${title}"`).toBeGreaterThanOrEqual(0);
  const end = doc.indexOf('\n## ', start + 4);
  return doc.slice(start, end < 0 ? undefined : end);
};

// The fixture step: a templated file in a folder of its own that doctor may write again,
// a folder in every backup, and a log the server keeps over a reset.
const FIXTURE_FILE: WrittenFile = {
  path: '/etc/fixture-service/fixture.conf',
  type: 'file',
  mode: 0o640,
  check: 'sha256',
  rewrite: { from: async () => desired(FIXTURE_FILE, 'fixture\n') },
};
const FIXTURE_DATA: WrittenFolder = { path: '/var/lib/fixture-service', type: 'folder', mode: 0o700, check: 'metadata', life: 'backup' };
const FIXTURE_LOG: WrittenFile = { path: '/var/log/fixture-service.log', type: 'file', mode: 0o600, life: 'server' };
const FIXTURE_STEP: Step = {
  id: 'fixture',
  title: 'A fixture step',
  writes: [FIXTURE_FILE, FIXTURE_DATA, FIXTURE_LOG],
  needs: ['answers'],
  check: async () => ({ changes: [] }),
  apply: async () => {},
};
const FIXTURE_FIX = lazyFix({ id: 'fixture-fix', title: 'write the fixture again', phase: 'files' }, async () => async () => undefined);
const FIXTURE_CHECK: Check = { id: 'fixture', title: 'A fixture check', fixes: [FIXTURE_FIX], run: async () => pass('fine') };

/** The registry with the fixture step at its place (before the manifest step, as a new step goes). */
function stepsWithFixture(): Step[] {
  const steps = installSteps();
  steps.splice(steps.findIndex((s) => s.id === 'manifest'), 0, FIXTURE_STEP);
  return steps;
}

describe('docs/architecture.md: adding a step', () => {
  it('names files and functions that exist', () => {
    const text = section('Adding a step');
    for (const file of ['src/steps/index.ts', 'src/install/footprint.ts', 'test/pipeline/writes.test.ts', 'test/steps/needs.test.ts', 'test/recipes.test.ts']) {
      expect(text).toContain(file.replace(/^src\//, ''));
      expect(fs.existsSync(path.join(REPO, file)), file).toBe(true);
    }
    const sources = ['src/steps/index.ts', 'src/pipeline/writes.ts', 'src/pipeline/files.ts', 'src/pipeline/step.ts', 'src/install/footprint.ts'].map((f) => fs.readFileSync(path.join(REPO, f), 'utf8')).join('\n');
    for (const name of ['installSteps', 'writes', 'needs', 'WrittenFile', 'WrittenFolder', 'desired', 'writeDesired', 'LOCKS', 'footprint']) {
      expect(text).toContain(`\`${name}`);
      expect(sources).toMatch(new RegExp(`\\b${name}\\b`));
    }
  });

  it('a step added to installSteps() is in every derived set, with nothing else edited', () => {
    const steps = stepsWithFixture();
    expect(needsProblems(steps)).toEqual([]);
    const all = footprint(installWrites(steps));
    // The install manifest may name its paths; the manifest step records them.
    for (const p of [FIXTURE_FILE.path, FIXTURE_DATA.path, FIXTURE_LOG.path]) expect(isInPlaces(p, manifestPlaces(all)), p).toBe(true);
    expect(recordedPaths(installWrites(steps), loadComponents({})).map((r) => r.path)).toEqual(expect.arrayContaining([FIXTURE_FILE.path, FIXTURE_DATA.path]));
    // A backup holds its data, restore gives it its mode; a reset removes the deployment's; uninstall all of it.
    expect(backupRoots(installWrites(steps))).toContainEqual({ path: FIXTURE_DATA.path, kind: 'directory', mode: 0o700 });
    expect(backupModes(installWrites(steps))[FIXTURE_DATA.path]).toBe(0o700);
    expect(resetRemoves(all)).toEqual(expect.arrayContaining([FIXTURE_FILE.path, FIXTURE_DATA.path]));
    expect(resetRemoves(all)).not.toContain(FIXTURE_LOG.path);
    expect(uninstallRemoves(all)).toEqual(expect.arrayContaining([FIXTURE_FILE.path, FIXTURE_DATA.path, FIXTURE_LOG.path]));
    // Temp files beside its file are swept; doctor writes the file again from its declaration.
    expect(tempDirs(all)).toContain('/etc/fixture-service');
    expect(rewritable(installWrites(steps)).map((f) => f.path)).toContain(FIXTURE_FILE.path);
  });

  it('the sets the program uses are those derivations of what is declared (no list kept by hand)', () => {
    expect(FOOTPRINT).toEqual(footprint(installWrites(installSteps())));
    expect(MANAGED_PLACES).toEqual(manifestPlaces(FOOTPRINT));
    expect(RESET_REMOVES).toEqual(resetRemoves(FOOTPRINT));
    expect(UNINSTALL_REMOVES).toEqual(uninstallRemoves(FOOTPRINT));
    expect(TEMP_DIRS).toEqual(tempDirs(FOOTPRINT));
    expect(BACKUP_ROOTS).toEqual(backupRoots(installWrites()));
    expect(OWN_FILES).toEqual(rewritable(installWrites()));
    expect(removedIfEmpty(FOOTPRINT).length).toBeGreaterThan(0);
  });
});

describe('docs/architecture.md: adding a check', () => {
  it('names files and functions that exist', () => {
    const text = section('Adding a check');
    for (const file of ['src/doctor/index.ts', 'src/doctor/output.ts', 'schemas/doctor.schema.json']) {
      expect(text).toContain(file.replace(/^src\//, ''));
      expect(fs.existsSync(path.join(REPO, file)), file).toBe(true);
    }
    const sources = ['src/doctor/index.ts', 'src/doctor/types.ts', ...fs.readdirSync(path.join(REPO, 'src/doctor/checks')).map((f) => `src/doctor/checks/${f}`)]
      .map((f) => fs.readFileSync(path.join(REPO, f), 'utf8'))
      .join('\n');
    for (const name of ['CHECKS', 'Fix', 'fixes', 'lazyFix', 'filesFix', 'guardFix', 'gatewayRestartFix', 'rewrite']) {
      expect(text).toContain(`\`${name}`);
      if (name !== 'rewrite') expect(sources).toMatch(new RegExp(`\\b${name}\\b`));
    }
  });

  it('a check added to CHECKS runs, and brings its fix into the order --fix runs them in', () => {
    const checks = [...CHECKS, FIXTURE_CHECK];
    expect(selectChecks(['fixture'], checks)).toEqual([FIXTURE_CHECK]);
    const fixes = fixesOf(checks);
    expect(fixes).toContain(FIXTURE_FIX);
    expect(fixes.filter((f) => f !== FIXTURE_FIX)).toEqual([...FIXES]);
  });
});

describe('the docs a new step or check adds a row to', () => {
  const rows = (file: string) => new Set([...fs.readFileSync(path.join(REPO, file), 'utf8').matchAll(/^\| `([a-z0-9-]+?)\*?` \|/gm)].map((m) => m[1]!));

  it("every install step has its row in docs/install.md's step table", () => {
    const documented = rows('docs/install.md');
    // A row may stand for a family of steps (`channel-*`).
    const families = [...documented].filter((d) => d.endsWith('-'));
    expect(installSteps().map((s) => s.id).filter((id) => !documented.has(id) && !families.some((f) => id.startsWith(f)))).toEqual([]);
  });

  it("docs/install.md's needs graph is the one the steps' needs give (npm run timeline -- --graph)", () => {
    const doc = fs.readFileSync(path.join(REPO, 'docs/install.md'), 'utf8');
    const graph = /^## Where the time goes\n[\s\S]*?^```mermaid\n([\s\S]*?)^```$/m.exec(doc)?.[1];
    expect(graph, 'docs/install.md has a mermaid block under "## Where the time goes"').toBeDefined();
    expect(graph, "docs/install.md's needs graph is not the steps' needs: print it again with npm run timeline -- --graph").toBe(needsGraphMermaid(installSteps()));
    // A step added to the list changes it.
    expect(needsGraphMermaid(stepsWithFixture())).not.toBe(graph);
  });

  it("every doctor check has its row in docs/operations.md's check table", () => {
    const documented = rows('docs/operations.md');
    expect(CHECKS.map((c) => c.id).filter((id) => !documented.has(id))).toEqual([]);
  });
});
