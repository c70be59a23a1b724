/**
 * Progress text for long work, in one shape for every step (the renderers show it: a
 * live line on a terminal, sparse lines when piped, see renderer.ts).
 */

/** `12.3 of 28.1 MB (44%)`, or `12.3 MB` when the total is unknown. */
export function bytesProgress(received: number, total: number | undefined): string {
  const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
  return total ? `${mb(received)} of ${mb(total)} MB (${Math.floor((received / total) * 100)}%)` : `${mb(received)} MB`;
}

/** `12 s of 120 s`: a wait and its limit. */
export function waitProgress(elapsedMs: number, limitMs: number): string {
  return `${Math.floor(elapsedMs / 1000)} s of ${Math.round(limitMs / 1000)} s`;
}
