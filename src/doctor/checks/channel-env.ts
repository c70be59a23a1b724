import { Inspector } from '../../host/inspect.js';
import { LAYOUT } from '../../layout.js';
import { octal } from '../../pipeline/files.js';
import { fail, pass, skip, type Check } from '../types.js';
import { filesFix } from './files.js';
import { guardFix } from './guard-cron.js';

export const CHANNEL_VARIABLES = ['SERVICE_CHANNEL_TOKEN', 'SERVICE_CHANNEL_KNOCK', 'SERVICE_TS_HOSTNAME', 'SERVICE_CHANNEL_EDGE'] as const;
export const NOT_CONFIGURED = 'no channel endpoint on this server (only the catalog deploy or install --channel configures it)';
const REINSTALL = 'service-deploy install --channel';

export const channelEnvCheck: Check = {
  id: 'channel-env',
  title: 'channel.env present, 0600, its variables set',
  async run(ctx) {
    if (!(await ctx.channelConfigured())) return skip(NOT_CONFIGURED);
    const env = await ctx.channelEnv();
    if (!env) {
      return fail(`${LAYOUT.channelEnv} is missing: every chat call fails with 503 "misconfigured"`, 're-run the catalog deploy from the portal, or the install with --channel (new secrets: give the portal the new token and knock)', { commands: [REINSTALL] });
    }
    const missing = CHANNEL_VARIABLES.filter((name) => !env[name]);
    if (missing.length > 0) {
      return fail(`${LAYOUT.channelEnv} lacks ${missing.join(', ')}: every chat call fails with 503 "misconfigured"`, 're-run the catalog deploy from the portal, or the install with --channel', { commands: [REINSTALL] });
    }
    const link = await new Inspector(ctx.host.paths).info(LAYOUT.channelEnv);
    if (link?.type === 'symlink') {
      return fail(`${LAYOUT.channelEnv} is a symbolic link to ${link.target}: the secrets are wherever it points`, 'put the real file back (the install keeps the secrets it finds): remove the link and restore channel.env from the last backup, or re-run the catalog deploy', {
        commands: [`rm ${LAYOUT.channelEnv}`, REINSTALL],
      });
    }
    const info = await ctx.host.files.stat(LAYOUT.channelEnv);
    if (info && info.mode !== 0o600) {
      return fail(`${LAYOUT.channelEnv} is mode ${octal(info.mode)}: the channel token and knock are readable by other users`, 'make it root-only (0600); the guard does this too', {
        commands: [`chmod 600 ${LAYOUT.channelEnv}`],
        action: guardFix,
      });
    }
    if (info && process.getuid?.() === 0 && info.uid !== 0) {
      const byFiles = await ctx.repairedByFiles(LAYOUT.channelEnv);
      return fail(`${LAYOUT.channelEnv} is owned by uid ${info.uid}, not root: that user can read the channel token and knock`, 'give it back to root', {
        commands: byFiles ? ['service-deploy doctor --fix'] : [`chown root:root ${LAYOUT.channelEnv}`],
        ...(byFiles ? { action: filesFix } : {}),
      });
    }
    return pass(`0600, ${CHANNEL_VARIABLES.join(', ')} set`);
  },
};
