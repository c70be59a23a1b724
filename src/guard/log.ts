import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';

/** guard.log is rotated when it passes this size: guard.log -> guard.log.1 (one old copy kept). */
export const GUARD_LOG_MAX_BYTES = 1024 * 1024;

/**
 * Appends lines to guard.log (0600 in a 0700 folder), rotating it by size first.
 * Lines must already be redacted; each gets a timestamp.
 */
export async function appendGuardLog(host: Host, lines: string[], maxBytes = GUARD_LOG_MAX_BYTES): Promise<void> {
  await host.files.ensureDir(LAYOUT.logDir, 0o700);
  const info = await host.files.stat(LAYOUT.guardLog);
  if (info && info.size >= maxBytes) await host.files.rename(LAYOUT.guardLog, `${LAYOUT.guardLog}.1`);
  const existing = (await host.files.read(LAYOUT.guardLog)) ?? '';
  const stamp = host.now().toISOString();
  // Whole-file atomic write (the file is small and capped): a reader never sees half a line.
  await host.files.write(LAYOUT.guardLog, `${existing}${lines.map((line) => `${stamp} ${line}\n`).join('')}`, { mode: 0o600 });
}

/**
 * Sends lines to syslog / the journal with `logger -t <tag>`, the lines on stdin
 * (never in argv). A missing logger is not fatal: guard.log still has the lines.
 */
export async function syslog(host: Host, tag: string, lines: string[]): Promise<void> {
  const result = await host.exec.run('logger', ['-t', tag], {
    input: `${lines.map((line) => host.redactor.redact(line)).join('\n')}\n`,
    allowFailure: true,
    timeoutMs: 10_000,
  });
  if (result.exitCode !== 0) host.log.debug(`logger failed (${result.exitCode}): ${result.stderr.trim()}`);
}
