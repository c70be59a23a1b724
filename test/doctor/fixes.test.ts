import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { doctorOutput } from '../../src/doctor/output.js';
import { CHECKS, FIXES, fixesOf } from '../../src/doctor/index.js';
import { FIX_PHASES, type Fix } from '../../src/doctor/types.js';
import { REPO } from '../helpers/binary.js';

/** Every Fix a module of src/doctor/checks/ exports (what a finding can name). */
async function exportedFixes(): Promise<Array<{ module: string; name: string; fix: Fix }>> {
  const dir = path.join(REPO, 'src/doctor/checks');
  const out: Array<{ module: string; name: string; fix: Fix }> = [];
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const module = (await import(path.join(dir, file))) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) {
      const v = value as Partial<Fix> | null;
      if (v && typeof v === 'object' && typeof v.id === 'string' && typeof v.run === 'function' && typeof v.phase === 'string') out.push({ module: file, name, fix: v as Fix });
    }
  }
  return out;
}

describe('doctor fixes, declared by their checks', () => {
  it('every fix a check module offers is declared by a check of the registry: --fix can run it', async () => {
    const exported = await exportedFixes();
    expect(exported.length).toBeGreaterThan(0);
    expect(exported.filter((e) => !FIXES.includes(e.fix)).map((e) => `${e.module}: ${e.name}`)).toEqual([]);
  });

  it('each once, with its own id, by phase and then in the order of the checks that declare them', () => {
    expect(new Set(FIXES.map((f) => f.id)).size).toBe(FIXES.length);
    const phases = FIXES.map((f) => FIX_PHASES.indexOf(f.phase));
    expect(phases).toEqual([...phases].sort((a, b) => a - b));
    const owner = (f: Fix) => CHECKS.findIndex((c) => c.fixes?.includes(f));
    for (const phase of FIX_PHASES) {
      const inPhase = FIXES.filter((f) => f.phase === phase).map(owner);
      expect(inPhase).toEqual([...inPhase].sort((a, b) => a - b));
    }
  });

  it("a check added to the registry brings its fix into the order and into doctor's JSON schema", () => {
    const fix: Fix = { id: 'fixture-fix', title: 'a fixture', phase: 'files', run: async () => undefined };
    const withFixture = fixesOf([...CHECKS, { id: 'fixture', title: 'a fixture', run: async () => undefined, fixes: [fix] }]);
    // Last of its phase (its check is the last one), before the next phase's first.
    expect(withFixture.indexOf(fix)).toBe(withFixture.findIndex((f) => f.phase === 'services') - 1);
    // The published enum is FIXES' ids, in that order.
    const enumOf = (doctorOutput.schema.shape.fixes.unwrap().element.shape.id as unknown as { options: string[] }).options;
    expect(enumOf).toEqual(FIXES.map((f) => f.id));
  });
});
