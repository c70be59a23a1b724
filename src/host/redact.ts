/**
 * Secrets known to this run. Every log line, error message and command
 * transcript passes through `redact` before it is shown or stored, and
 * `assertNotInArgv` refuses to start a process whose arguments hold one
 * (process arguments are world-readable through /proc and `ps`).
 */
export const MASK = '****';

/** Shortest value we treat as a secret: shorter ones would mask ordinary words. */
const MIN_SECRET_LENGTH = 6;

export class Redactor {
  private readonly secrets = new Set<string>();

  add(...values: Array<string | undefined>): void {
    for (const value of values) {
      if (value && value.length >= MIN_SECRET_LENGTH) this.secrets.add(value);
    }
  }

  get size(): number {
    return this.secrets.size;
  }

  redact(text: string): string {
    if (this.secrets.size === 0 || !text) return text;
    let out = text;
    // Longest first, so a secret containing another is masked whole.
    for (const secret of [...this.secrets].sort((a, b) => b.length - a.length)) {
      out = out.split(secret).join(MASK);
    }
    return out;
  }

  contains(text: string): boolean {
    for (const secret of this.secrets) if (text.includes(secret)) return true;
    return false;
  }

  assertNotInArgv(command: string, args: readonly string[]): void {
    if ([command, ...args].some((arg) => this.contains(arg))) {
      throw new Error(
        `refusing to run ${command}: a secret would appear in its arguments (pass it through stdin or a 0600 file)`,
      );
    }
  }
}

/** Shows that a secret is set without showing it: `pkt_…c9f2` style. */
export function maskSecret(value: string | undefined): string {
  if (!value) return '(unset)';
  if (value.length < 12) return MASK;
  return `${value.slice(0, 4)}${MASK}${value.slice(-4)}`;
}
