import { LAYOUT } from '../../layout.js';
import { fail, lazyFix, pass, warn, type Check } from '../types.js';

/** What the install manifest records put back; our own files (a declared `rewrite`, pipeline/writes.ts) written again. */
export const filesFix = lazyFix(
  { id: 'files', title: 'put the recorded modes and owners back, write our own files again', phase: 'files' },
  async () => (await import('../fixes.js')).repairFiles,
);

/**
 * Every file, link and folder the install wrote, against the install manifest:
 * present, same type, owner, mode (a secret never readable by group or others) and
 * content (SHA-256). `--fix` puts modes and owners back and writes our own files
 * again; the rest is named with the command that restores it.
 */
export const filesCheck: Check = {
  id: 'files',
  title: 'Files the install wrote: type, owner, mode, content (install manifest)',
  fixes: [filesFix],
  async run(ctx) {
    const audit = await ctx.audit();
    const { read, issues } = audit;
    if (read.missing) {
      return warn(`${LAYOUT.manifestFile} is missing: doctor cannot tell whether the files service-deploy wrote are intact`, 'run the install again: it records every file it manages (nothing else changes on a healthy server)', { commands: ['service-deploy install'] });
    }
    if (!read.entries) {
      return fail(`${read.problem}`, 'run the install again: it writes a new manifest from the files it manages (edit nothing in it by hand)', { commands: ['service-deploy install'] });
    }
    if (issues.length === 0) return pass(`${audit.checked} entries as recorded (${audit.secrets} root-only secrets)`);
    const fixable = issues.every((i) => i.repair !== undefined);
    const repairs = issues.filter((i) => i.repair && (i.repair.kind === 'chmod' || i.repair.kind === 'chown')).map((i) => i.command);
    const others = issues.filter((i) => !i.repair).map((i) => i.command);
    const commands = [...new Set([...(issues.some((i) => i.repair) ? ['service-deploy doctor --fix'] : []), ...repairs, ...others])];
    const fix = fixable
      ? 'put the recorded modes and owners back and write our own files again (doctor --fix; it reloads or restarts what reads them)'
      : 'doctor --fix repairs modes, owners and our own files; the rest needs the command shown (a secret, a certificate or a program comes back from the install, never from doctor)';
    return fail(issues.map((i) => i.problem).join('; '), fix, { commands, ...(fixable ? { action: filesFix } : {}) });
  },
};
