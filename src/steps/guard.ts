import { createHash } from '../host/crypto.js';
import { realpathSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import { isSingleExecutable } from '../assets.js';
import { LOCKS, type Change, type Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { renderTemplate } from '../render/template.js';
import { ROOT_OWNER } from '../host/files.js';
import { planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { recordWrittenFile } from '../pipeline/manifest.js';
import { desired, type WrittenFile } from '../pipeline/writes.js';

export const GUARD_SCRIPT: WrittenFile = { path: LAYOUT.guardScript, type: 'file', mode: 0o755, check: 'sha256', life: 'backup', rewrite: { from: async () => guardScript() } };
export const GUARD_CRON: WrittenFile = {
  path: LAYOUT.guardCron,
  type: 'file',
  // cron ignores files in cron.d that are group- or world-writable.
  mode: 0o644,
  check: 'sha256',
  life: 'backup',
  rewrite: {
    from: async (ctx) => {
      const answers = await ctx.answers();
      return answers ? guardCron(answers.meshHostname) : undefined;
    },
  },
};
/** This binary, where the cron job runs it (install.sh puts it there too). */
export const BINARY: WrittenFile = { path: LAYOUT.binary, type: 'file', mode: 0o755, check: 'sha256', life: 'server' };

export function guardScript(): DesiredFile {
  return desired(GUARD_SCRIPT, renderTemplate('service-guard.sh', { binary: LAYOUT.binary }));
}

/** Minute past the hour, spread per server so a fleet does not run guards in lockstep. */
export function guardMinute(seed: string): number {
  return createHash('sha256').update(seed).digest().readUInt16BE(0) % 60;
}

export function guardCron(seed: string): DesiredFile {
  return desired(GUARD_CRON, renderTemplate('service-guard.cron', { minute: guardMinute(seed), guardScript: LAYOUT.guardScript }));
}

/**
 * The gateway enforcer: /usr/local/bin/service-guard.sh (runs `service-deploy guard`)
 * and its hourly cron entry; and this binary itself at /usr/local/bin/service-deploy
 * when run from elsewhere, since the cron job calls it there.
 */
export const guardStep: Step = {
  id: 'guard',
  title: 'Gateway enforcer (guard script and hourly cron)',
  needs: ['system-packages', LOCKS.systemUnits],
  writes: [GUARD_SCRIPT, GUARD_CRON, BINARY],
  async check({ host, answers }) {
    const changes: Change[] = [];
    for (const file of [guardScript(), guardCron(answers.meshHostname)]) {
      const change = await planFile(host, file);
      if (change) changes.push(change);
    }
    const [self, cronActive] = await Promise.all([selfBinaryChange(host), host.services.isActive('system', 'cron')]);
    if (self) changes.push(self);
    if (!cronActive) changes.push({ target: 'cron', summary: 'enable and start cron (it runs the guard)' });
    const plan: GuardPlan = { binary: self !== undefined, cron: !cronActive };
    return { changes, data: plan };
  },
  async apply({ host, answers }, plan) {
    const todo = plan.data as GuardPlan;
    if (todo.binary) await installSelf(host);
    await writeDesired(host, guardScript());
    await writeDesired(host, guardCron(answers.meshHostname));
    // cron runs the guard; a server where it is stopped never restores anything.
    if (todo.cron) await host.services.enableNow('system', 'cron');
  },
};

interface GuardPlan {
  binary: boolean;
  cron: boolean;
}

/**
 * Copies the running binary to /usr/local/bin/service-deploy (with its mtime, for the
 * quick check below) and records it in the install manifest: hashed from the bytes
 * just written, fingerprinted after the mtime was set.
 */
export async function installSelf(host: Parameters<Step['check']>[0]['host']): Promise<void> {
  const bytes = await fs.readFile(process.execPath);
  await host.files.write(BINARY.path, bytes, { mode: BINARY.mode, owner: ROOT_OWNER });
  const { atimeMs, mtimeMs } = await fs.stat(process.execPath);
  await fs.utimes(host.paths.real(BINARY.path), atimeMs / 1000, mtimeMs / 1000);
  await recordWrittenFile(host, BINARY.path, bytes, { mode: BINARY.mode });
}

async function selfBinaryChange(host: Parameters<Step['check']>[0]['host']): Promise<Change | undefined> {
  if (!isSingleExecutable()) return undefined;
  const target = host.paths.real(LAYOUT.binary);
  // Synchronous: a few quick syscalls while the other checks start processes (see Files.read).
  const self = realpathSync(process.execPath);
  let installed: string | undefined;
  try {
    installed = realpathSync(target);
  } catch {
    installed = undefined;
  }
  if (installed === self) return undefined; // running the installed copy (the usual case after install.sh)
  if (installed && (await sameSizeAndTime(self, installed))) return undefined;
  return { target: LAYOUT.binary, summary: `${LAYOUT.binary}: ${installed ? 'update' : 'install'} this service-deploy binary` };
}

/**
 * rsync's quick check: the copy gets the source's mtime when installed, so equal size
 * and mtime mean the same build. Hashing two 100 MB files would cost the no-op re-run
 * most of its time.
 */
async function sameSizeAndTime(a: string, b: string): Promise<boolean> {
  const [sa, sb] = [statSync(a), statSync(b)];
  // utimes() keeps about a millisecond of the source's time, rounded either way.
  return sa.size === sb.size && Math.abs(sa.mtimeMs - sb.mtimeMs) < 1;
}
