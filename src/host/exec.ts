import { execa } from 'execa';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { CommandError } from '../errors.js';
import type { Logger } from './log.js';
import type { Redactor } from './redact.js';

export interface RunOptions {
  /** Data for the child's stdin: the only way a secret reaches a command. */
  input?: string;
  env?: Record<string, string | undefined>;
  cwd?: string;
  timeoutMs?: number;
  /** Return the result instead of throwing on a non-zero exit. */
  allowFailure?: boolean;
}

export interface RunResult {
  command: string;
  exitCode: number;
  stdout: string;
  stderr: string;
  failed: boolean;
}

/**
 * Runs commands from PATH. Arguments are checked for secrets before the process
 * starts; output and errors are redacted before anyone sees them.
 */
export class Exec {
  constructor(
    private readonly redactor: Redactor,
    private readonly log: Logger,
    private readonly baseEnv: NodeJS.ProcessEnv = process.env,
  ) {}

  async run(command: string, args: readonly string[] = [], options: RunOptions = {}): Promise<RunResult> {
    this.redactor.assertNotInArgv(command, args);
    const shown = [command, ...args].map(quoteForLog).join(' ');
    this.log.debug(`run: ${shown}`);
    const result = await execa(command, args, {
      input: options.input,
      env: { ...this.baseEnv, ...options.env },
      extendEnv: false,
      cwd: options.cwd,
      timeout: options.timeoutMs,
      reject: false,
      stripFinalNewline: false,
      encoding: 'utf8',
      stdin: options.input === undefined ? 'ignore' : 'pipe',
    });
    const out: RunResult = {
      command: shown,
      exitCode: result.exitCode ?? -1,
      stdout: String(result.stdout ?? ''),
      stderr: this.redactor.redact(String(result.stderr ?? '')),
      failed: Boolean(result.failed),
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
        await access(candidate, constants.X_OK);
        return candidate;
      } catch {
        // not in this PATH entry; keep looking
      }
    }
    return undefined;
  }
}

function quoteForLog(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function tail(text: string, lines = 20): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
