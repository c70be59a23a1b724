import { heartbeatModel } from '../../config/runtime-config.js';
import { enforceManagedAgent } from '../../guard/managed.js';
import { fail, pass, type Check } from '../types.js';
import { answersFinding } from '../findings.js';
import { configFinding, listDrift } from '../config-findings.js';
import { guardFix } from './guard-cron.js';

/** The display name (prompt 1) and the heartbeat as the install sets them (issue 18 items 1, 3; issue 26 item 6). */
export const agentSettingsCheck: Check = {
  id: 'agent-settings',
  title: 'Agent display name and heartbeat',
  async run(ctx) {
    const [stored, { config }] = await Promise.all([ctx.answersRead(), ctx.runtimeConfig()]);
    const answers = stored.answers;
    if (!answers) return answersFinding(stored, 'the customer name is unknown');
    // A missing config is written again whole (display name and heartbeat included) by the runtime-config action.
    if (!config) return configFinding(ctx);
    const { restorations } = enforceManagedAgent(config, answers, ctx.profile);
    if (restorations.length === 0) {
      const model = heartbeatModel({ profile: ctx.profile, modelId: answers.modelId });
      return pass(`"${answers.customerName}"; heartbeat every 30m, internal-only, light, isolated, ${model === undefined ? 'on the chat model' : `on ${model} with one tool`}`);
    }
    const heartbeat = restorations.some((r) => r.what.includes('heartbeat'));
    return fail(
      `${listDrift(restorations)}${heartbeat ? ' (with another heartbeat target the runs are skipped: this server has no messaging channel)' : ''}`,
      'put the managed settings back: the guard does it and restarts the gateway once (a new name: re-run the install with --customer-name)',
      { commands: ['service-deploy doctor --fix', 'bash /usr/local/bin/service-guard.sh'], action: guardFix },
    );
  },
};
