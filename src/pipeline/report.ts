import type { PipelineOutcome } from './runner.js';

/** `ok=12 changed=3 skipped=5 failed=0`, the recap line's counts (Ansible's shape). */
export function formatRecap(recap: PipelineOutcome['recap']): string {
  return `ok=${recap.ok} changed=${recap.changed} skipped=${recap.skipped} failed=${recap.failed}`;
}

/** The pipeline's result as JSON: the install recap (--json, the catalog deploy). */
export function pipelineJson(outcome: PipelineOutcome, mode: 'check' | 'apply', durationMs: number) {
  return {
    ok: !outcome.failed,
    mode,
    recap: outcome.recap,
    durationMs,
    steps: outcome.results.map((r) => ({
      id: r.id,
      status: r.status,
      durationMs: r.durationMs,
      ...(r.startMs !== undefined && r.endMs !== undefined ? { startMs: r.startMs, endMs: r.endMs } : {}),
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.changes.length ? { changes: r.changes.map((c) => c.summary) } : {}),
      ...(r.error ? { error: r.error, hint: r.hint } : {}),
    })),
  };
}

/** What --check and --diff print on stdout: the diffs, then one line per planned change. */
export function planLines(outcome: PipelineOutcome, options: { check: boolean; diff: boolean }): string[] {
  const lines: string[] = [];
  if (options.diff) for (const change of outcome.results.flatMap((r) => r.changes)) if (change.diff) lines.push(change.diff);
  if (options.check) for (const r of outcome.results) for (const c of r.changes) lines.push(`would change  ${r.id}: ${c.summary}`);
  // In check mode a failed step is one that could not be planned; the others still were.
  if (options.check) for (const r of outcome.results) if (r.status === 'failed') lines.push(`cannot plan   ${r.id}: ${r.error}${r.hint ? ` (${r.hint})` : ''}`);
  return lines;
}
