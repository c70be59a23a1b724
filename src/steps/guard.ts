import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { isSingleExecutable } from '../assets.js';
import type { Change, Step } from '../install/step.js';
import { LAYOUT } from '../layout.js';
import { renderTemplate } from '../render/template.js';
import { planFile, writeDesired, type DesiredFile } from './lib/files.js';

export function guardScript(): DesiredFile {
  return { path: LAYOUT.guardScript, content: renderTemplate('service-guard.sh', { binary: LAYOUT.binary }), mode: 0o755 };
}

/** Minute past the hour, spread per server so a fleet does not run guards in lockstep. */
export function guardMinute(seed: string): number {
  return createHash('sha256').update(seed).digest().readUInt16BE(0) % 60;
}

export function guardCron(seed: string): DesiredFile {
  return {
    path: LAYOUT.guardCron,
    content: renderTemplate('service-guard.cron', { minute: guardMinute(seed), guardScript: LAYOUT.guardScript }),
    // cron ignores files in cron.d that are group- or world-writable.
    mode: 0o644,
  };
}

/**
 * The gateway enforcer: /usr/local/bin/service-guard.sh (runs `service-deploy guard`)
 * and its hourly cron entry; and this binary itself at /usr/local/bin/service-deploy
 * when run from elsewhere, since the cron job calls it there.
 */
export const guardStep: Step = {
  id: 'guard',
  title: 'Gateway enforcer (guard script and hourly cron)',
  async check({ host, answers }) {
    const changes: Change[] = [];
    for (const file of [guardScript(), guardCron(answers.meshHostname)]) {
      const change = await planFile(host, file);
      if (change) changes.push(change);
    }
    const self = await selfBinaryChange(host);
    if (self) changes.push(self);
    return { changes, data: self !== undefined };
  },
  async apply({ host, answers }, plan) {
    if (plan.data) await host.files.write(LAYOUT.binary, await fs.readFile(process.execPath), { mode: 0o755 });
    await writeDesired(host, guardScript());
    await writeDesired(host, guardCron(answers.meshHostname));
  },
};

async function selfBinaryChange(host: Parameters<Step['check']>[0]['host']): Promise<Change | undefined> {
  if (!isSingleExecutable()) return undefined;
  const [mine, installed] = await Promise.all([fs.readFile(process.execPath), host.files.readBytes(LAYOUT.binary)]);
  if (installed && sha256(installed) === sha256(mine)) return undefined;
  return { target: LAYOUT.binary, summary: `${LAYOUT.binary}: ${installed ? 'update' : 'install'} this service-deploy binary` };
}

function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
