import { DeployError, errorCodeOf, exitCodeOf } from '../errors.js';
import { printJson } from '../output.js';
import type { ErrorBody, JsonInput, JsonOutput } from './define.js';
import { errorOutput } from './outputs.js';

export { defineOutput, type JsonOutput, type JsonInput, type ErrorBody } from './define.js';
export * from './outputs.js';

/**
 * Prints one `--json` document on stdout: `value` parsed through the output's zod schema
 * (only the schema's keys, in its order; a value that does not fit is a bug and throws,
 * which the CLI turns into the error envelope), with its `schemaVersion` first.
 */
export function emitJson<O extends JsonOutput>(output: O, value: JsonInput<O>, writeLine?: (line: string) => void): void {
  printJson(output.schema.parse({ schemaVersion: output.version, ...value }), writeLine);
}

/** `error` for any thrown value: its stable code, message, hint and exit code. */
export function errorBody(error: unknown): ErrorBody {
  const known = error instanceof DeployError;
  return {
    code: errorCodeOf(error),
    message: error instanceof Error ? error.message : String(error),
    hint: known ? (error.hint ?? null) : 'this is a bug in service-deploy; please report it with the output of the same command with --verbose',
    exitCode: exitCodeOf(error),
  };
}

/** The error envelope `{ schemaVersion, ok: false, error }`: what --json prints when a command ends before its own document. */
export function emitError(error: unknown): void {
  emitJson(errorOutput, { ok: false, error: errorBody(error) });
}
