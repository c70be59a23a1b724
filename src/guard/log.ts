import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureFolder } from '../pipeline/files.js';
import { LOG_DIR } from '../pipeline/install-log.js';
import type { WrittenFile } from '../pipeline/writes.js';

/** guard.log is rotated when it passes this size: guard.log -> guard.log.1 (one old copy kept). */
export const GUARD_LOG_MAX_BYTES = 1024 * 1024;

/** What the guard restored, and its failures (root only, beside the install's log). */
const GUARD_LOG: WrittenFile = { path: LAYOUT.guardLog, type: 'file', mode: 0o600, life: 'server' };
const GUARD_LOG_OLD: WrittenFile = { path: `${LAYOUT.guardLog}.1`, type: 'file', mode: 0o600, life: 'server' };
export const GUARD_LOG_WRITES: readonly WrittenFile[] = [GUARD_LOG, GUARD_LOG_OLD];

/**
 * Appends lines to guard.log (0600 in a 0700 folder), rotating it by size first.
 * Lines must already be redacted; each gets a timestamp.
 */
export async function appendGuardLog(host: Host, lines: string[], maxBytes = GUARD_LOG_MAX_BYTES): Promise<void> {
  await ensureFolder(host, LOG_DIR);
  const info = await host.files.stat(GUARD_LOG.path);
  if (info && info.size >= maxBytes) await host.files.rename(GUARD_LOG.path, GUARD_LOG_OLD.path);
  const existing = (await host.files.read(GUARD_LOG.path)) ?? '';
  const stamp = host.now().toISOString();
  // Whole-file atomic write (the file is small and capped): a reader never sees half a line.
  await host.files.write(GUARD_LOG.path, `${existing}${lines.map((line) => `${stamp} ${line}\n`).join('')}`, { mode: GUARD_LOG.mode });
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
