import { LAYOUT } from '../../layout.js';
import type { PendingDevice } from '../probes.js';
import { pass, skip, warn, type Check } from '../types.js';
import { livePackageDir } from '../../runtime/openclaw-place.js';

export const devicesCheck: Check = {
  id: 'devices',
  title: 'Pending device approvals',
  async run(ctx) {
    const { host } = ctx;
    if (!(await livePackageDir(host))) return skip('OpenClaw is not installed (see agent-runtime)');
    if (!(await ctx.gatewayActive())) return skip('the gateway is not running (see gateway-service)');
    let pending: PendingDevice[];
    try {
      pending = await ctx.pendingDevices();
    } catch (error) {
      return warn(`could not list devices: ${host.redactor.redact((error as Error).message.split('\n')[0] ?? '')}`, 'check the gateway (service-deploy gateway status)', { commands: ['service-deploy devices list'] });
    }
    if (pending.length === 0) return pass('none waiting');
    const first = pending[0]!;
    return warn(
      `${pending.length} device${pending.length === 1 ? '' : 's'} waiting for approval: ${pending.map((d) => `${d.requestId}${d.name ? ` (${d.name})` : ''}`).join(', ')}`,
      'approve the devices you recognise (a device opening the gateway UI for the first time must be approved on the server)',
      { commands: [`service-deploy devices approve ${first.requestId}`, 'service-deploy devices list'] },
    );
  },
};
