import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { REPO } from './binary.js';

/**
 * Validates what the program printed against the PUBLISHED JSON Schema
 * (schemas/<name>.schema.json), with a validator independent of zod (ajv): a test that
 * parses a --json output through `jsonOutput` proves the document a partner's script
 * reads matches the file we publish.
 */
// Strict, except strictRequired: "error is required when ok is false" (if/then) names a
// property declared at the top of the schema, not inside the `then` branch.
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
const compiled = new Map<string, ValidateFunction>();

export const SCHEMA_DIR = path.join(REPO, 'schemas');

export function schemaValidator(name: string): ValidateFunction {
  let validate = compiled.get(name);
  if (!validate) {
    const file = path.join(SCHEMA_DIR, `${name}.schema.json`);
    if (!fs.existsSync(file)) throw new Error(`no published schema ${path.relative(REPO, file)}`);
    validate = ajv.compile(JSON.parse(fs.readFileSync(file, 'utf8')));
    compiled.set(name, validate);
  }
  return validate;
}

/** Every schema name a test validated against in this worker (the coverage test reads it). */
export const validatedNames = new Set<string>();

/** stdout must be exactly one JSON document, valid against schemas/<name>.schema.json; returns it. */
export function jsonOutput<T = any>(name: string, stdout: unknown): T {
  const text = String(stdout ?? '');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new Error(`expected one JSON document (${name}) on stdout, got: ${JSON.stringify(text.slice(0, 400))} (${(error as Error).message})`);
  }
  const validate = schemaValidator(name);
  if (!validate(doc)) throw new Error(`stdout does not match schemas/${name}.schema.json: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 2000)}`);
  validatedNames.add(name);
  return doc as T;
}

/** The error envelope (schemas/error.schema.json), with the exit code it claims checked against the real one. */
export function errorEnvelope(stdout: unknown, exitCode: number | undefined) {
  const doc = jsonOutput<{ ok: false; error: { code: string; message: string; hint: string | null; exitCode: number } }>('error', stdout);
  if (doc.error.exitCode !== exitCode) throw new Error(`envelope says exit ${doc.error.exitCode}, the process exited ${exitCode}`);
  return doc;
}
