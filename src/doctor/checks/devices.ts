import type { Host } from '../../host/index.js';
import { LAYOUT } from '../../layout.js';
import { openclaw } from '../../runtime/openclaw.js';
import { pass, skip, warn, type Check } from '../types.js';

export interface PendingDevice {
  requestId: string;
  name?: string;
}

/** `openclaw devices list --json` ({pending: [...], paired: [...]}), pending requests only. */
export async function pendingDevices(host: Host): Promise<PendingDevice[]> {
  const result = await openclaw(host, ['devices', 'list', '--json'], { timeoutMs: 30_000 });
  const parsed = JSON.parse(result.stdout || '{}') as { pending?: Array<Record<string, unknown>> };
  return (parsed.pending ?? []).map((p) => ({
    requestId: String(p.requestId ?? p.id ?? ''),
    name: typeof p.displayName === 'string' ? p.displayName : typeof p.platform === 'string' ? p.platform : undefined,
  }));
}

export const devicesCheck: Check = {
  id: 'devices',
  title: 'Pending device approvals',
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.files.exists(LAYOUT.openclawBin))) return skip('OpenClaw is not installed (see agent-runtime)');
    if (!(await ctx.gatewayActive())) return skip('the gateway is not running (see gateway-service)');
    let pending: PendingDevice[];
    try {
      pending = await pendingDevices(host);
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
