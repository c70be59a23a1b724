import { LAYOUT } from '../../layout.js';
import { enforceRouting, type Restoration } from '../../guard/routing.js';
import type { DoctorContext } from '../context.js';
import { fail, type Finding } from '../types.js';

/** The guard's verdict on the current config, or a finding saying why there is none. */
export async function routingDrift(ctx: DoctorContext): Promise<Restoration[] | Finding> {
  const [answers, { config, problem }] = await Promise.all([ctx.answers(), ctx.runtimeConfig()]);
  if (!answers) {
    return fail(`no stored answers (${LAYOUT.answersFile}): the service API key and model are unknown`, 'run `service-deploy install` (it asks for them and stores them 0600)', {
      commands: ['service-deploy install'],
    });
  }
  if (!config) {
    // Missing: doctor --fix writes it again from the stored answers; unreadable: a person decides.
    const missing = !(await ctx.host.files.exists(LAYOUT.runtimeConfig));
    return fail(problem ?? `${LAYOUT.runtimeConfig} is unreadable`, missing ? 'write the runtime config again (doctor --fix or the install)' : 'restore it from the last backup, or move it aside and run the install', {
      commands: missing ? ['service-deploy doctor --fix', 'service-deploy install'] : [`mv ${LAYOUT.runtimeConfig} ${LAYOUT.runtimeConfig}.broken`, 'service-deploy install'],
      ...(missing ? { action: 'runtime-config' as const } : {}),
    });
  }
  return enforceRouting(config, answers, ctx.profile).restorations;
}

export function listDrift(items: Restoration[]): string {
  return items.map((r) => `${r.what}: ${r.before} (want ${r.after})`).join('; ');
}
