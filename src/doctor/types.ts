import type { DoctorContext } from './context.js';

export type Severity = 'warn' | 'fail';
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip' | 'crashed';

/**
 * A safe repair `--fix` may run (Homebrew's "fix made of the exact commands"):
 * several findings can name the same action; it runs once, in FIX_ORDER.
 */
export type FixActionId = 'files' | 'runtime-config' | 'cron' | 'guard' | 'nginx-site' | 'nginx-restart' | 'nginx-hardening' | 'channel-limits' | 'gateway-restart';

/** What a check returns when something is wrong: Homebrew's finding, Flutter's ValidationResult. */
export interface Finding {
  kind: 'finding';
  severity: Severity;
  message: string;
  /** The fix in words (always present). */
  fix: string;
  /** The exact commands a person would run, shown under the fix. */
  commands?: string[];
  /** Set when `--fix` can repair it safely. */
  action?: FixActionId;
}

/** A check that does not apply here (e.g. no channel configured). */
export interface Skipped {
  kind: 'skip';
  reason: string;
}

/** A pass with a detail worth showing ("Ubuntu 24.04 on x64"). */
export interface Passed {
  kind: 'pass';
  detail: string;
}

export type CheckResult = Finding | Skipped | Passed | undefined;

export interface Check {
  id: string;
  title: string;
  run(ctx: DoctorContext): Promise<CheckResult>;
}

export const pass = (detail: string): Passed => ({ kind: 'pass', detail });
export const skip = (reason: string): Skipped => ({ kind: 'skip', reason });
export const fail = (message: string, fix: string, extra: { commands?: string[]; action?: FixActionId } = {}): Finding => ({
  kind: 'finding',
  severity: 'fail',
  message,
  fix,
  ...extra,
});
export const warn = (message: string, fix: string, extra: { commands?: string[]; action?: FixActionId } = {}): Finding => ({
  kind: 'finding',
  severity: 'warn',
  message,
  fix,
  ...extra,
});

/** One line of the report (and one element of `--json` checks[]). */
export interface CheckReport {
  id: string;
  title: string;
  status: CheckStatus;
  message: string;
  fix?: string;
  commands?: string[];
  fixable: boolean;
  /** The --fix action that repairs it, when fixable. */
  action?: FixActionId;
  durationMs: number;
}
