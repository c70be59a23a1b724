import type { CommandModule } from 'yargs';
import { withGlobals, type GlobalOptions } from './shared.js';

export const profileCommand: CommandModule<object, GlobalOptions> = {
  command: 'profile',
  describe: "Show the service's endpoints and names this binary uses (environment overrides applied)",
  builder: (y) => withGlobals(y),
  handler: async (argv) => {
    const [{ loadProfile, PROFILE_ENV }, { printLine }, { emitJson, profileOutput }] = await Promise.all([
      import('../profile.js'),
      import('../output.js'),
      import('../json/index.js'),
    ]);
    const profile = loadProfile(process.env);
    if (argv.json) return emitJson(profileOutput, { ok: true, ...profile });
    const envOf = Object.fromEntries(Object.entries(PROFILE_ENV).map(([env, key]) => [key, env]));
    for (const [key, value] of Object.entries(profile)) {
      const env = envOf[key];
      const overridden = env && process.env[env] ? ` (from ${env})` : '';
      printLine(`${key.padEnd(22)} ${Array.isArray(value) ? value.join(', ') : value}${overridden}`);
    }
  },
};
