import { execa } from 'execa';
import { AsyncLocalStorage } from 'node:async_hooks';
import { accessSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { CommandError } from '../errors.js';
import type { Logger } from './log.js';
import type { Redactor } from './redact.js';

export interface RunOptions {
  /** Data for the child's stdin: the only way a secret reaches a command. */
  input?: string;
  /** Variables this command needs, on top of the minimal environment (see childEnv). */
  env?: Record<string, string | undefined>;
  /** Names to pass on from our own environment when set (e.g. NETWORK_ENV for apt and npm). */
  inherit?: readonly string[];
  /**
   * Variables of `env` allowed to hold a secret: for the one command that needs it and
   * cannot read it from stdin or a file (say which and why in docs/operations.md, "Child processes and secrets").
   */
  secretEnv?: readonly string[];
  cwd?: string;
  timeoutMs?: number;
  /** Return the result instead of throwing on a non-zero exit. */
  allowFailure?: boolean;
  /** Each line of output (stdout and stderr, secrets masked) as it arrives: progress of long work. */
  onOutputLine?: (line: string) => void;
}

export interface RunResult {
  command: string;
  exitCode: number;
  stdout: string;
  stderr: string;
  failed: boolean;
  /** Killed at `timeoutMs`: the command did not finish, which says nothing of its verdict. */
  timedOut: boolean;
}

/** What every child gets from our environment, and nothing else unless the call asks. */
export const BASE_ENV = ['PATH', 'HOME', 'LANG'] as const;

/**
 * The machine's proxy and CA settings: the commands that download (apt-get, npm) need
 * them on a server behind a proxy or a TLS-inspecting gateway.
 */
export const NETWORK_ENV = ['http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'NODE_EXTRA_CA_CERTS'] as const;

/**
 * The environment of a child process: PATH, HOME and LANG from ours, the names the call
 * inherits, and the values it sets. Nothing else of ours (the install's answers come
 * in SERVICE_API_KEY, SERVICE_MCP_TOKEN... and must not reach apt's maintainer scripts
 * or npm's install scripts). In a sandbox (SERVICE_DEPLOY_ROOT) the children are the
 * test stand-ins, which also get SERVICE_DEPLOY_ROOT and their own STANDIN_* settings.
 */
export function childEnv(parent: NodeJS.ProcessEnv, options: Pick<RunOptions, 'env' | 'inherit'> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  const take = (name: string) => {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  };
  for (const name of BASE_ENV) take(name);
  for (const name of options.inherit ?? []) take(name);
  if (parent.SERVICE_DEPLOY_ROOT) {
    take('SERVICE_DEPLOY_ROOT');
    for (const name of Object.keys(parent)) if (name.startsWith('STANDIN_')) take(name);
  }
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** How much lower the commands started in the current async context run (runLowered). */
const lowering = new AsyncLocalStorage<number>();

/**
 * Runs `work` with every command it starts through Exec at a lower CPU priority (nice +
 * `by`, at most 19): for a step the gateway's first start does not wait for, so the
 * steps it does wait for get the cores first (Step.background). Carried by the async
 * context, not by another Host: the host stays the one object every step shares (the
 * manifest's recorder and other per-host state are keyed by it).
 */
export function runLowered<T>(by: number, work: () => Promise<T>): Promise<T> {
  return lowering.run((lowering.getStore() ?? 0) + by, work);
}

/** The lowering in effect here (0 outside runLowered). */
export function currentLowering(): number {
  return lowering.getStore() ?? 0;
}

/**
 * Runs commands from PATH with a minimal environment (childEnv). Arguments and
 * environment are checked for secrets before the process starts (a secret goes to a
 * command by stdin or a 0600 file); output and errors are redacted before anyone sees them.
 */
export class Exec {
  constructor(
    private readonly redactor: Redactor,
    private readonly log: Logger,
    private readonly baseEnv: NodeJS.ProcessEnv = process.env,
  ) {}

  async run(command: string, args: readonly string[] = [], options: RunOptions = {}): Promise<RunResult> {
    this.redactor.assertNotInArgv(command, args);
    const env = childEnv(this.baseEnv, options);
    const leaked = Object.keys(env).filter((name) => !options.secretEnv?.includes(name) && this.redactor.contains(env[name]!));
    if (leaked.length > 0) {
      throw new Error(`refusing to run ${command}: ${leaked.join(', ')} in its environment would hold a secret (pass it through stdin or a 0600 file)`);
    }
    const shown = [command, ...args].map(quoteForLog).join(' ');
    this.log.debug(`run: ${shown}`);
    const subprocess = execa(command, args, {
      input: options.input,
      env,
      extendEnv: false,
      cwd: options.cwd,
      timeout: options.timeoutMs,
      reject: false,
      stripFinalNewline: false,
      encoding: 'utf8',
      stdin: options.input === undefined ? 'ignore' : 'pipe',
    });
    const niceness = currentLowering();
    if (niceness > 0 && subprocess.pid !== undefined) {
      // Reniced as soon as it is spawned; what it starts inherits it.
      try {
        os.setPriority(subprocess.pid, Math.min(19, os.getPriority() + niceness));
      } catch {
        // Gone already, or not allowed: it runs at our priority, which is only slower for others.
      }
    }
    const { onOutputLine } = options;
    if (onOutputLine) {
      // A listener beside execa's own (it collects the output from the same events).
      for (const stream of [subprocess.stdout, subprocess.stderr]) stream?.on('data', lineSplitter((line) => onOutputLine(this.redactor.redact(line))));
    }
    const result = await subprocess;
    const out: RunResult = {
      command: shown,
      exitCode: result.exitCode ?? -1,
      stdout: String(result.stdout ?? ''),
      stderr: this.redactor.redact(String(result.stderr ?? '')),
      failed: Boolean(result.failed),
      timedOut: Boolean(result.timedOut),
    };
    if (result.failed) {
      const reason = result.timedOut
        ? `timed out after ${options.timeoutMs} ms`
        : result.code === 'ENOENT'
          ? 'command not found on PATH'
          : `exit code ${result.exitCode ?? result.signal ?? 'unknown'}`;
      this.log.debug(`run failed (${reason}): ${shown}${out.stderr ? `\n${tail(out.stderr)}` : ''}`);
      if (!options.allowFailure) {
        throw new CommandError(`${shown} failed: ${reason}${out.stderr ? `\n${tail(out.stderr)}` : ''}`, {
          command: shown,
          exitCode: result.exitCode,
          stdout: this.redactor.redact(out.stdout),
          stderr: out.stderr,
        });
      }
    }
    return out;
  }

  /** Full path of `command` on PATH, or undefined. */
  async which(command: string): Promise<string | undefined> {
    for (const dir of (this.baseEnv.PATH ?? '').split(':')) {
      if (!dir) continue;
      const candidate = path.join(dir, command);
      try {
        // Synchronous: one quick syscall per PATH entry, not a thread-pool round trip each.
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // not in this PATH entry; keep looking
      }
    }
    return undefined;
  }
}

/** Calls `onLine` for every complete, non-blank line of a stream's chunks (a last unfinished line is dropped). */
export function lineSplitter(onLine: (line: string) => void): (chunk: Buffer | string) => void {
  let partial = '';
  const decoder = new StringDecoder('utf8'); // a character split between two chunks stays whole
  return (chunk) => {
    const parts = (partial + (typeof chunk === 'string' ? chunk : decoder.write(chunk))).split(/\r\n|\n|\r/);
    partial = parts.pop() ?? '';
    for (const line of parts) if (line.trim()) onLine(line);
  };
}

function quoteForLog(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function tail(text: string, lines = 20): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
