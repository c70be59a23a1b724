import { createHash } from 'node:crypto';
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DoctorContext } from '../../src/doctor/context.js';
import { CHECKS } from '../../src/doctor/index.js';
import { runChecks } from '../../src/doctor/run.js';
import { diskCheckWith } from '../../src/doctor/checks/disk.js';
import type { Check, CheckReport } from '../../src/doctor/types.js';
import { LAYOUT } from '../../src/layout.js';
import { CHANNEL, makeHealthySandbox, OPS_ANSWERS, type OpsSandbox } from '../helpers/ops-sandbox.js';
import { SECRETS } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';
import { REPO } from '../helpers/binary.js';

const REPO_COMPONENTS = path.join(REPO, 'templates/components.json');
import { createHost } from '../../src/host/index.js';
import type { RunResult } from '../../src/host/exec.js';
import { BUSY_START_JOURNAL, CONFIG_ERROR_JOURNAL } from '../helpers/gateway-journal.js';

let sb: OpsSandbox;
beforeEach(async () => {
  sb = await makeHealthySandbox();
});
afterEach(async () => {
  await sb.close();
});

const byId = (id: string): Check => CHECKS.find((c) => c.id === id)!;
async function check(id: string | Check): Promise<CheckReport> {
  const c = typeof id === 'string' ? byId(id) : id;
  const [report] = await runChecks(new DoctorContext(sb.host), [c]);
  return report!;
}
const config = () => JSON.parse(sb.read(LAYOUT.runtimeConfig)!);
const DEBIAN_DEFAULT_SITE = 'server {\n\tlisten 80 default_server;\n\troot /var/www/html;\n}\n';
const setConfig = (c: unknown) => sb.write(LAYOUT.runtimeConfig, JSON.stringify(c, null, 2), 0o600);
const state = (name: string, content = '') => fs.writeFileSync(path.join(sb.state, name), content);

describe('doctor on a healthy sandbox', () => {
  it('passes every check, and no message holds a secret', async () => {
    const reports = await runChecks(new DoctorContext(sb.host), CHECKS);
    // A backup schedule is optional: without one, `backups` skips saying how to set it.
    const optional = (r: { id: string; status: string }) => r.id === 'backups' && r.status === 'skip';
    expect(reports.filter((r) => r.status !== 'pass' && !optional(r)).map((r) => `${r.id}: ${r.status} ${r.message}`)).toEqual([]);
    expect(reports.find((r) => r.id === 'backups')?.message).toMatch(/no backup schedule .*--every/);
    const text = JSON.stringify(reports);
    for (const secret of [SECRETS.apiKey, SECRETS.mcpToken, CHANNEL.token, CHANNEL.knock]) expect(text).not.toContain(secret);
  });
});

describe("node-runtime: the install's stamp stands for running the very binary it verified", () => {
  const nodeRuns = () => sb.calls('node').filter((c) => c.args[0] === '--version').length;
  const stamp = (identity: string, version: string) => sb.write(LAYOUT.nodeStamp, JSON.stringify({ identity, version }), 0o600);
  const identityOf = (p: string) => {
    const st = fs.statSync(path.join(sb.root, p), { bigint: true });
    return [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(':');
  };

  it('with a stamp of this very binary, doctor runs no node; with none, it runs it', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.nodeStamp));
    expect((await check('node-runtime')).status).toBe('pass');
    expect(nodeRuns()).toBe(1);
    sb.clearCalls();
    const version = JSON.parse(fs.readFileSync(path.join(REPO_COMPONENTS), 'utf8')).node.version;
    stamp(identityOf(`${LAYOUT.nodePrefix}/bin/node`), version);
    expect(await check('node-runtime')).toMatchObject({ status: 'pass', message: `Node ${version}` });
    expect(nodeRuns()).toBe(0);
  });

  it('a binary changed since it was stamped (rewritten, or only its mode) is run and judged again', async () => {
    const node = `${LAYOUT.nodePrefix}/bin/node`;
    const version = JSON.parse(fs.readFileSync(path.join(REPO_COMPONENTS), 'utf8')).node.version;
    stamp(identityOf(node), version);
    sb.write(node, '#!/bin/sh\necho v22.1.0\n', 0o755);
    expect((await check('node-runtime')).message).toMatch(/Node 22\.1\.0, below the pinned 26\./);
    stamp(identityOf(node), version);
    fs.chmodSync(path.join(sb.root, node), 0o644);
    expect((await check('node-runtime')).message).toMatch(/not runnable/);
  });
});

describe('node-runtime: a server below the pinned Node is flagged, with the upgrade as its fix', () => {
  const node = `${LAYOUT.nodePrefix}/bin/node`;
  const pinned = (): string => JSON.parse(fs.readFileSync(REPO_COMPONENTS, 'utf8')).node.version;

  it('the previous pin (24.21.0, every server before the Node 26 release) fails: below the pin, `install` upgrades it', async () => {
    sb.write(node, '#!/bin/sh\necho v24.21.0\n', 0o755);
    const report = await check('node-runtime');
    expect(report.status).toBe('fail');
    expect(report.message).toBe(`${node} is Node 24.21.0, below the pinned ${pinned()} (it lacks the fixes of the pinned release)`);
    expect(report.fix).toContain(`service-deploy install\`: it upgrades Node to ${pinned()} (a verified backup first`);
    expect(report.fix).toContain('service-deploy rollback');
    expect(report.commands).toEqual(['service-deploy install']);
  });

  it('one patch release below fails too; a newer Node than the pin is named as not the pinned one', async () => {
    const [major, minor, patch] = pinned().split('.').map(Number) as [number, number, number];
    const older = patch > 0 ? `${major}.${minor}.${patch - 1}` : `${major}.${minor - 1}.99`;
    sb.write(node, `#!/bin/sh\necho v${older}\n`, 0o755);
    expect((await check('node-runtime')).message).toContain(`Node ${older}, below the pinned ${pinned()}`);
    sb.write(node, `#!/bin/sh\necho v${major}.${minor}.${patch + 1}\n`, 0o755);
    const newer = await check('node-runtime');
    expect(newer.status).toBe('fail');
    expect(newer.message).toContain(`Node ${major}.${minor}.${patch + 1}, not the pinned ${pinned()}`);
  });
});

/** [check id, how to break it, a word the message must have, a word the fix must have, fixable]. */
const BROKEN: Array<[string, () => void | Promise<void>, RegExp, RegExp, boolean]> = [
  ['os', () => sb.write('/etc/os-release', 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12"\n'), /Debian GNU\/Linux 12 is not supported/, /Ubuntu 22\.04 or 24\.04/, false],
  ['node-runtime', () => sb.write(`${LAYOUT.nodePrefix}/bin/node`, '#!/bin/sh\necho v22.1.0\n', 0o755), /Node 22\.1\.0, below the pinned 26\./, /service-deploy install/, false],
  ['agent-runtime', () => sb.write(`${LAYOUT.openclawProject}/node_modules/openclaw/package.json`, '{"name":"openclaw","version":"2026.1.0"}'), /OpenClaw 2026\.1\.0 is installed, this service-deploy pins/, /service-deploy install/, false],
  ['runtime-trees', () => sb.write(`${LAYOUT.openclawProject}/node_modules/@anthropic-ai/sdk/package.json`, '{"name":"@anthropic-ai/sdk","version":"0.0.1-changed"}'), /OpenClaw \(\/opt\/service-deploy\/openclaw\) differs from the shipped lock in 1 package: @anthropic-ai\/sdk is 0\.0\.1-changed, the lock has \d/, /installs the tree from the shipped lock/, false],
  ['gateway-service', () => sb.systemctl('--user', 'stop', LAYOUT.gatewayUnit), /is not active/, /service-deploy gateway restart/, true],
  ['health', () => undefined, /does not answer/, /read its log/, false],
  ['gateway-bind', () => setConfig({ ...config(), gateway: { ...config().gateway, bind: 'lan' } }), /gateway\.bind is "lan"/, /loopback/, true],
  ['gateway-auth', () => { const c = config(); c.gateway.token = c.gateway.auth.token; delete c.gateway.auth; setConfig(c); }, /gateway\.token: legacy top-level token.*gateway\.auth: missing/, /gateway\.auth back/, true],
  ['providers', () => { const c = config(); c.models.providers.openai = { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-live-abcdefghijklmnop' }; setConfig(c); }, /models\.providers\.openai: direct model-vendor provider/, /single service provider/, true],
  ['agent-settings', () => { const c = config(); c.agents.entries.main.identity.name = 'Old Name'; c.agents.defaults.heartbeat.target = 'owner'; setConfig(c); }, /agent display name: Old Name \(want Acme Dental GmbH\).*heartbeat: target "owner".*runs are skipped/, /guard does it/, true],
  ['config-valid', () => { const c = config(); c.gateway.token = 'x'; setConfig(c); }, /OpenClaw rejects .*gateway: Unrecognized key/, /doctor --fix/, false],
  ['channel-env', () => fs.chmodSync(path.join(sb.root, LAYOUT.channelEnv), 0o644), /mode 0644: the channel token and knock are readable/, /0600/, true],
  ['channel-drop-in', () => fs.rmSync(path.join(sb.root, LAYOUT.channelDropIn)), /service-env\.conf is missing.*503 "misconfigured"/, /reload the units and restart/, true],
  ['nginx', () => sb.write(LAYOUT.nginxSite, sb.read(LAYOUT.nginxSite)!.replace('limit_conn service_cn 3;', 'limit_conn zone=service_cn 3;'), 0o600), /nginx -t fails: .*zero size shared memory zone/, /write our site again/, true],
  ['nginx-limit-conn', () => sb.write(LAYOUT.nginxSite, sb.read(LAYOUT.nginxSite)!.replace('limit_conn service_cn 3;', 'limit_conn zone=service_cn 3;'), 0o600), /limit_conn zone=/, /limit_conn service_cn 3;/, true],
  ['tls-cert', () => fs.rmSync(path.join(sb.root, LAYOUT.tlsCert)), /channel\.crt is missing/, /install --channel|--channel/, false],
  ['channel-limits', () => fs.rmSync(path.join(sb.state, 'nft-table')), /table inet service_deploy_channel is not loaded/, /load it again/, true],
  // ufw as `ufw enable` leaves it: ENABLED=yes in its conf (doctor asks `ufw status` only then), its rules loaded.
  ['channel-port', () => { sb.write('/etc/ufw/ufw.conf', 'ENABLED=yes\n', 0o644); state('ufw-active'); }, /ufw is active and does not allow 18790\/tcp/, /allow the port/, false],
  ['guard-cron', () => fs.rmSync(path.join(sb.root, LAYOUT.guardCron)), /hourly enforcer is not in place.*service-guard: create/, /guard script and its cron entry/, true],
  ['memory', () => { const old = new Date(Date.now() - 2 * 3600_000); fs.utimesSync(path.join(sb.root, LAYOUT.qmdRefreshStamp), old, old); }, /memory index was last refreshed 120 min ago \(the timer runs every 15 min\)/, /refresh it now/, false],
  ['mesh', () => fs.rmSync(path.join(sb.state, 'ts-serve')), /not served over the mesh/, /enable Serve and Funnel at the network level, then re-run the install/, false],
  ['devices', () => state('devices.json', JSON.stringify({ pending: [{ requestId: 'req-7f3a', displayName: 'Lisa iPhone' }], paired: [] })), /1 device waiting for approval: req-7f3a \(Lisa iPhone\)/, /approve/, false],
  ['secrets', () => { const c = config(); c.gateway.auth.token = SECRETS.apiKey; setConfig(c); }, /openclaw\.json holds the service API key in plain text; gateway\.auth\.token: plaintext pkt_\*\*\*\*/, /references back.*rotate it/, true],
  // An edited unit file: the files action writes it again (the sandbox is rated after that).
  ['gateway-sandbox', () => sb.write(LAYOUT.gatewayUnitFile, sb.read(LAYOUT.gatewayUnitFile)!.replace(/# ---- sandbox[\s\S]*?\n\[Install\]/, '[Install]')), /openclaw-gateway\.service is not the unit the install writes/, /write the unit again \(doctor --fix\)/, true],
  ['tool-policy', () => { const c = config(); c.tools.alsoAllow.push('group:plugins'); c.tools.deny = c.tools.deny.filter((t: string) => t !== 'node_inference'); setConfig(c); }, /tools\.alsoAllow: .*group:plugins.*tools\.deny: /, /tool policy back/, true],
  ['nginx-hardening', () => fs.rmSync(path.join(sb.root, LAYOUT.nginxHardeningDropIn)), /service-deploy-hardening\.conf is missing: nginx runs without its sandbox/, /write the drop-in again/, true],
  ['nginx-default-site', () => { sb.write('/etc/nginx/sites-available/default', DEBIAN_DEFAULT_SITE, 0o644); fs.mkdirSync(path.join(sb.root, '/etc/nginx/sites-enabled'), { recursive: true }); fs.symlinkSync('/etc/nginx/sites-available/default', path.join(sb.root, '/etc/nginx/sites-enabled/default')); state('dpkg-conffiles', `nginx-common /etc/nginx/sites-available/default ${createHash('md5').update(DEBIAN_DEFAULT_SITE).digest('hex')}\n`); }, /Debian's default site is enabled again: nginx answers "Welcome to nginx!" on port 80/, /disable it again/, true],
  ['package-lock', () => undefined, /locked: pid \d+ \(\S*python3.* on \/var\/lib\/dpkg\/lock-frontend/s, /5 minutes/, false],
];

describe('each check: broken fixture fails (or warns) with its fix; healthy passes', () => {
  for (const [id, breakIt, message, fix, fixable] of BROKEN) {
    it(id, async () => {
      expect((await check(id)).status, `${id} healthy`).toBe('pass');
      let holder: ReturnType<typeof execa> | undefined;
      if (id === 'health') sb.host.env.SERVICE_HEALTH_URL = 'http://127.0.0.1:9/healthz';
      if (id === 'package-lock') {
        const lockFile = path.join(sb.root, 'var/lib/dpkg/lock-frontend');
        fs.mkdirSync(path.dirname(lockFile), { recursive: true });
        fs.writeFileSync(lockFile, '');
        holder = execa('python3', ['-c', `import fcntl,time\nf=open(${JSON.stringify(lockFile)},'w'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)`]);
        await new Promise<void>((resolve) => holder!.stdout!.once('data', () => resolve()));
      }
      try {
        await breakIt();
        const report = await check(id);
        expect(['fail', 'warn']).toContain(report.status);
        expect(report.message).toMatch(message);
        expect(report.fix).toMatch(fix);
        expect(report.fixable).toBe(fixable);
      } finally {
        holder?.kill();
        await holder?.catch(() => undefined);
      }
    });
  }

  it('health: a gateway that stopped itself (exit 78) is named, a busy start with "start it again", any other reason with its own words', async () => {
    sb.host.env.SERVICE_HEALTH_URL = 'http://127.0.0.1:9/healthz';
    await sb.systemctl('--user', 'stop', LAYOUT.gatewayUnit);
    state(`user-${LAYOUT.gatewayUnit}.refused`, '');
    state(`journal-${LAYOUT.gatewayUnit}`, `${BUSY_START_JOURNAL.join('\n')}\n`);
    const busy = await check('health');
    expect(busy.status).toBe('fail');
    expect(busy.message).toMatch(/the gateway stopped itself at its start, the server too busy \(Gateway failed to start: OpenClaw startup migrations.*systemd does not restart it/);
    expect(busy.fix).toMatch(/start it again/);
    state(`journal-${LAYOUT.gatewayUnit}`, `${CONFIG_ERROR_JOURNAL.join('\n')}\n`);
    const config = await check('health');
    expect(config.message).toMatch(/the gateway stopped itself \(exit status 78\): Gateway failed to start: Invalid config/);
    expect(config.fix).toMatch(/a start alone stops again/);
  });

  it('nginx-default-site: where nginx predates the install, Debian\'s site is a note to act on by hand; a site of the server\'s own passes', async () => {
    // Not the install's nginx: not among the packages it added, no sandbox drop-in.
    sb.write(LAYOUT.packagesFile, JSON.stringify({ packages: ['cron', 'nftables'] }), 0o600);
    fs.rmSync(path.join(sb.root, LAYOUT.nginxHardeningDropIn));
    expect((await check('nginx-hardening')).status).toBe('skip');
    sb.write('/etc/nginx/sites-available/default', DEBIAN_DEFAULT_SITE, 0o644);
    fs.mkdirSync(path.join(sb.root, '/etc/nginx/sites-enabled'), { recursive: true });
    fs.symlinkSync('/etc/nginx/sites-available/default', path.join(sb.root, '/etc/nginx/sites-enabled/default'));
    state('dpkg-conffiles', `nginx-common /etc/nginx/sites-available/default ${createHash('md5').update(DEBIAN_DEFAULT_SITE).digest('hex')}\n`);
    const noted = await check('nginx-default-site');
    expect([noted.status, noted.fixable]).toEqual(['warn', false]);
    expect(noted.message).toMatch(/nginx was on this server before the install, so it is left as it is/);
    expect(noted.commands).toEqual(['rm /etc/nginx/sites-enabled/default', 'nginx -t', 'systemctl reload nginx']);
    sb.write('/etc/nginx/sites-available/default', DEBIAN_DEFAULT_SITE.replace('/var/www/html', '/srv/shop'), 0o644);
    const own = await check('nginx-default-site');
    expect(own.status).toBe('pass');
    expect(own.message).toMatch(/a default site of the server's own is enabled \(.*changed from Debian's\)/);
  });

  it('channel-port: a disabled ufw and a stopped firewalld are known without a process; running firewalld without the port still fails', async () => {
    sb.write('/etc/ufw/ufw.conf', 'ENABLED=no\n', 0o644);
    sb.clearCalls();
    expect(await check('channel-port')).toMatchObject({ status: 'pass', message: 'ufw inactive; firewalld not running' });
    expect([...sb.calls('ufw'), ...sb.calls('firewall-cmd')]).toEqual([]);
    state('firewalld-running');
    state('system-firewalld.service.active');
    const report = await check('channel-port');
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(/firewalld is running and port 18790\/tcp is not open/);
    expect(sb.calls('firewall-cmd').map((c) => c.args.join(' '))).toEqual(expect.arrayContaining(['--state', '--query-port=18790/tcp']));
  });

  it('secrets: a secret source that differs from the stored answers fails, the guard puts it back', async () => {
    sb.write(LAYOUT.runtimeSecretsEnv, 'SERVICE_MCP_TOKEN=mcp_tok_someone_else_000000\n', 0o600);
    const report = await check('secrets');
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(/secret source differs from the stored answers: .*gateway\.env: update content/);
    expect(report.message).not.toContain('mcp_tok_someone_else');
    expect(report.action).toBe('guard');
  });

  it('secrets: an audit killed at its time limit (a loaded server) is a warning naming the limit and the load, not a failure', async () => {
    class TimedOutAudit extends DoctorContext {
      override secretsAudit(): Promise<RunResult> {
        return Promise.resolve({ command: 'openclaw secrets audit --check --json', exitCode: -1, stdout: '', stderr: '', failed: true, timedOut: true });
      }
    }
    const [report] = await runChecks(new TimedOutAudit(sb.host), [byId('secrets')]);
    expect(report!.status).toBe('warn');
    expect(report!.message).toMatch(/^references only; .*openclaw secrets audit --check did not finish in 90 s \(load average \d+\.\d\): not judged this time$/);
    // The same empty answer from an audit that ended by itself is still a failure.
    class SilentAudit extends DoctorContext {
      override secretsAudit(): Promise<RunResult> {
        return Promise.resolve({ command: 'openclaw secrets audit --check --json', exitCode: 3, stdout: '', stderr: 'boom', failed: true, timedOut: false });
      }
    }
    const [silent] = await runChecks(new SilentAudit(sb.host), [byId('secrets')]);
    expect(silent!.status).toBe('fail');
    expect(silent!.message).toMatch(/gave no report \(exit 3\): boom/);
  });

  it('secrets: an audit the CLI cannot run is agent-runtime\'s finding; a CLI that starts and gives no report fails', async () => {
    const entry = `${LAYOUT.openclawProject}/node_modules/openclaw/openclaw.mjs`;
    sb.write(LAYOUT.openclawBin, '#!/bin/sh\necho "Error: Cannot find module openclaw.mjs" >&2\nexit 1\n', 0o755);
    const crashing = await check('secrets');
    expect([crashing.status, crashing.fixable]).toEqual(['fail', false]);
    expect(crashing.message).toMatch(/openclaw secrets audit --check gave no report \(exit 1\): Error: Cannot find module/);
    fs.rmSync(path.join(sb.root, entry));
    const report = await check('secrets');
    expect(report.status).toBe('pass');
    expect(report.message).toMatch(new RegExp(`source 0600 in a 0700 folder; audit not run: the OpenClaw CLI cannot start \\(${entry.replace(/[.]/g, '\\.')} is missing; see agent-runtime\\)`));
    expect((await check('agent-runtime')).message).toContain(`${entry} is missing`);
    expect((await check('config-valid')).message).toMatch(/the OpenClaw CLI cannot start .*see agent-runtime/);
  });

  it('secrets: an unreadable openclaw.json is not the guard\'s (the guard cannot read it either)', async () => {
    sb.write(LAYOUT.runtimeConfig, '', 0o600);
    const report = await check('secrets');
    expect(report.status).toBe('pass');
    expect(report.message).toMatch(/audit not run: .*openclaw\.json is not valid JSON5.*\(see runtime-config\)/);
    const settings = await check('agent-settings');
    expect([settings.status, settings.fixable]).toEqual(['fail', false]);
  });

  it('agent-settings: a missing openclaw.json is written again whole by the runtime-config action', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.runtimeConfig));
    const report = await check('agent-settings');
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(/openclaw\.json is missing/);
    expect(report.action).toBe('runtime-config');
  });

  it('answers.json the strict reader refuses: the checks that need it fail naming it, none crashes', async () => {
    // The checks that need the answers: those that fail for want of them when answers.json is gone.
    fs.rmSync(path.join(sb.root, LAYOUT.answersFile));
    const without = await runChecks(new DoctorContext(sb.host), CHECKS);
    const needing = without.filter((r) => r.status === 'fail' && r.message.includes(`no stored answers (${LAYOUT.answersFile})`)).map((r) => r.id);
    expect(needing.length).toBeGreaterThan(1);
    sb.write(LAYOUT.answersFile, '{"customerName": ', 0o600);
    const reports = await runChecks(new DoctorContext(sb.host), CHECKS);
    expect(reports.filter((r) => r.status === 'crashed').map((r) => `${r.id}: ${r.message}`)).toEqual([]);
    const named = reports.filter((r) => r.status !== 'skip' && r.message.includes(`${LAYOUT.answersFile}: (file): not valid JSON`));
    expect(named.map((r) => r.id)).toEqual(needing);
    for (const r of named) expect([r.status, r.fixable, r.commands]).toEqual(['fail', false, [`mv ${LAYOUT.answersFile} ${LAYOUT.answersFile}.broken`, 'service-deploy install']]);
    expect(reports.find((r) => r.id === 'secrets')!.message).toMatch(/not valid JSON.*\(see gateway-auth\)$/);
  });

  it('gateway-sandbox: prints the exposure the unit is rated at', async () => {
    const report = await check('gateway-sandbox');
    expect(report.status).toBe('pass');
    const exposure = Number(/exposure (\d+\.\d+)/.exec(report.message)?.[1]);
    expect(exposure).toBeGreaterThan(0);
    expect(exposure).toBeLessThanOrEqual(4.5);
  });

  it('gateway-sandbox: a loaded unit weaker than its file (an override drop-in) is rated above the target', async () => {
    // What root's user manager would rate with a drop-in that lifts the sandbox: the real
    // systemd-analyze, offline, on the unit without its sandbox section (the file stays ours).
    const dir = tempDir('sd-analyze-');
    const loaded = path.join(dir, LAYOUT.gatewayUnit);
    fs.writeFileSync(loaded, sb.read(LAYOUT.gatewayUnitFile)!.replace(/# ---- sandbox[\s\S]*?\n\[Install\]/, '[Install]'));
    fs.writeFileSync(path.join(dir, 'systemd-analyze'), `#!/bin/sh\nmkdir -p ${dir}/xdg && chmod 700 ${dir}/xdg\nXDG_RUNTIME_DIR=${dir}/xdg exec /usr/bin/systemd-analyze security --user --offline=yes --no-pager ${loaded}\n`, { mode: 0o755 });
    const host = createHost({ env: sb.env({ PATH: `${dir}:${sb.env().PATH}` }), quiet: true });
    const [report] = await runChecks(new DoctorContext(host), [byId('gateway-sandbox')]);
    expect(report!.status).toBe('fail');
    expect(report!.message).toMatch(/exposure 9\.\d is above 4\.5/);
    expect(report!.fix).toMatch(/re-run the install.*drop-ins/);
    expect(report!.fixable).toBe(false);
  });

  it('disk: fails below its threshold, passes above', async () => {
    expect((await check(diskCheckWith({ failBelow: 1, warnBelow: 2 }))).status).toBe('pass');
    const report = await check(diskCheckWith({ failBelow: Number.MAX_SAFE_INTEGER, warnBelow: Number.MAX_SAFE_INTEGER }));
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(/GiB free on \//);
    expect(report.fix).toMatch(/apt-get clean/);
  });

  it('channel-drop-in: the drop-in on disk but not loaded (no daemon-reload) says every chat call fails with 503', async () => {
    // The gateway was started before the drop-in existed: remove it, reload, restart, then put it back without a reload.
    fs.rmSync(path.join(sb.root, LAYOUT.channelDropIn));
    await sb.systemctl('--user', 'daemon-reload');
    await sb.systemctl('--user', 'restart', LAYOUT.gatewayUnit);
    sb.write(LAYOUT.channelDropIn, (await import('../../src/steps/channel.js')).channelDropInContent());
    const report = await check('channel-drop-in');
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(new RegExp(`running gateway \\(pid ${sb.gatewayPid()}\\) lacks SERVICE_CHANNEL_TOKEN, SERVICE_CHANNEL_KNOCK, SERVICE_TS_HOSTNAME, SERVICE_CHANNEL_EDGE: every chat call fails with 503 "misconfigured"`));
    expect(report.commands).toContain('XDG_RUNTIME_DIR=/run/user/0 systemctl --user daemon-reload');
    expect(report.action).toBe('gateway-restart');
  });

  it('channel-drop-in: a gateway running with an older token than channel.env fails', async () => {
    sb.write(LAYOUT.channelEnv, sb.read(LAYOUT.channelEnv)!.replace(CHANNEL.token, 'chan_tok_NEWNEWNEWNEWNEWNEWNEWNEW00'), 0o600);
    const report = await check('channel-drop-in');
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(/older values of SERVICE_CHANNEL_TOKEN/);
    expect(report.message).not.toContain('NEWNEW');
  });

  it('channel checks skip on a server without the channel', async () => {
    await sb.close();
    sb = await makeHealthySandbox({ channel: false });
    for (const id of ['channel-env', 'channel-drop-in', 'nginx', 'nginx-limit-conn', 'tls-cert']) {
      expect((await check(id)).status, id).toBe('skip');
    }
  });

  it('nginx-limit-conn: an old "zero size shared memory zone" in the error log warns only when nothing listens', async () => {
    sb.write('/var/log/nginx/error.log', '2026/01/01 [emerg] 12#12: zero size shared memory zone "zone=service_cn"\n');
    expect((await check('nginx-limit-conn')).status).toBe('pass');
    state('ss-output', 'LISTEN 0 511 127.0.0.1:18789 0.0.0.0:* users:(("node",pid=1,fd=3))\n');
    const report = await check('nginx-limit-conn');
    expect(report.status).toBe('warn');
    expect(report.message).toMatch(/zero size shared memory zone/);
  });

  it('nginx: not listening on 18790 fails with a restart', async () => {
    state('ss-output', 'LISTEN 0 511 127.0.0.1:18789 0.0.0.0:* users:(("node",pid=1,fd=3))\n');
    const report = await check('nginx');
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(/nothing listens on port 18790/);
    expect(report.action).toBe('nginx-restart');
  });

  it('gateway-bind: a listener on 0.0.0.0:18789 fails', async () => {
    state('ss-output', 'LISTEN 0 511 0.0.0.0:18789 0.0.0.0:* users:(("node",pid=1,fd=3))\nLISTEN 0 511 0.0.0.0:18790 0.0.0.0:*\n');
    const report = await check('gateway-bind');
    expect(report.status).toBe('fail');
    expect(report.message).toMatch(/port 18789 is open on 0\.0\.0\.0 \(node\)/);
  });

  it('guard-cron: reports the last run, a failed last run, and a stale one', async () => {
    expect((await check('guard-cron')).message).toMatch(/last run 10 min ago: ok: nothing to restore/);
    state('syslog', `${Date.now() * 1000}\x1fservice-guard\x1ffailed: OpenClaw rejects the new config\n`);
    const failed = await check('guard-cron');
    expect(failed.status).toBe('fail');
    expect(failed.message).toMatch(/last run \(0 min ago\) failed: OpenClaw rejects/);
    state('syslog', `${(Date.now() - 5 * 3600_000) * 1000}\x1fservice-guard\x1fok: nothing to restore\n`);
    const stale = await check('guard-cron');
    expect(stale.status).toBe('warn');
    expect(stale.message).toMatch(/last ran 300 min ago/);
  });

  it('memory: within two periods passes; no collection, a stopped timer or an open index fails', async () => {
    const recent = new Date(Date.now() - 25 * 60_000);
    fs.utimesSync(path.join(sb.root, LAYOUT.qmdRefreshStamp), recent, recent);
    expect((await check('memory')).status).toBe('pass');
    fs.chmodSync(path.join(sb.root, LAYOUT.qmdIndex), 0o644);
    expect((await check('memory')).message).toMatch(/readable by others: .*index\.sqlite/);
    fs.rmSync(path.join(sb.state, 'user-qmd-refresh.timer.active'));
    expect((await check('memory')).message).toMatch(/qmd-refresh\.timer is not active/);
    sb.write(LAYOUT.qmdCollectionsFile, 'collections:\n  notes:\n    path: /srv/notes\n    pattern: "**/*.md"\n', 0o600);
    const missing = await check('memory');
    expect([missing.status, missing.message]).toEqual(['fail', expect.stringMatching(/QMD has no "memory" collection/)]);
  });

  it('memory: QMD\'s MCP server stopped, or running without answering, fails naming its unit and log', async () => {
    const recent = new Date(Date.now() - 5 * 60_000);
    fs.utimesSync(path.join(sb.root, LAYOUT.qmdRefreshStamp), recent, recent);
    expect((await check('memory')).message).toMatch(/served by qmd-mcp\.service/);
    state('qmd-down');
    const silent = await check('memory');
    expect([silent.status, silent.message]).toEqual(['fail', expect.stringMatching(/qmd-mcp\.service runs but http:\/\/127\.0\.0\.1:\d+\/qmd\/health does not answer: HTTP 503/)]);
    expect(silent.commands).toEqual(['XDG_RUNTIME_DIR=/run/user/0 systemctl --user restart qmd-mcp.service', 'journalctl --user-unit=qmd-mcp.service -n 50 --no-pager']);
    fs.rmSync(path.join(sb.state, 'user-qmd-mcp.service.active'));
    const stopped = await check('memory');
    expect([stopped.status, stopped.message]).toEqual(['fail', expect.stringMatching(/qmd-mcp\.service is not running: the agent's memory tools \(qmd__query, qmd__get\) fail/)]);
    expect(stopped.commands?.[0]).toBe('XDG_RUNTIME_DIR=/run/user/0 systemctl --user enable --now qmd-mcp.service');
  });

  describe('gateway-memory: the bound the unit carries, and whether the kernel holds it', () => {
    const managerCg = 'sys/fs/cgroup/user.slice/user-0.slice/user@0.service';
    const gatewayCg = `${managerCg}/app.slice/${LAYOUT.gatewayUnit}`;
    const restart = () => sb.systemctl('--user', 'restart', LAYOUT.gatewayUnit);

    it('in effect under cgroup v2 with the memory controller delegated: passes with the bytes systemd computed (75% of 4 GiB)', async () => {
      const report = await check('gateway-memory');
      expect([report.status, report.message]).toEqual(['pass', expect.stringMatching(/^MemoryMax 3\.00 GiB \(75% of memory\), MemoryHigh 2\.60 GiB, in effect \(\/sys\/fs\/cgroup\/user\.slice\/.*\/openclaw-gateway\.service\/memory\.max\)/)]);
      expect(fs.readFileSync(path.join(sb.root, gatewayCg, 'memory.max'), 'utf8').trim()).toBe(String(3 * 2 ** 30));
    });

    it('root\'s user manager without the memory controller: warns, naming user@0.service\'s delegation and the drop-in that restores it', async () => {
      fs.writeFileSync(path.join(sb.root, managerCg, 'cgroup.controllers'), 'cpu pids\n');
      await restart();
      const report = await check('gateway-memory');
      expect(report.status).toBe('warn');
      expect(report.message).toMatch(/MemoryMax 3\.00 GiB .* configured, not in effect: root's user manager has no memory controller .*"cpu pids".*user@0\.service does not delegate it/);
      expect(report.commands).toEqual(expect.arrayContaining([expect.stringMatching(/user@0\.service\.d.*Delegate=pids memory cpu/)]));
    });

    it('the legacy hierarchy (cgroup v1): warns without a limit file, passes with one that holds the bound', async () => {
      fs.rmSync(path.join(sb.root, 'sys/fs/cgroup/cgroup.controllers'));
      const legacy = await check('gateway-memory');
      expect([legacy.status, legacy.message]).toEqual(['warn', expect.stringMatching(/legacy cgroup hierarchy .*systemd applies memory limits of user services only under cgroup v2/)]);
      const v1 = path.join(sb.root, 'sys/fs/cgroup/memory/user.slice/user-0.slice/user@0.service/app.slice', LAYOUT.gatewayUnit);
      fs.mkdirSync(v1, { recursive: true });
      fs.writeFileSync(path.join(v1, 'memory.limit_in_bytes'), `${3 * 2 ** 30}\n`);
      expect((await check('gateway-memory')).message).toMatch(/in effect \(\/sys\/fs\/cgroup\/memory\/user\.slice/);
    });

    it('a cgroup that holds another limit than the unit\'s warns; an edited unit is written again by --fix; a bound undone elsewhere fails', async () => {
      fs.writeFileSync(path.join(sb.root, gatewayCg, 'memory.max'), 'max\n');
      expect((await check('gateway-memory')).message).toMatch(/configured, not in effect: \/sys\/fs\/cgroup\/.*\/memory\.max holds max, not the unit's 3221225472/);
      const bound = sb.read(LAYOUT.gatewayUnitFile)!;
      sb.write(LAYOUT.gatewayUnitFile, bound.replace(/^Memory(High|Max)=.*\n/gm, ''));
      const edited = await check('gateway-memory');
      expect([edited.status, edited.message, edited.fixable]).toEqual(['fail', expect.stringMatching(/is not the unit the install writes: its memory bound \(MemoryMax=75%\)/), true]);
      // The unit file as the install writes it, and a drop-in that undoes the bound.
      sb.write(LAYOUT.gatewayUnitFile, bound);
      sb.write(`${LAYOUT.gatewayDropInDir}/memory.conf`, '[Service]\nMemoryMax=infinity\n');
      const none = await check('gateway-memory');
      expect([none.status, none.fixable]).toEqual(['fail', false]);
      expect(none.message).toMatch(/has no memory bound \(MemoryMax=infinity\)/);
      expect(none.fix).toMatch(/MemoryMax=75%/);
    });

    it('skips while the gateway is stopped (gateway-service reports that)', async () => {
      await sb.systemctl('--user', 'stop', LAYOUT.gatewayUnit);
      expect((await check('gateway-memory')).status).toBe('skip');
    });
  });

  it('mesh: a hostname other than the configured one fails with the set command', async () => {
    state('ts-up', 'something-else\n');
    const report = await check('mesh');
    expect(report.status).toBe('fail');
    expect(report.commands).toEqual([`tailscale set --hostname=${OPS_ANSWERS.meshHostname}`]);
  });

  it('a check that throws becomes "crashed" and the others still run', async () => {
    const boom: Check = { id: 'boom', title: 'boom', run: async () => { throw new Error(`kaputt ${SECRETS.apiKey}`); } };
    const ctx = new DoctorContext(sb.host);
    await ctx.answers(); // registers the secrets with the redactor
    const reports = await runChecks(ctx, [byId('os'), boom, byId('disk')]);
    expect(reports.map((r) => r.status)).toEqual(['pass', 'crashed', 'pass']);
    expect(reports[1]!.message).toContain('kaputt ****');
  });
});
