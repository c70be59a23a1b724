import { enforceRouting, type Restoration } from '../guard/routing.js';
import { LAYOUT } from '../layout.js';
import { runtimeConfigFix } from './checks/runtime-config.js';
import type { DoctorContext } from './context.js';
import { answersFinding } from './findings.js';
import { fail, type Finding } from './types.js';

// Findings about openclaw.json several checks share (the guard's routing, an unreadable config).

/** The guard's verdict on the current config, or a finding saying why there is none. */
export async function routingDrift(ctx: DoctorContext): Promise<Restoration[] | Finding> {
  const [stored, { config }] = await Promise.all([ctx.answersRead(), ctx.runtimeConfig()]);
  if (!stored.answers) return answersFinding(stored, 'the service API key and model are unknown');
  if (!config) return configFinding(ctx);
  return enforceRouting(config, stored.answers, ctx.profile).restorations;
}

/**
 * The finding of a check that needs openclaw.json when it cannot be read. Missing:
 * the runtime-config action writes it again from the stored answers (and with it
 * every managed key); unreadable: a person decides.
 */
export async function configFinding(ctx: DoctorContext): Promise<Finding> {
  const { problem } = await ctx.runtimeConfig();
  const missing = !(await ctx.host.files.exists(LAYOUT.runtimeConfig));
  return fail(problem ?? `${LAYOUT.runtimeConfig} is unreadable`, missing ? 'write the runtime config again (doctor --fix or the install)' : 'restore it from the last backup, or move it aside and run the install', {
    commands: missing ? ['service-deploy doctor --fix', 'service-deploy install'] : [`mv ${LAYOUT.runtimeConfig} ${LAYOUT.runtimeConfig}.broken`, 'service-deploy install'],
    ...(missing ? { action: runtimeConfigFix } : {}),
  });
}

export function listDrift(items: Restoration[]): string {
  return items.map((r) => `${r.what}: ${r.before} (want ${r.after})`).join('; ');
}
