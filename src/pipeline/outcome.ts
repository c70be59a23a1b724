import type { StepResult } from './step.js';

/** `ok`, `changed (what)`, `skipped: why`, `failed: why` (check mode: `would change (what)`, `cannot plan: why`). */
export function outcomeText(result: StepResult, check: boolean): string {
  switch (result.status) {
    case 'ok':
      return 'ok';
    case 'changed':
      return `${check ? 'would change' : 'changed'} (${result.changes.map((c) => c.summary).join('; ')})`;
    case 'skipped':
      return `skipped: ${result.reason ?? ''}`;
    case 'failed':
      return `${check ? 'cannot plan' : 'failed'}: ${result.error ?? ''}`;
  }
}
