import type { Argv } from 'yargs';
import { DeployError } from '../errors.js';

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

export function notImplemented(command: string, issue: string): never {
  throw new DeployError(`\`service-deploy ${command}\` is not implemented yet`, `it arrives with ${issue}`);
}
