import { LAYOUT } from '../../layout.js';
import { openclaw } from '../../runtime/openclaw.js';
import { fail, pass, skip, type Check } from '../types.js';

export const configValidCheck: Check = {
  id: 'config-valid',
  title: "Runtime config passes the runtime's own validation",
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.files.exists(LAYOUT.runtimeConfig))) return fail(`${LAYOUT.runtimeConfig} is missing`, 'run `service-deploy install`', { commands: ['service-deploy install'] });
    if (!(await host.files.exists(LAYOUT.openclawBin))) return skip('OpenClaw is not installed (see agent-runtime)');
    const result = await openclaw(host, ['config', 'validate', '--json'], { allowFailure: true, timeoutMs: 60_000 });
    if (result.exitCode === 0) return pass('openclaw config validate: valid');
    let issues = (result.stderr.trim() || result.stdout.trim()).split('\n').slice(-5).join(' ');
    try {
      const parsed = JSON.parse(result.stdout) as { issues?: Array<{ path: string; message: string }> };
      if (parsed.issues?.length) issues = parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    } catch {
      // not JSON: keep the raw text
    }
    return fail(`OpenClaw rejects ${LAYOUT.runtimeConfig}: ${host.redactor.redact(issues)}`, 'doctor --fix puts the managed settings right (legacy gateway.token, providers); for anything else edit the file or re-run the install', {
      commands: ['service-deploy doctor --fix', 'openclaw config validate'],
    });
  },
};
