import type { Argv } from 'yargs';

export interface GlobalOptions {
  json?: boolean;
  verbose?: boolean;
}

/** Options every command understands. */
export function withGlobals<T>(yargs: Argv<T>) {
  return yargs
    .option('json', { type: 'boolean', describe: 'Print machine-readable JSON on stdout' })
    .option('verbose', { type: 'boolean', describe: 'Show every command run and more detail on stderr' });
}
