import { DEFAULT_LIMITS, FIREWALL_FAMILY, FIREWALL_TABLE, markerIn, renderFirewallRules, renderFirewallUnit, ufwStatus } from '../channel/firewall.js';
import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { CHANNEL_PORT, LAYOUT } from '../layout.js';
import { ensureFolder, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { STATE_DIR } from '../pipeline/manifest.js';
import { LOCKS, type Change, type InstallContext, type Step } from '../pipeline/step.js';
import { desired, type WrittenFile } from '../pipeline/writes.js';
import { CONFIG_DIR, channelSecrets } from './channel.js';

/**
 * Two steps for the channel port 18790 at the firewall (docs/channel-protocol.md
 * "Connection limits" and "Public exposure"):
 *  - channel-limits: our nftables table (per-address connection limits, the allow
 *    list), loaded now and at every boot by a oneshot unit;
 *  - channel-port: where ufw or firewalld is active, 18790/tcp is opened (only that),
 *    so the portal is not silently blocked. A firewall that is off stays off.
 */

const SKIP_REASON = 'the channel endpoint is configured only by the catalog deploy (--catalog) or install --channel';
const TABLE = `${FIREWALL_FAMILY} ${FIREWALL_TABLE}`;
export const PORT_RULE_COMMENT = 'service-deploy channel';

export interface NftUsable {
  ok: boolean;
  /** Why nftables cannot be used here (not installed, no permission, no kernel support). */
  reason?: string;
  nft?: string;
}

/**
 * Whether this server can take our table: `nft` installed and the kernel answering.
 * Read-only (`nft list tables`). A container without CAP_NET_ADMIN (LXC/OpenVZ VPS)
 * answers "Operation not permitted".
 */
export async function nftUsable(host: Host): Promise<NftUsable> {
  const nft = await host.exec.which('nft');
  if (!nft) return { ok: false, reason: 'nft (package nftables) is not installed' };
  const probe = await host.exec.run('nft', ['list', 'tables'], { allowFailure: true, timeoutMs: 30_000 });
  if (probe.exitCode !== 0) {
    const why = (probe.stderr || probe.stdout).trim().split('\n').slice(-1)[0] || `exit ${probe.exitCode}`;
    return { ok: false, reason: `nftables cannot be used on this server (nft list tables: ${why}; a container without CAP_NET_ADMIN?)`, nft };
  }
  return { ok: true, nft };
}

/** The limits outlive a reset (it tears them down itself: removeChannelFirewall); uninstall removes them. */
const FIREWALL_RULES: WrittenFile = { path: LAYOUT.channelFirewallRules, type: 'file', mode: 0o644, check: 'sha256', life: 'server' };
/** A new ruleset while `nft -c` checks it, removed right after. */
const FIREWALL_CANDIDATE: WrittenFile = { path: `${LAYOUT.channelFirewallRules}.new`, type: 'file', mode: 0o644, life: 'server' };
const FIREWALL_UNIT: WrittenFile = { path: LAYOUT.channelFirewallUnitFile, type: 'file', mode: 0o644, check: 'sha256', life: 'server' };
/** What the install opened in ufw or firewalld (a reset closes exactly that). */
const PORT_STATE: WrittenFile = { path: LAYOUT.channelPortState, type: 'file', mode: 0o600 };

/** The ruleset file and the unit, as the install writes them. */
export async function desiredFirewallFiles(ctx: InstallContext, nft: string): Promise<{ rules: DesiredFile; unit: DesiredFile }> {
  const { allow } = await channelSecrets(ctx);
  return firewallFiles(allow, nft);
}

export function firewallFiles(allow: Parameters<typeof renderFirewallRules>[0]['allow'], nft: string): { rules: DesiredFile; unit: DesiredFile } {
  return {
    rules: desired(FIREWALL_RULES, renderFirewallRules({ ...DEFAULT_LIMITS, port: CHANNEL_PORT, allow }, LAYOUT.channelFirewallUnit)),
    unit: desired(FIREWALL_UNIT, renderFirewallUnit({ nft, rules: LAYOUT.channelFirewallRules, port: CHANNEL_PORT })),
  };
}

/** The marker of the table the kernel holds now, or undefined when it holds none. */
export async function loadedMarker(host: Host): Promise<string | undefined> {
  return (await loadedTable(host)).marker;
}

/**
 * `nft list table` of our table: `listed` when nft answered with it (so nft is also
 * usable here: no separate probe needed), and its marker.
 */
export async function loadedTable(host: Host): Promise<{ listed: boolean; marker?: string }> {
  const listed = await host.exec.run('nft', ['list', 'table', FIREWALL_FAMILY, FIREWALL_TABLE], { allowFailure: true, timeoutMs: 30_000 });
  return listed.exitCode === 0 ? { listed: true, marker: markerIn(listed.stdout) } : { listed: false };
}

interface LimitsPlan {
  rules?: DesiredFile;
  unit?: DesiredFile;
  rulesContent: string;
  load: boolean;
  enable: boolean;
  start: boolean;
}

export const channelLimitsStep: Step = {
  id: 'channel-limits',
  title: `Per-address connection limits on port ${CHANNEL_PORT} (nftables)`,
  needs: ['system-packages', 'channel-env', LOCKS.systemUnits],
  writes: [FIREWALL_RULES, FIREWALL_CANDIDATE, FIREWALL_UNIT],
  async skip(ctx) {
    if (!ctx.options.channel) return SKIP_REASON;
    const usable = await nftUsable(ctx.host);
    if (!usable.ok) return `${usable.reason}: the per-address limits before TLS are not in place (nginx's timeouts and limits still apply); doctor warns about it`;
    return undefined;
  },
  async check(ctx) {
    const { host } = ctx;
    const nft = (await host.exec.which('nft'))!;
    const { rules, unit } = await desiredFirewallFiles(ctx, nft);
    const [rulesChange, unitChange, marker, enabled, active] = await Promise.all([
      planFile(host, rules),
      planFile(host, unit),
      loadedMarker(host),
      host.services.isEnabled('system', LAYOUT.channelFirewallUnit),
      host.services.isActive('system', LAYOUT.channelFirewallUnit),
    ]);
    const changes: Change[] = [rulesChange, unitChange].filter((c): c is Change => c !== undefined);
    const want = markerIn(rules.content);
    const load = marker !== want;
    if (load) changes.push({ target: `nft table ${TABLE}`, summary: marker ? `reload table ${TABLE} (it differs from ${LAYOUT.channelFirewallRules})` : `load table ${TABLE}` });
    if (!enabled) changes.push({ target: LAYOUT.channelFirewallUnit, summary: `enable ${LAYOUT.channelFirewallUnit} (loads the table at boot)` });
    const plan: LimitsPlan = { rules: rulesChange ? rules : undefined, unit: unitChange ? unit : undefined, rulesContent: rules.content, load, enable: !enabled, start: !active };
    return changes.length === 0 ? { changes } : { changes, data: plan };
  },
  async apply(ctx, plan) {
    const { host } = ctx;
    const data = plan.data as LimitsPlan;
    if (data.rules) {
      // nft checks the candidate (-c: parse and evaluate, change nothing) before it goes in place.
      await ensureFolder(host, CONFIG_DIR);
      const candidate = FIREWALL_CANDIDATE.path;
      await host.files.write(candidate, data.rulesContent, { mode: FIREWALL_CANDIDATE.mode });
      try {
        const checked = await host.exec.run('nft', ['-c', '-f', host.paths.real(candidate)], { allowFailure: true, timeoutMs: 30_000 });
        if (checked.exitCode !== 0) throw new DeployError(`nft refuses the channel's ruleset:\n${checked.stderr.trim()}`, 'report this with the output of `service-deploy render firewall`');
      } finally {
        await host.files.remove(candidate);
      }
      await writeDesired(host, data.rules);
    }
    if (data.load || data.rules) {
      // Atomic: the file replaces an older table in one transaction (no moment without limits).
      await host.exec.run('nft', ['-f', host.paths.real(LAYOUT.channelFirewallRules)], { timeoutMs: 30_000 });
    }
    if (data.unit) {
      await writeDesired(host, data.unit);
      await host.services.daemonReload('system');
    }
    if (data.enable) await host.services.enable('system', LAYOUT.channelFirewallUnit);
    // Started (a oneshot that stays "active") so a later `systemctl stop` or reset removes the table.
    if (data.start) await host.exec.run('systemctl', ['start', LAYOUT.channelFirewallUnit], { timeoutMs: 60_000 });
  },
  async verify(ctx) {
    const { host } = ctx;
    const rules = await host.files.read(LAYOUT.channelFirewallRules);
    const loaded = await loadedMarker(host);
    if (!rules || loaded !== markerIn(rules)) throw new DeployError(`the nftables table ${TABLE} is not the one in ${LAYOUT.channelFirewallRules} after loading it`, 'see `nft list table inet service_deploy_channel`');
  },
};

// ---------------------------------------------------------------- ufw / firewalld

export interface PortState {
  ufw?: boolean;
  firewalld?: boolean;
}

export interface HostFirewalls {
  ufw?: { active: boolean; allows: boolean };
  firewalld?: { running: boolean; runtime: boolean; permanent: boolean };
}

/** ufw's switch: `ufw enable` / `ufw disable` write ENABLED there. */
export const UFW_CONF = '/etc/ufw/ufw.conf';
/** The unit that runs firewalld (its D-Bus activation starts this unit too). */
export const FIREWALLD_UNIT = 'firewalld.service';

/**
 * Whether ufw.conf may enable ufw. Two readers decide: the boot start and `ufw reload`
 * source it as shell (ENABLED=yes or YES), ufw's own Python reads `KEY=value` lines
 * lower-cased. Any line naming ENABLED with a yes counts, so no reading of either
 * enables ufw where this says no (ENABLED=no, the default of an installed ufw).
 */
export function ufwMayBeEnabled(conf: string): boolean {
  return /enabled[^\n]*yes/i.test(conf);
}

/**
 * ufw and firewalld as they are now (read-only). Two questions are answered without a
 * process where the answer is certain:
 *  - ufw loads its rules only when ufw.conf says ENABLED=yes (`ufw enable` sets it and
 *    puts it back to no when the start fails; the boot start and `ufw reload` skip a
 *    disabled ufw; `ufw disable` sets no and unloads them), and `ufw status` cannot run
 *    without that file: otherwise it is inactive. With ENABLED=yes `ufw status` decides,
 *    from the rules loaded in the kernel. (Left out: a ufw.conf edited by hand to no
 *    without `ufw disable`, whose rules stay loaded until the next boot.)
 *  - firewalld runs as firewalld.service: where that unit is not active (one batched
 *    `systemctl show` with the other units asked now; `unitActive` may answer it from a
 *    state already asked) it is not running; where it is,
 *    `firewall-cmd --state` decides.
 */
export async function hostFirewalls(host: Host, unitActive = (unit: string) => host.services.isActive('system', unit)): Promise<HostFirewalls> {
  const out: HostFirewalls = {};
  if (await host.exec.which('ufw')) {
    const conf = await host.files.read(UFW_CONF);
    if (conf === undefined || !ufwMayBeEnabled(conf)) out.ufw = { active: false, allows: false };
    else {
      const status = await host.exec.run('ufw', ['status'], { allowFailure: true, timeoutMs: 30_000 });
      out.ufw = status.exitCode === 0 ? ufwStatus(status.stdout, CHANNEL_PORT) : { active: false, allows: false };
    }
  }
  if (await host.exec.which('firewall-cmd')) {
    const unit = await unitActive(FIREWALLD_UNIT).catch(() => true);
    const state = unit ? await host.exec.run('firewall-cmd', ['--state'], { allowFailure: true, timeoutMs: 30_000 }) : undefined;
    const running = state !== undefined && state.exitCode === 0 && state.stdout.trim() === 'running';
    if (!running) out.firewalld = { running, runtime: false, permanent: false };
    else {
      const [runtime, permanent] = await Promise.all([
        host.exec.run('firewall-cmd', [`--query-port=${CHANNEL_PORT}/tcp`], { allowFailure: true, timeoutMs: 30_000 }),
        host.exec.run('firewall-cmd', ['--permanent', `--query-port=${CHANNEL_PORT}/tcp`], { allowFailure: true, timeoutMs: 30_000 }),
      ]);
      out.firewalld = { running, runtime: runtime.exitCode === 0, permanent: permanent.exitCode === 0 };
    }
  }
  return out;
}

async function readPortState(host: Host): Promise<PortState> {
  const text = await host.files.read(LAYOUT.channelPortState);
  if (!text) return {};
  try {
    const value = JSON.parse(text) as PortState;
    return { ufw: value.ufw === true, firewalld: value.firewalld === true };
  } catch {
    return {};
  }
}

interface PortPlan {
  ufw: boolean;
  firewalldRuntime: boolean;
  firewalldPermanent: boolean;
}

export const channelPortStep: Step = {
  id: 'channel-port',
  title: `Port ${CHANNEL_PORT}/tcp open in ufw/firewalld where active`,
  needs: ['package-lock'],
  writes: [PORT_STATE],
  skip: (ctx) => (ctx.options.channel ? undefined : SKIP_REASON),
  async check({ host }) {
    const fw = await hostFirewalls(host);
    const plan: PortPlan = {
      ufw: Boolean(fw.ufw?.active && !fw.ufw.allows),
      firewalldRuntime: Boolean(fw.firewalld?.running && !fw.firewalld.runtime),
      firewalldPermanent: Boolean(fw.firewalld?.running && !fw.firewalld.permanent),
    };
    const changes: Change[] = [];
    if (plan.ufw) changes.push({ target: 'ufw', summary: `ufw is active: allow ${CHANNEL_PORT}/tcp` });
    if (plan.firewalldRuntime || plan.firewalldPermanent) changes.push({ target: 'firewalld', summary: `firewalld is running: add port ${CHANNEL_PORT}/tcp` });
    return changes.length === 0 ? { changes } : { changes, data: plan };
  },
  async apply({ host }, plan) {
    const data = plan.data as PortPlan;
    const state = await readPortState(host);
    if (data.ufw) {
      await host.exec.run('ufw', ['allow', `${CHANNEL_PORT}/tcp`, 'comment', PORT_RULE_COMMENT], { timeoutMs: 60_000 });
      state.ufw = true;
    }
    if (data.firewalldRuntime) await host.exec.run('firewall-cmd', [`--add-port=${CHANNEL_PORT}/tcp`], { timeoutMs: 60_000 });
    if (data.firewalldPermanent) await host.exec.run('firewall-cmd', ['--permanent', `--add-port=${CHANNEL_PORT}/tcp`], { timeoutMs: 60_000 });
    if (data.firewalldRuntime || data.firewalldPermanent) state.firewalld = true;
    await ensureFolder(host, STATE_DIR);
    await host.files.write(PORT_STATE.path, `${JSON.stringify(state)}\n`, { mode: PORT_STATE.mode });
  },
  async verify({ host }) {
    const fw = await hostFirewalls(host);
    if (fw.ufw?.active && !fw.ufw.allows) throw new DeployError(`ufw still does not allow ${CHANNEL_PORT}/tcp`, 'see `ufw status`');
    if (fw.firewalld?.running && !(fw.firewalld.runtime && fw.firewalld.permanent)) throw new DeployError(`firewalld still does not have port ${CHANNEL_PORT}/tcp`, 'see `firewall-cmd --list-ports`');
  },
};

/**
 * --reset-clean: the table, its unit and file, and what the install opened in ufw or
 * firewalld (recorded in channel-port.json; a rule someone else made stays).
 * Best effort: a firewall that does not answer does not stop the reset.
 */
export async function removeChannelFirewall(host: Host): Promise<void> {
  if (await host.files.exists(LAYOUT.channelFirewallUnitFile)) {
    await host.services.disable('system', LAYOUT.channelFirewallUnit).catch(() => undefined);
    await host.files.remove(LAYOUT.channelFirewallUnitFile);
    await host.services.daemonReload('system').catch(() => undefined);
  }
  if ((await host.exec.which('nft')) && (await loadedMarker(host)) !== undefined) {
    await host.exec.run('nft', ['delete', 'table', FIREWALL_FAMILY, FIREWALL_TABLE], { allowFailure: true, timeoutMs: 30_000 });
  }
  await host.files.remove(LAYOUT.channelFirewallRules);
  const state = await readPortState(host);
  if (state.ufw && (await host.exec.which('ufw'))) {
    await host.exec.run('ufw', ['delete', 'allow', `${CHANNEL_PORT}/tcp`], { allowFailure: true, timeoutMs: 60_000 });
  }
  if (state.firewalld && (await host.exec.which('firewall-cmd'))) {
    await host.exec.run('firewall-cmd', [`--remove-port=${CHANNEL_PORT}/tcp`], { allowFailure: true, timeoutMs: 60_000 });
    await host.exec.run('firewall-cmd', ['--permanent', `--remove-port=${CHANNEL_PORT}/tcp`], { allowFailure: true, timeoutMs: 60_000 });
  }
  await host.files.remove(LAYOUT.channelPortState);
}
