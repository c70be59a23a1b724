/**
 * Typed errors. The one catch in cli.ts maps them to exit codes:
 *   0 ok, 1 failure, 2 bad usage or input (nothing was changed).
 * Every message ends with what to do next, in `hint`.
 */
export const ExitCode = { ok: 0, failure: 1, usage: 2 } as const;
/** The shared codes above, or a command family's own (partner: 10-15). */
export type ExitCode = number;

export class DeployError extends Error {
  readonly exitCode: ExitCode = ExitCode.failure as ExitCode;
  constructor(
    message: string,
    readonly hint?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad flags, bad answers, bad input files: exit 2, and nothing on disk changed. */
export class UsageError extends DeployError {
  override readonly exitCode: ExitCode = ExitCode.usage;
}

/** Another run holds a lock we need. */
export class LockBusyError extends DeployError {}

/** A command we ran failed; message and output are already redacted. */
export class CommandError extends DeployError {
  constructor(
    message: string,
    readonly result: { command: string; exitCode: number | undefined; stdout: string; stderr: string },
    hint?: string,
  ) {
    super(message, hint);
  }
}

/** The user cancelled a prompt (Ctrl-C): not a failure. */
export class CancelledError extends DeployError {
  override readonly exitCode: ExitCode = ExitCode.ok;
}

export function exitCodeOf(error: unknown): ExitCode {
  return error instanceof DeployError ? error.exitCode : ExitCode.failure;
}
