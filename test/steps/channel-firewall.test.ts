import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { markerIn } from '../../src/channel/firewall.js';
import { LAYOUT } from '../../src/layout.js';
import type { InstallContext, InstallOptions, Step } from '../../src/pipeline/step.js';
import { channelEnvStep } from '../../src/steps/channel.js';
import { FIREWALLD_UNIT, UFW_CONF, channelLimitsStep, channelPortStep, hostFirewalls, removeChannelFirewall, ufwMayBeEnabled } from '../../src/steps/channel-firewall.js';
import { installSteps } from '../../src/steps/index.js';
import { parseAllowList } from '../../src/channel/allow.js';
import { REPO } from '../helpers/binary.js';
import { sandboxContext } from '../helpers/install-ctx.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The firewall steps against stand-ins for nft, systemctl, ufw and firewall-cmd
 * (test/helpers/standins: they keep state in files and never touch a kernel; the real
 * table is tested in network namespaces, test/channel/firewall.test.ts).
 */
function lab(options: { install?: Partial<InstallOptions> } = {}) {
  const bin = tempDir('sd-fw-bin-');
  const state = tempDir('sd-fw-state-');
  for (const name of ['_lib.sh', 'nft', 'systemctl', 'ufw', 'firewall-cmd']) fs.copyFileSync(path.join(REPO, 'test/helpers/standins', name), path.join(bin, name));
  const log = path.join(state, 'calls.log');
  fs.writeFileSync(log, '');
  // Only the stand-ins and the basic tools: never this machine's nft.
  const ctx = sandboxContext({ binDir: bin, env: { PATH: `${bin}:/usr/bin:/bin`, STANDIN_STATE: state, STANDIN_LOG: log }, install: options.install });
  const calls = (name?: string) =>
    fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => line.split('\u001f')).filter(([c]) => !name || c === name).map(([, ...args]) => args.join(' '));
  const flag = (name: string, on = true) => (on ? fs.writeFileSync(path.join(state, name), '') : fs.rmSync(path.join(state, name), { force: true }));
  const file = (name: string) => (fs.existsSync(path.join(state, name)) ? fs.readFileSync(path.join(state, name), 'utf8') : undefined);
  /** ufw as `ufw enable` leaves it: ENABLED=yes in ufw.conf and its rules loaded. */
  const ufwOn = (conf = 'ENABLED=yes\nLOGLEVEL=low\n') => {
    fs.mkdirSync(path.dirname(ctx.host.paths.real(UFW_CONF)), { recursive: true });
    fs.writeFileSync(ctx.host.paths.real(UFW_CONF), conf);
    flag('ufw-active');
  };
  /** firewalld running, as its unit. */
  const firewalldOn = () => {
    flag('firewalld-running');
    flag(`system-${FIREWALLD_UNIT}.active`);
  };
  return { ctx: { ...ctx, host: ctx.host }, calls, flag, file, state, ufwOn, firewalldOn };
}

async function run(step: Step, ctx: InstallContext) {
  const reason = await step.skip?.(ctx);
  if (reason) return { reason, changes: [] };
  const plan = await step.check(ctx);
  if (plan.changes.length > 0) {
    await step.apply(ctx, plan);
    await step.verify?.(ctx);
  }
  return plan;
}

const read = (ctx: InstallContext, p: string) => fs.readFileSync(ctx.host.paths.real(p), 'utf8');

describe('channel firewall steps', () => {
  it('follow the nginx site in the install pipeline', () => {
    const ids = installSteps().map((s) => s.id);
    expect(ids.slice(ids.indexOf('channel-nginx'), ids.indexOf('channel-nginx') + 3)).toEqual(['channel-nginx', 'channel-limits', 'channel-port']);
  });

  it('channel-limits: writes the ruleset (checked with nft -c first) and the unit, loads the table, enables and starts the unit; a re-run changes nothing', async () => {
    const { ctx, calls, file } = lab();
    await run(channelEnvStep, ctx);
    const plan = await run(channelLimitsStep, ctx);
    expect(plan.changes.map((c) => c.target)).toEqual([LAYOUT.channelFirewallRules, LAYOUT.channelFirewallUnitFile, 'nft table inet service_deploy_channel', LAYOUT.channelFirewallUnit]);
    const rules = read(ctx, LAYOUT.channelFirewallRules);
    expect(rules).toMatch(/ct count over 3 \} reject with tcp reset/);
    expect(rules).toMatch(/limit rate over 20\/minute burst 20 packets/);
    expect(rules).toMatch(/tcp dport != 18790 return/);
    expect(rules).toContain('# No address allow list');
    expect(fs.statSync(ctx.host.paths.real(LAYOUT.channelFirewallRules)).mode & 0o777).toBe(0o644);
    const unit = read(ctx, LAYOUT.channelFirewallUnitFile);
    expect(unit).toMatch(/^ExecStart=\S+\/nft -f \/etc\/service-deploy\/channel-firewall\.nft$/m);
    expect(unit).toMatch(/^ExecStop=-\S+\/nft delete table inet service_deploy_channel$/m);
    expect(unit).toMatch(/^Before=network-pre\.target nginx\.service/m);
    expect(markerIn(file('nft-table')!)).toBe(markerIn(rules));
    const nft = calls('nft');
    expect(nft.findIndex((c) => c.startsWith('-c -f '))).toBeLessThan(nft.findIndex((c) => c.startsWith('-f ')));
    expect(calls('systemctl')).toEqual(expect.arrayContaining(['daemon-reload', `enable ${LAYOUT.channelFirewallUnit}`, `start ${LAYOUT.channelFirewallUnit}`]));
    expect((await channelLimitsStep.check(ctx)).changes).toEqual([]);
  });

  it('channel-limits: a table flushed from the kernel (nft flush ruleset) is loaded again; --channel-allow puts the list in the table', async () => {
    const { ctx, file, state } = lab();
    await run(channelEnvStep, ctx);
    await run(channelLimitsStep, ctx);
    fs.rmSync(path.join(state, 'nft-table'));
    const again = await channelLimitsStep.check(ctx);
    expect(again.changes.map((c) => c.summary)).toEqual(['load table inet service_deploy_channel']);
    await channelLimitsStep.apply(ctx, again);
    expect(file('nft-table')).toBeDefined();

    const allowed = { ...lab({ install: { channelAllow: parseAllowList('203.0.113.0/24,2001:db8::/32') } }) };
    await run(channelEnvStep, allowed.ctx);
    await run(channelLimitsStep, allowed.ctx);
    const rules = read(allowed.ctx, LAYOUT.channelFirewallRules);
    expect(rules).toContain('set allow_v4 { type ipv4_addr; flags interval; elements = { 203.0.113.0/24 } }');
    expect(rules).toContain('set allow_v6 { type ipv6_addr; flags interval; elements = { 2001:db8::/32 } }');
    expect(rules).toContain('ip saddr != @allow_v4 reject with tcp reset');
    expect(read(allowed.ctx, LAYOUT.channelEnv)).toMatch(/^SERVICE_CHANNEL_ALLOW=203\.0\.113\.0\/24,2001:db8::\/32$/m);
  });

  it('channel-limits: skipped with the reason where nftables cannot be used (a container without CAP_NET_ADMIN), or nft is missing', async () => {
    const { ctx, flag, calls } = lab();
    flag('nft-eperm');
    expect(await channelLimitsStep.skip!(ctx)).toMatch(/^nftables cannot be used on this server \(nft list tables: Error: Could not process rule: Operation not permitted; a container without CAP_NET_ADMIN\?\): the per-address limits before TLS are not in place/);
    expect(calls('nft')).toEqual(['list tables']);
    const bare = sandboxContext({ env: { PATH: tempDir('sd-empty-bin-') } });
    expect(await channelLimitsStep.skip!(bare)).toMatch(/^nft \(package nftables\) is not installed/);
    expect(await channelLimitsStep.skip!(sandboxContext({ install: { channel: false } }))).toMatch(/catalog/);
  });

  it('channel-port: opens 18790/tcp only where ufw or firewalld is active, never touches one that is off, and records what it opened', async () => {
    const off = lab();
    expect((await run(channelPortStep, off.ctx)).changes).toEqual([]);
    // Off is known without asking them: no ufw.conf saying ENABLED=yes, firewalld.service not active.
    expect(off.calls('ufw')).toEqual([]);
    expect(off.calls('firewall-cmd')).toEqual([]);

    const on = lab();
    on.ufwOn();
    on.firewalldOn();
    const plan = await run(channelPortStep, on.ctx);
    expect(plan.changes.map((c) => c.target)).toEqual(['ufw', 'firewalld']);
    expect(on.calls('ufw')).toContain('allow 18790/tcp comment service-deploy channel');
    expect(on.calls('firewall-cmd')).toEqual(expect.arrayContaining(['--add-port=18790/tcp', '--permanent --add-port=18790/tcp']));
    expect(on.calls('ufw').filter((c) => c.startsWith('enable') || c.startsWith('default') || c.startsWith('reset'))).toEqual([]);
    expect(on.calls('firewall-cmd').filter((c) => c.includes('reload') || c.includes('zone'))).toEqual([]);
    expect(JSON.parse(read(on.ctx, LAYOUT.channelPortState))).toEqual({ ufw: true, firewalld: true });
    expect((await channelPortStep.check(on.ctx)).changes).toEqual([]);
  });

  it('hostFirewalls: ufw is asked only where ufw.conf enables it, firewalld only where its unit is active; what they say still decides', async () => {
    // ufw.conf: any reading that could enable ufw (its shell boot start, its Python reader) makes ufw be asked.
    expect(ufwMayBeEnabled('# comment\nENABLED=yes\n')).toBe(true);
    expect(ufwMayBeEnabled('enabled="YES"\n')).toBe(true);
    expect(ufwMayBeEnabled("ENABLED='yes'\n")).toBe(true);
    expect(ufwMayBeEnabled('ENABLED=yes\nENABLED=no\n')).toBe(true);
    expect(ufwMayBeEnabled('ENABLED=no\nLOGLEVEL=low\n')).toBe(false);
    expect(ufwMayBeEnabled('')).toBe(false);

    // ENABLED=no (the default of an installed ufw): inactive, without a process.
    const disabled = lab();
    disabled.ufwOn('ENABLED=no\n');
    expect((await hostFirewalls(disabled.ctx.host)).ufw).toEqual({ active: false, allows: false });
    expect(disabled.calls('ufw')).toEqual([]);

    // ENABLED=yes with no rules loaded (stopped since): `ufw status` is asked and says inactive.
    const unloaded = lab();
    unloaded.ufwOn();
    unloaded.flag('ufw-active', false);
    expect((await hostFirewalls(unloaded.ctx.host)).ufw).toEqual({ active: false, allows: false });
    expect(unloaded.calls('ufw')).toEqual(['status']);

    // Enabled and loaded without our port: the damage is still seen.
    const blocking = lab();
    blocking.ufwOn();
    expect((await hostFirewalls(blocking.ctx.host)).ufw).toEqual({ active: true, allows: false });

    // firewalld.service active but firewalld not answering "running": firewall-cmd decides.
    const starting = lab();
    starting.flag(`system-${FIREWALLD_UNIT}.active`);
    expect((await hostFirewalls(starting.ctx.host)).firewalld).toEqual({ running: false, runtime: false, permanent: false });
    expect(starting.calls('firewall-cmd')).toEqual(['--state']);

    // Running without our port: seen, both scopes asked.
    const running = lab();
    running.firewalldOn();
    expect((await hostFirewalls(running.ctx.host)).firewalld).toEqual({ running: true, runtime: false, permanent: false });
    expect(running.calls('firewall-cmd')).toEqual(expect.arrayContaining(['--state', '--query-port=18790/tcp', '--permanent --query-port=18790/tcp']));
  });

  it('reset removes the table, the unit, the file and exactly the ports the install opened', async () => {
    const { ctx, calls, file, ufwOn } = lab();
    ufwOn();
    await run(channelEnvStep, ctx);
    await run(channelLimitsStep, ctx);
    await run(channelPortStep, ctx);
    await removeChannelFirewall(ctx.host);
    expect(file('nft-table')).toBeUndefined();
    for (const p of [LAYOUT.channelFirewallRules, LAYOUT.channelFirewallUnitFile, LAYOUT.channelPortState]) expect(fs.existsSync(ctx.host.paths.real(p)), p).toBe(false);
    expect(calls('systemctl')).toContain(`disable --now ${LAYOUT.channelFirewallUnit}`);
    expect(calls('ufw')).toContain('delete allow 18790/tcp');
    // firewalld was not running, so the install opened nothing there and the reset closes nothing.
    expect(calls('firewall-cmd').filter((c) => c.includes('remove'))).toEqual([]);
  });
});
