import { rewritable, type Rewrite, type RewriteContext, type WrittenFile } from '../pipeline/writes.js';
import { installWrites } from '../steps/index.js';

/** What rendering needs from doctor's context (kept narrow: context.ts uses this module). */
export type RenderContext = RewriteContext;

/** What must follow when doctor --fix writes the file again. */
export type Effect = NonNullable<Rewrite['effect']>;

export type OwnFile = WrittenFile & { rewrite: Rewrite };

/**
 * The files doctor --fix may write again because their content comes from this
 * binary alone (templates, the stored answers, channel.env): those whose writer
 * declares a `rewrite` (pipeline/writes.ts), written by the same functions the install
 * uses. Everything else in the manifest (secrets, certificates, downloads, npm packages)
 * is named with the command that restores it.
 */
export const OWN_FILES: readonly OwnFile[] = rewritable(installWrites());

export function ownFile(p: string): OwnFile | undefined {
  return OWN_FILES.find((f) => f.path === p);
}
