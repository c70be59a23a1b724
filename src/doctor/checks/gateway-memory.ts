import type { Host } from '../../host/index.js';
import { LAYOUT } from '../../layout.js';
import { GATEWAY_MEMORY, gatewayUnitFile } from '../../steps/gateway-service.js';
import { fail, pass, skip, warn, type Check } from '../types.js';
import { filesFix } from './files.js';

const CGROUP_ROOT = '/sys/fs/cgroup';
/** The kernel keeps a limit in whole pages (up to 64 KiB on arm64): systemd's bytes rounded down. */
const PAGE_SLACK = 64 * 1024;

export type BoundInEffect =
  | { inEffect: true; file: string; bytes: number }
  | { inEffect: false; why: string; fix: string; commands: string[] };

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;
const number = (text: string | undefined) => (text !== undefined && /^\d+$/.test(text.trim()) ? Number(text.trim()) : undefined);

/**
 * Whether the kernel holds the bound systemd computed (`maxBytes`) for the unit's cgroup:
 * cgroup v2's memory.max, or v1's memory.limit_in_bytes. When it does not, why: a user
 * manager without the memory controller (user@.service delegates it on systemd 247-257
 * under cgroup v2), the legacy hierarchy, or a container that hands out none.
 */
export async function memoryBoundInEffect(host: Host, cgroup: string, maxBytes: number): Promise<BoundInEffect> {
  const unified = await host.files.exists(`${CGROUP_ROOT}/cgroup.controllers`);
  const file = unified ? `${CGROUP_ROOT}${cgroup}/memory.max` : `${CGROUP_ROOT}/memory${cgroup}/memory.limit_in_bytes`;
  const raw = (await host.files.read(file).catch(() => undefined))?.trim();
  const value = number(raw);
  if (value !== undefined && value <= maxBytes && maxBytes - value < PAGE_SLACK) return { inEffect: true, file, bytes: value };
  const manager = /^(.*\/user@0\.service)(\/|$)/.exec(cgroup)?.[1];
  if (unified) {
    const controllers = manager ? await host.files.read(`${CGROUP_ROOT}${manager}/cgroup.controllers`).catch(() => undefined) : undefined;
    if (controllers !== undefined && !controllers.split(/\s+/).includes('memory')) {
      return {
        inEffect: false,
        why: `root's user manager has no memory controller (${CGROUP_ROOT}${manager}/cgroup.controllers: "${controllers.trim()}"): user@0.service does not delegate it`,
        fix: 'delegate it to root\'s user manager (systemd ships Delegate=pids memory cpu for user@.service; something here overrides it), then restart root\'s user manager, which restarts the gateway',
        commands: [
          'systemctl show -p Delegate -p DelegateControllers user@0.service',
          "mkdir -p /etc/systemd/system/user@0.service.d && printf '[Service]\\nDelegate=pids memory cpu\\n' >/etc/systemd/system/user@0.service.d/memory.conf",
          'systemctl daemon-reload && systemctl restart user@0.service',
        ],
      };
    }
    return {
      inEffect: false,
      why: raw === undefined ? `${file} is missing (no memory controller in this cgroup)` : `${file} holds ${raw}, not the unit's ${maxBytes}`,
      fix: 'restart the gateway so systemd applies its unit again; if it stays so, the server (a container VPS) gives this cgroup no memory controller',
      commands: ['service-deploy gateway restart', `cat ${CGROUP_ROOT}${manager ?? ''}/cgroup.controllers`],
    };
  }
  return {
    inEffect: false,
    why: `this server runs the legacy cgroup hierarchy (no ${CGROUP_ROOT}/cgroup.controllers)${raw === undefined ? ', where no memory limit exists for the unit' : `, and ${file} holds ${raw}`}: systemd applies memory limits of user services only under cgroup v2`,
    fix: 'boot with the unified cgroup hierarchy (cgroup v2, the default of Ubuntu 22.04 and 24.04): remove systemd.unified_cgroup_hierarchy=0 from the kernel command line; a container VPS gets what its host gives',
    commands: ['cat /proc/cmdline', 'stat -fc %T /sys/fs/cgroup'],
  };
}

/**
 * The gateway's memory bound (issue 26 item 3): the unit carries it, and the kernel
 * applies it. A bound that is not in effect is a warning (the agent works, but a leak
 * takes the server down instead of restarting the agent), naming why. A unit file that
 * is not the one the install writes gets its bound back when the files action writes it
 * again (as for gateway-sandbox).
 */
export const gatewayMemoryCheck: Check = {
  id: 'gateway-memory',
  title: 'Gateway memory bound (in effect in its cgroup)',
  async run(ctx) {
    const { host } = ctx;
    if (!(await host.files.exists(LAYOUT.gatewayUnitFile))) return skip(`${LAYOUT.gatewayUnitFile} is missing (see gateway-service)`);
    if ((await host.files.read(LAYOUT.gatewayUnitFile)) !== gatewayUnitFile().content) {
      if (!(await ctx.repairedByFiles(LAYOUT.gatewayUnitFile))) return skip(`${LAYOUT.gatewayUnitFile} is not the unit the install writes (see files)`);
      return fail(`${LAYOUT.gatewayUnitFile} is not the unit the install writes: its memory bound (MemoryMax=${GATEWAY_MEMORY.max}) holds only when the unit is written again`, 'write the unit again (doctor --fix), reload the user units and restart the gateway', {
        commands: ['service-deploy doctor --fix'],
        action: filesFix,
      });
    }
    const { active, resources } = await ctx.unit('user', LAYOUT.gatewayUnit);
    if (!active) return skip(`${LAYOUT.gatewayUnit} is not running (the gateway-service check says why)`);
    const maxBytes = number(resources.memoryMax);
    const cgroup = resources.controlGroup ?? '';
    if (maxBytes === undefined) {
      return fail(
        `${LAYOUT.gatewayUnit} has no memory bound (MemoryMax=${resources.memoryMax || 'unknown'}): a leak takes the whole server down instead of restarting the agent`,
        `re-run the install, which writes the unit with MemoryMax=${GATEWAY_MEMORY.max}; a drop-in that sets MemoryMax=infinity undoes it`,
        { commands: [`XDG_RUNTIME_DIR=/run/user/0 systemctl --user cat ${LAYOUT.gatewayUnit}`, 'service-deploy install'] },
      );
    }
    const high = number(resources.memoryHigh);
    const bound = `MemoryMax ${gib(maxBytes)} (${GATEWAY_MEMORY.max} of memory)${high !== undefined ? `, MemoryHigh ${gib(high)}` : ''}`;
    if (!cgroup.startsWith('/')) return warn(`${bound} configured, but systemd reports no cgroup for ${LAYOUT.gatewayUnit}`, 'restart the gateway and run doctor again', { commands: ['service-deploy gateway restart'] });
    const effect = await memoryBoundInEffect(host, cgroup, maxBytes);
    if (!effect.inEffect) return warn(`${bound} configured, not in effect: ${effect.why}`, effect.fix, { commands: effect.commands });
    const current = number(resources.memoryCurrent);
    return pass(`${bound}, in effect (${effect.file})${current !== undefined ? `; the unit uses ${gib(current)} now` : ''}`);
  },
};
