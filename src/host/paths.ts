import path from 'node:path';

/**
 * Maps the absolute paths the program thinks in (/etc/nginx/..., /root/.openclaw/...)
 * onto the machine. With SERVICE_DEPLOY_ROOT=/some/dir every path lands under that
 * folder, so the whole program runs against a sandbox; commands still come from PATH.
 */
export class PathMap {
  readonly root: string;

  constructor(root: string | undefined) {
    this.root = root ? path.resolve(root) : '';
  }

  get sandboxed(): boolean {
    return this.root !== '';
  }

  /** Where an absolute program path lives on this machine. */
  real(absolute: string): string {
    if (!path.isAbsolute(absolute)) throw new Error(`internal: expected an absolute path, got ${absolute}`);
    return this.root ? path.join(this.root, absolute) : absolute;
  }

  /** The program path of a real path (inverse of `real`). */
  logical(real: string): string {
    if (!this.root) return real;
    const rel = path.relative(this.root, real);
    if (rel.startsWith('..')) return real;
    return `/${rel}`;
  }
}
