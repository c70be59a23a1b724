import { Exec } from './exec.js';
import { Files } from './files.js';
import { Locks } from './locks.js';
import { Logger } from './log.js';
import { Net } from './net.js';
import { PathMap } from './paths.js';
import { Proc } from './proc.js';
import { readOnlyParts } from './read-only.js';
import { Redactor } from './redact.js';
import { Services } from './services.js';

export { ROOT_OWNER, type Owner, type FileInfo } from './files.js';
export { MASK, maskSecret } from './redact.js';
export { CheckModeViolation } from './read-only.js';

/**
 * The only door to the machine. Steps, checks and commands receive a Host and
 * touch files, processes, services and locks through it, so the same code runs
 * against a real server, a sandbox folder (SERVICE_DEPLOY_ROOT) with stand-in
 * commands on PATH, or a booted test container.
 */
export interface Host {
  readonly paths: PathMap;
  readonly files: Files;
  readonly exec: Exec;
  readonly services: Services;
  readonly locks: Locks;
  readonly net: Net;
  /** Live processes (/proc), never mapped into the sandbox. */
  readonly proc: Proc;
  readonly redactor: Redactor;
  readonly log: Logger;
  readonly env: NodeJS.ProcessEnv;
  /** True for the check-mode host (host/read-only.ts): every change throws. */
  readonly readOnly: boolean;
  now(): Date;
}

export interface HostOptions {
  env?: NodeJS.ProcessEnv;
  verbose?: boolean;
  quiet?: boolean;
  stderr?: (line: string) => void;
}

export function createHost(options: HostOptions = {}): Host {
  const env = options.env ?? process.env;
  const paths = new PathMap(env.SERVICE_DEPLOY_ROOT);
  const redactor = new Redactor();
  const log = new Logger(redactor, { verbose: options.verbose, quiet: options.quiet, stderr: options.stderr });
  const exec = new Exec(redactor, log, env);
  return {
    paths,
    files: new Files(paths),
    exec,
    services: new Services(exec),
    locks: new Locks(paths),
    net: new Net(),
    proc: new Proc(),
    redactor,
    log,
    env,
    readOnly: false,
    now: () => new Date(),
  };
}

/**
 * The same machine, read-only: every change throws a CheckModeViolation (host/read-only.ts).
 * --check, --diff, restore --check, guard --check and render run on it.
 */
export function readOnlyHost(host: Host): Host {
  if (host.readOnly) return host;
  return { ...readOnlyParts(host), readOnly: true };
}

