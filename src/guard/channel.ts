import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureFolder, octal, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { CHANNEL_ENV, GATEWAY_DROP_IN_DIR, channelDropInFile } from '../steps/channel.js';
import type { Restoration } from './routing.js';

export interface ChannelFilesPlan {
  restorations: Restoration[];
  /** The drop-in to write (missing or changed), if any. */
  dropIn?: DesiredFile;
  apply(): Promise<void>;
}

/**
 * Where the channel is configured (channel.env exists), the guard keeps the drop-in
 * in place and channel.env at 0600. It never creates or edits channel.env itself:
 * its secrets belong to the portal and the install.
 */
export async function channelFilesPlan(host: Host): Promise<ChannelFilesPlan> {
  const envInfo = await host.files.stat(LAYOUT.channelEnv);
  if (!envInfo) return { restorations: [], apply: async () => {} };
  const restorations: Restoration[] = [];
  const envMode = envInfo.mode !== CHANNEL_ENV.mode;
  if (envMode) restorations.push({ what: `${LAYOUT.channelEnv} mode`, before: octal(envInfo.mode), after: octal(CHANNEL_ENV.mode) });
  const desired = channelDropInFile();
  const change = await planFile(host, desired);
  if (change) {
    const exists = await host.files.exists(desired.path);
    restorations.push({ what: desired.path, before: exists ? change.summary.replace(`${desired.path}: `, '') : 'missing', after: 'restored (loads channel.env)' });
  }
  return {
    restorations,
    dropIn: change ? desired : undefined,
    async apply() {
      if (envMode) await host.files.chmod(LAYOUT.channelEnv, CHANNEL_ENV.mode);
      if (change) {
        await ensureFolder(host, GATEWAY_DROP_IN_DIR);
        await writeDesired(host, desired);
      }
    },
  };
}
