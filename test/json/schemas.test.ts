import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonSchemaOf } from '../../src/json/define.js';
import { doctorOutput } from '../../src/doctor/output.js';
import { OUTPUTS as DEFINED } from '../../src/json/outputs.js';
import { REPO } from '../helpers/binary.js';
import { SCHEMA_DIR, schemaValidator } from '../helpers/json-schemas.js';

/** Every output: those of src/json/outputs.ts, and doctor's (its fix ids come from the checks). */
const OUTPUTS = [...DEFINED, doctorOutput];

/** The published schemas are the zod schemas' own, and every output is published and used. */
describe('published JSON Schemas (schemas/)', () => {
  it('every committed file equals what the zod schemas generate (npm run schemas)', () => {
    const files = fs.readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.schema.json')).sort();
    expect(files).toEqual(OUTPUTS.map((o) => `${o.name}.schema.json`).sort());
    for (const output of OUTPUTS) {
      const committed = fs.readFileSync(path.join(SCHEMA_DIR, `${output.name}.schema.json`), 'utf8');
      expect(committed, `schemas/${output.name}.schema.json is stale: run npm run schemas`).toBe(`${JSON.stringify(jsonSchemaOf(output), null, 2)}\n`);
    }
  });

  it('every schema compiles under a strict draft 2020-12 validator and says what prints it', () => {
    for (const output of OUTPUTS) {
      expect(() => schemaValidator(output.name)).not.toThrow();
      expect(output.version).toBeGreaterThanOrEqual(1);
      const schema = JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, `${output.name}.schema.json`), 'utf8'));
      expect(schema.properties.schemaVersion.const).toBe(output.version);
      expect(schema.required.slice(0, 2)).toEqual(['schemaVersion', 'ok']);
    }
  });

  it('a document claiming ok: false without error, or ok: true with one, is refused by the published schema', () => {
    const validate = schemaValidator('error');
    expect(validate({ schemaVersion: 1, ok: false, error: { code: 'usage', message: 'm', hint: null, exitCode: 2 } })).toBe(true);
    expect(validate({ schemaVersion: 1, ok: false })).toBe(false);
    expect(validate({ schemaVersion: 1, ok: true, error: { code: 'usage', message: 'm', hint: null, exitCode: 2 } })).toBe(false);
    expect(validate({ schemaVersion: 2, ok: false, error: { code: 'usage', message: 'm', hint: null, exitCode: 2 } })).toBe(false);
    expect(validate({ schemaVersion: 1, ok: false, error: { code: 'Not A Code', message: 'm', hint: null, exitCode: 2 } })).toBe(false);
  });

  it('every output is validated from a real run somewhere in the test suite (jsonOutput with its name)', () => {
    const sources = testSources(path.join(REPO, 'test')).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
    const unused = OUTPUTS.map((o) => o.name).filter((name) => !new RegExp(`jsonOutput(?:<[^>]*>)?\\('${name}'`).test(sources) && !(name === 'error' && sources.includes('errorEnvelope(')));
    expect(unused).toEqual([]);
  });

  it('docs/json.md documents every output with its schema file', () => {
    const doc = fs.readFileSync(path.join(REPO, 'docs/json.md'), 'utf8');
    for (const output of OUTPUTS) expect(doc, output.name).toContain(`schemas/${output.name}.schema.json`);
  });
});

function testSources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return testSources(full);
    return entry.name.endsWith('.ts') && entry.name !== 'schemas.test.ts' ? [full] : [];
  });
}
