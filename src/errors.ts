/**
 * Typed errors. The one catch in cli.ts maps them to exit codes, one rule for every
 * command (README "Exit codes"):
 *   0 done;
 *   1 failed while working (a command, a download, a service did not do its part);
 *   2 refused before changing anything: bad usage, bad input (flags, environment,
 *     answers, files), a bad archive, or an unsafe state (a link where a folder must
 *     be, another run holding the lock).
 * Anything else that escapes is an "Internal error": a bug, never an expected outcome.
 * Every message ends with what to do next, in `hint`.
 */
export const ExitCode = { ok: 0, failure: 1, usage: 2 } as const;
/** The shared codes above, or a command family's own (partner: 10-15). */
export type ExitCode = number;

export class DeployError extends Error {
  readonly exitCode: ExitCode = ExitCode.failure as ExitCode;
  /** Stable, machine-readable kind of failure: `error.code` of the --json error envelope (docs/json.md). */
  readonly code: string = 'failed';
  constructor(
    message: string,
    readonly hint?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Refused: bad flags, answers, environment, files or archives, or an unsafe state. Exit 2, nothing changed. */
export class UsageError extends DeployError {
  override readonly exitCode: ExitCode = ExitCode.usage;
  override readonly code: string = 'refused';
  constructor(message: string, hint?: string, options?: { cause?: unknown }) {
    super(message, withNothingChanged(hint), options);
  }
}

/** Every refusal says that nothing was changed (README "Exit codes"), once: unless its hint already says what was not done. */
export function withNothingChanged(hint: string | undefined): string {
  if (!hint) return 'nothing was changed';
  return /nothing (was|is) (changed|sent|run|written|removed|put back)|nothing changed/i.test(hint) ? hint : `${hint}; nothing was changed`;
}

/** The command line itself is wrong: an unknown or inapplicable option, a missing argument (exit 2). */
export class ArgumentError extends UsageError {
  override readonly code: string = 'usage';
}

/** Another run holds a lock we need: refused, nothing changed (exit 2). */
export class LockBusyError extends DeployError {
  override readonly exitCode: ExitCode = ExitCode.usage;
  override readonly code: string = 'busy';
  constructor(message: string, hint?: string, options?: { cause?: unknown }) {
    super(message, withNothingChanged(hint), options);
  }
}

/** A command we ran failed; message and output are already redacted. */
export class CommandError extends DeployError {
  constructor(
    message: string,
    readonly result: { command: string; exitCode: number | undefined; stdout: string; stderr: string },
    hint?: string,
  ) {
    super(message, hint);
  }
  override readonly code: string = 'command-failed';
}

/** The user cancelled a prompt (Ctrl-C): not a failure. */
export class CancelledError extends DeployError {
  override readonly exitCode: ExitCode = ExitCode.ok;
  override readonly code: string = 'cancelled';
}

export function exitCodeOf(error: unknown): ExitCode {
  return error instanceof DeployError ? error.exitCode : ExitCode.failure;
}

/** `error.code` for any error: the class's own, or `internal` for anything that is not ours (a bug). */
export function errorCodeOf(error: unknown): string {
  return error instanceof DeployError ? error.code : 'internal';
}
