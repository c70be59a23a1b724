import { CancelledError, DeployError } from './errors.js';
import { sourceMapped } from './stack.js';

/** stdout is for data (and --json); everything human and diagnostic goes to stderr. */

let jsonDocuments = 0;

/** One JSON document on stdout, or through `writeLine` (a command's own door to stdout, for tests). */
export function printJson(value: unknown, writeLine?: (line: string) => void): void {
  const text = JSON.stringify(value, null, 2);
  if (writeLine) writeLine(text);
  else process.stdout.write(`${text}\n`);
  jsonDocuments++;
}

/** How many JSON documents this run printed: the CLI prints the error envelope only when none was (one document per run). */
export function jsonDocumentsPrinted(): number {
  return jsonDocuments;
}

/** A new run in the same process (tests drive `main` repeatedly). */
export function resetJsonDocuments(): void {
  jsonDocuments = 0;
}

/**
 * Whether these command-line arguments ask for JSON on stdout: `--json` (the last of
 * `--json` / `--no-json` / `--json=BOOL` wins), or `--catalog` when `catalogIsJson` (the
 * install: the portal's deploy answers in JSON). Read from the raw arguments, so that
 * even a command line the parser refuses gets its error as JSON.
 */
export function wantsJson(args: readonly string[], catalogIsJson = false): boolean {
  let json = false;
  for (const arg of args) {
    if (arg === '--') break;
    if (arg === '--json' || arg === '--json=true') json = true;
    else if (catalogIsJson && (arg === '--catalog' || arg === '--catalog=true')) json = true;
    else if (arg === '--no-json' || arg === '--json=false') json = false;
  }
  return json;
}

export function printLine(line = ''): void {
  process.stdout.write(`${line}\n`);
}

export function printError(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** The one way an error reaches a person: its message and what to do (hint); anything else is a bug. */
export function reportError(error: unknown, verbose = false): void {
  if (error instanceof CancelledError) {
    printError(`Cancelled: ${error.message}`);
  } else if (error instanceof DeployError) {
    printError(`Error: ${error.message}`);
    if (error.hint) printError(`  -> ${error.hint}`);
    // --verbose: where it was raised, in the TypeScript sources.
    if (verbose && error.stack) printError(sourceMapped(error.stack).split('\n').filter((line) => /^\s+at /.test(line)).join('\n'));
  } else {
    const text = error instanceof Error ? (error.stack ? sourceMapped(error.stack) : error.message) : String(error);
    printError(`Internal error: ${text}`);
    printError('  -> this is a bug in service-deploy; please report it with the output above');
  }
}
