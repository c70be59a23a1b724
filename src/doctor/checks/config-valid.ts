import { LAYOUT } from '../../layout.js';
import { fail, pass, skip, type Check } from '../types.js';
import { runtimeConfigFix } from './runtime-config.js';
import { livePackageDir } from '../../runtime/openclaw-place.js';

export const configValidCheck: Check = {
  id: 'config-valid',
  title: "Runtime config passes the runtime's own validation",
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.files.exists(LAYOUT.runtimeConfig))) {
      const answers = await ctx.answers();
      return fail(`${LAYOUT.runtimeConfig} is missing`, answers ? 'write it again from the stored answers (doctor --fix), or run the install' : 'run `service-deploy install`', {
        commands: answers ? ['service-deploy doctor --fix', 'service-deploy install'] : ['service-deploy install'],
        ...(answers ? { action: runtimeConfigFix } : {}),
      });
    }
    if (!(await livePackageDir(host))) return skip('OpenClaw is not installed (see agent-runtime)');
    const result = await ctx.configValidation();
    if (result.exitCode === 0) return pass('openclaw config validate: valid');
    let issues = (result.stderr.trim() || result.stdout.trim()).split('\n').slice(-5).join(' ');
    try {
      const parsed = JSON.parse(result.stdout) as { issues?: Array<{ path: string; message: string }> };
      if (parsed.issues?.length) issues = parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    } catch {
      // Not JSON: the validator may not have run at all; a CLI that cannot start is agent-runtime's finding.
      const cli = await ctx.openclawCliProblem();
      if (cli) return skip(`the OpenClaw CLI cannot start (${cli}; see agent-runtime)`);
    }
    return fail(`OpenClaw rejects ${LAYOUT.runtimeConfig}: ${host.redactor.redact(issues)}`, 'doctor --fix puts the managed settings right (legacy gateway.token, providers); for anything else edit the file or re-run the install', {
      commands: ['service-deploy doctor --fix', 'openclaw config validate'],
    });
  },
};
