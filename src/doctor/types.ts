import type { DoctorContext } from './context.js';

export type Severity = 'warn' | 'fail';
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip' | 'crashed';

/**
 * When a fix runs in `--fix`: first what the gateway reads (its config, the guard), then
 * the files of the manifest, then the services in front of it (nginx, the firewall),
 * and the one gateway restart last. The checks are read again between fixes, so none
 * repeats another's work.
 */
export const FIX_PHASES = ['config', 'files', 'services', 'restart'] as const;
export type FixPhase = (typeof FIX_PHASES)[number];

/**
 * A safe repair `--fix` may run (Homebrew's "fix made of the exact commands"), declared
 * by the check it belongs to (`Check.fixes`); a finding of any check may name it. It
 * runs once per `--fix`, in FIXES order (doctor/index.ts: by phase, then in the order
 * of the checks that declare them). Its id is what `--json` prints (doctor/output.ts).
 */
export interface Fix {
  id: string;
  title: string;
  phase: FixPhase;
  /** It runs also when no finding names it but this holds after the fixes before it (the gateway restart after a fix changed what the gateway reads). */
  alsoWhen?(ctx: DoctorContext): boolean;
  /** false: nothing was left to do (an earlier fix did it); the fix is then not reported. */
  run(ctx: DoctorContext): Promise<void | false>;
}

/** A fix whose code is loaded only when `--fix` runs it (doctor without --fix loads none of it). */
export function lazyFix(declared: Omit<Fix, 'run'>, load: () => Promise<Fix['run']>): Fix {
  return { ...declared, run: async (ctx) => (await load())(ctx) };
}

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
  action?: Fix;
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
  /** The fixes it brings (its findings, and other checks', may name them). */
  fixes?: readonly Fix[];
}

export const pass = (detail: string): Passed => ({ kind: 'pass', detail });
export const skip = (reason: string): Skipped => ({ kind: 'skip', reason });
export const fail = (message: string, fix: string, extra: { commands?: string[]; action?: Fix } = {}): Finding => ({
  kind: 'finding',
  severity: 'fail',
  message,
  fix,
  ...extra,
});
export const warn = (message: string, fix: string, extra: { commands?: string[]; action?: Fix } = {}): Finding => ({
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
  /** The id of the --fix fix that repairs it, when fixable. */
  action?: string;
  durationMs: number;
}
