// The fleet (issue 16): three servers booted at once, driven by Ansible with the role and
// playbooks of examples/ansible, as a partner with many customer servers would. docs/fleet.md.
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { scenarioSteps } from './steps.js';
import { cleanupTempDirs } from '../helpers/tmp.js';
import { E2E_CACHE } from './artifacts.js';
import type { Suite } from './container.js';
import { DOCTOR_TABLE_HEAD, EXAMPLE, Fleet, parseDoctorTable, playFailure, type DoctorRow, type PlayRun } from './fleet.js';
import { log, seconds, serverDiagnostics } from './harness.js';
import { filesWithSecrets } from './secrets.js';
import { EARLIER_LAYOUT, EARLIER_OPENCLAW, GLOBAL_PACKAGE, PINNED_OPENCLAW, healthzOn, installedOpenclaw, packBrokenBuildOn, putEarlierRelease } from './lifecycle.js';
import { REPO } from '../helpers/binary.js';

const SUITE = (process.env.E2E_FLEET_SUITE ?? 'bookworm') as Suite;
const HOSTS = ['fleet-1', 'fleet-2', 'fleet-3'];
const NEW_MODEL = 'e2e-model-2';
/** This build's release (status --json's binary.version): what every server runs. */
const RELEASE: string = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version;
/** The other components this build pins (doctor's versions): the table's node, qmd and lossless-claw on every server. */
const PINS = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/components.json'), 'utf8'));
const ON_THE_PIN = { node: PINS.node.version as string, qmd: PINS.qmd.version as string, losslessClaw: PINS.losslessClaw.version as string };
const GATEWAY_CTL = 'XDG_RUNTIME_DIR=/run/user/0 systemctl --user';
const GATEWAY_PID = `${GATEWAY_CTL} show -p MainPID --value openclaw-gateway.service`;
/** Where the earlier releases (and so the previous release here) installed OpenClaw: globally, in the Node prefix. */
const OPENCLAW_PACKAGE = GLOBAL_PACKAGE;
const fleet = new Fleet(SUITE, HOSTS.length);
const report: Record<string, unknown> = { startedAt: new Date().toISOString(), suite: SUITE, versionTables: {} };
const timings: Record<string, number> = {};
const plays: PlayRun[] = [];
const started = Date.now();

const { step, failure } = scenarioSteps(async (error) => {
  const last = plays.at(-1);
  // The failed servers' own logs (their gateway journal) after the play's output: the
  // run's summary repeats the first gateway journal, and a play names only the task.
  const failedHosts = Object.entries(last?.recap ?? {}).filter(([, counts]) => (counts.failed ?? 0) > 0 || (counts.unreachable ?? 0) > 0).map(([name]) => name);
  const servers = await Promise.all(
    failedHosts.map(async (name) => `--- server ${name}\n${await serverDiagnostics(fleet.host(name).server.container).catch((e: Error) => `(no diagnostics: ${e.message})`)}`),
  );
  return fleet.masked(`${error.message}\n--- last ansible-playbook output\n${last ? `${last.stdout.slice(-6000)}\n${last.stderr.slice(-2000)}` : '(none)'}\n${servers.join('\n')}`);
});

async function play(playbook: string, args: string[] = []): Promise<PlayRun> {
  const run = await fleet.play(playbook, args);
  plays.push(run);
  return run;
}

function expectRecap(run: PlayRun, expected: Record<string, 'changed' | 'ok'>): void {
  expect(Object.keys(run.recap).sort(), run.stdout.slice(-3000)).toEqual(Object.keys(expected).sort());
  for (const [host, want] of Object.entries(expected)) {
    const r = run.recap[host]!;
    expect(r.failed, `${host} failed: ${playFailure(run)}\n${run.stdout.slice(-3000)}`).toBe(0);
    expect(r.unreachable).toBe(0);
    if (want === 'changed') expect(r.changed, `${host} should report changed`).toBeGreaterThan(0);
    else expect(r.changed, `${host} should report changed=0`).toBe(0);
  }
}

/** doctor.yml's table: release, OpenClaw, Node, QMD and lossless-claw versions, result and failed checks of every server. */
async function versionTable(label: string): Promise<DoctorRow[]> {
  const run = await play('doctor.yml');
  expect(run.exitCode, `${playFailure(run)}\n${run.stdout.slice(-4000)}`).toBe(0);
  expect(run.stdout).toMatch(new RegExp(`"${DOCTOR_TABLE_HEAD.slice(0, -1).map((h) => `${h}\\s+\\| `).join('')}${DOCTOR_TABLE_HEAD.at(-1)}"`));
  const rows = parseDoctorTable(run.stdout);
  expect(rows.map((r) => r.host), run.stdout.slice(-3000)).toEqual(HOSTS);
  (report.versionTables as Record<string, DoctorRow[]>)[label] = rows;
  log(`version table (${label}): ${rows.map((r) => `${r.host} ${r.release} OpenClaw ${r.openclaw} Node ${r.node} QMD ${r.qmd} lossless-claw ${r.losslessClaw} ${r.result}${r.failed === '-' ? '' : ` (${r.failed})`}`).join('; ')}`);
  return rows;
}

/** What a server's gateway and install log look like now: an untouched server keeps both. */
async function footprintOf(host: string): Promise<{ pid: string; installLog: string; openclaw?: string; backups: string }> {
  const c = fleet.host(host).server.container;
  return {
    pid: (await c.ok(GATEWAY_PID)).trim(),
    installLog: (await c.ok('stat -c %s:%Y /var/log/service-deploy/install.log')).trim(),
    openclaw: await installedOpenclaw(c),
    backups: (await c.ok('ls /var/backups/service-deploy 2>/dev/null | grep -c pre-upgrade || true')).trim(),
  };
}

const modelOf = async (host: string) => JSON.parse(fs.readFileSync(fleet.host(host).server.container.hostPath('/root/.openclaw/openclaw.json'), 'utf8')).agents.defaults.model.primary as string;

beforeAll(async () => {
  log(`setting up: ${HOSTS.length} ${SUITE} servers at once, each in its own network, reachable over ssh`);
  await fleet.open();
  log(`fleet booted in ${seconds(fleet.timings.bootMs!)}: ${fleet.hosts.map((h) => `${h.name} ${h.server.net!.address}`).join(', ')}`);
}, 20 * 60_000);

afterAll(async () => {
  report.totalMs = Date.now() - started;
  report.timings = { ...fleet.timings, ...timings };
  report.notes = fleet.notes;
  Object.assign(report, failure());
  await fleet.close();
  cleanupTempDirs();
  fs.mkdirSync(E2E_CACHE, { recursive: true });
  fs.writeFileSync(path.join(E2E_CACHE, 'last-run-fleet.json'), JSON.stringify(report, null, 2) + '\n');
}, 5 * 60_000);

describe.sequential(`a fleet of ${HOSTS.length} servers driven by Ansible (${SUITE})`, () => {
  step('0. examples/ansible is clean under ansible-lint (production profile)', 5 * 60_000, async () => {
    const r = await execa('ansible-lint', ['--offline', '--nocolor', '--profile', 'production'], { cwd: EXAMPLE, env: { ...process.env, NO_COLOR: '1' }, reject: false, timeout: 4 * 60_000 });
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`).toMatch(/Passed with production profile: 0 failure\(s\), 0 warning\(s\)/);
  });

  step('1. site.yml installs all three at once: changed on each, every server healthy with its own customer', 25 * 60_000, async () => {
    const run = await play('site.yml');
    expect(run.exitCode, `${playFailure(run)}\n${run.stdout.slice(-4000)}`).toBe(0);
    expectRecap(run, { 'fleet-1': 'changed', 'fleet-2': 'changed', 'fleet-3': 'changed' });
    timings.siteFreshMs = run.ms;
    for (const h of fleet.hosts) {
      const c = h.server.container;
      expect(await c.ok(`curl -fsS -o /dev/null -w '%{http_code}' http://127.0.0.1:18789/healthz`), h.name).toBe('200');
      expect(JSON.parse(fs.readFileSync(c.hostPath('/var/lib/service-deploy/answers.json'), 'utf8')).customerName).toBe(h.customer);
      // Its own MCP token reached its own MCP server.
      expect(h.mcp.initializes.some((i) => i.authorized), h.name).toBe(true);
      // The answers file the role wrote is gone again.
      expect((await c.ok('ls -d /tmp/service-deploy-* /root/.ansible/tmp/service-deploy-* 2>/dev/null || true')).trim(), h.name).toBe('');
    }
    // What the recap says comes from our JSON: the role printed the deployment's changes.
    expect(run.stdout).toMatch(/Report what changed/);
  });

  step('2. site.yml again: changed=0 on all three', 10 * 60_000, async () => {
    const pids = await Promise.all(fleet.hosts.map((h) => h.server.container.ok('XDG_RUNTIME_DIR=/run/user/0 systemctl --user show -p MainPID --value openclaw-gateway.service')));
    const run = await play('site.yml');
    expect(run.exitCode, `${playFailure(run)}\n${run.stdout.slice(-4000)}`).toBe(0);
    expectRecap(run, { 'fleet-1': 'ok', 'fleet-2': 'ok', 'fleet-3': 'ok' });
    timings.siteRerunMs = run.ms;
    const after = await Promise.all(fleet.hosts.map((h) => h.server.container.ok('XDG_RUNTIME_DIR=/run/user/0 systemctl --user show -p MainPID --value openclaw-gateway.service')));
    expect(after).toEqual(pids);
  });

  step(`3. a new model in fleet-1's host_vars: --check reports that change on fleet-1 only, writing nothing; the run changes fleet-1 only`, 10 * 60_000, async () => {
    const before = await modelOf('fleet-1');
    fleet.setHostVar('fleet-1', 'service_deploy_model', NEW_MODEL);
    const check = await play('site.yml', ['--check']);
    expect(check.exitCode, `${playFailure(check)}\n${check.stdout.slice(-4000)}`).toBe(0);
    expectRecap(check, { 'fleet-1': 'changed', 'fleet-2': 'ok', 'fleet-3': 'ok' });
    // The planned change, per host, from our --check --json.
    const fleet1 = check.stdout.slice(check.stdout.indexOf('TASK [service_deploy : Report what changed'));
    expect(fleet1).toMatch(/ok: \[fleet-1\] => \{[^}]*openclaw\.json/s);
    expect(await modelOf('fleet-1')).toBe(before);
    timings.siteCheckMs = check.ms;

    const run = await play('site.yml');
    expect(run.exitCode, `${playFailure(run)}\n${run.stdout.slice(-4000)}`).toBe(0);
    expectRecap(run, { 'fleet-1': 'changed', 'fleet-2': 'ok', 'fleet-3': 'ok' });
    expect(await modelOf('fleet-1')).toMatch(new RegExp(`/${NEW_MODEL}$`));
    expect(await modelOf('fleet-2')).toBe(before);
    timings.modelChangeMs = run.ms;
  });

  step('4. doctor.yml prints one table: three healthy rows, each with its release and the pinned OpenClaw, Node, QMD and lossless-claw', 10 * 60_000, async () => {
    const t = Date.now();
    const rows = await versionTable('installed');
    expect(rows).toEqual(HOSTS.map((host) => ({ host, release: RELEASE, openclaw: PINNED_OPENCLAW, ...ON_THE_PIN, result: 'healthy', failed: '-', fixes: '-' })));
    timings.doctorMs = Date.now() - t;
  });

  // Issue 29: the rolling update stops at a broken canary. The servers first run the
  // previous OpenClaw release (2026.9.5 from the registry, as an earlier service-deploy
  // left them); the broken release offers the pinned version as a build whose gateway
  // exits at start, through the package source the role passes to the install
  // (SERVICE_OPENCLAW_SOURCE, a mirror's override); the good release is the registry's.
  let brokenBuild = '';
  step(`5. the previous release: all three run OpenClaw ${EARLIER_OPENCLAW}, each behind the pin ${PINNED_OPENCLAW}`, 20 * 60_000, async () => {
    const t = Date.now();
    const first = fleet.host('fleet-1').server.container;
    brokenBuild = await packBrokenBuildOn(first);
    await putEarlierRelease(first);
    // The same package folder on the others (a global package is its folder, dependencies
    // inside): what npm made on fleet-1, copied instead of three npm runs on two cores.
    await Promise.all(
      fleet.hosts.slice(1).map(async (h) => {
        const c = h.server.container;
        fs.mkdirSync(path.dirname(c.hostPath(brokenBuild)), { recursive: true });
        fs.copyFileSync(first.hostPath(brokenBuild), c.hostPath(brokenBuild));
        await c.ok(`${GATEWAY_CTL} stop openclaw-gateway.service`);
        await execa('rm', ['-rf', c.hostPath(OPENCLAW_PACKAGE)]);
        await execa('cp', ['-a', first.hostPath(OPENCLAW_PACKAGE), c.hostPath(OPENCLAW_PACKAGE)]);
        await c.ok(`set -e; ${EARLIER_LAYOUT}`);
        // The earlier release refuses the pinned release's newer database schemas: fresh state.
        await c.ok(`rm -rf /root/.openclaw/state /root/.openclaw/agents; ${GATEWAY_CTL} start openclaw-gateway.service`);
        expect(await installedOpenclaw(c), h.name).toBe(EARLIER_OPENCLAW);
        await healthzOn(c);
      }),
    );
    timings.previousReleaseMs = Date.now() - t;
  });

  step(`6. rolling.yml with a broken release (its gateway exits at start): the canary fleet-1 tries it, rolls itself back and ends healthy on ${EARLIER_OPENCLAW}; the play stops there, fleet-2 and fleet-3 untouched; the table shows all three on ${EARLIER_OPENCLAW}`, 25 * 60_000, async () => {
    for (const host of HOSTS) fleet.setEnvironment(host, { SERVICE_OPENCLAW_SOURCE: brokenBuild });
    const before = Object.fromEntries(await Promise.all(HOSTS.map(async (h) => [h, await footprintOf(h)] as const)));
    const run = await play('rolling.yml');
    timings.rollingBrokenMs = run.ms;
    expect(run.exitCode, run.stdout.slice(-4000)).not.toBe(0);
    // Only the first batch ran: the later hosts are not in the recap at all.
    expect(Object.keys(run.recap), run.stdout.slice(-3000)).toEqual(['fleet-1']);
    expect(run.recap['fleet-1']).toMatchObject({ failed: 1, rescued: 1, unreachable: 0 });
    // The play says what the canary runs now.
    const said = /"msg": "(fleet-1 runs OpenClaw [^"]*)"/.exec(run.stdout)?.[1];
    expect(said, run.stdout.slice(-4000)).toMatch(new RegExp(`^fleet-1 runs OpenClaw ${EARLIER_OPENCLAW.replaceAll('.', '\\.')}: the upgrade to ${PINNED_OPENCLAW.replaceAll('.', '\\.')} failed at (start|health) and rolled back by itself`));
    report.brokenCanary = said;
    const canary = fleet.host('fleet-1').server.container;
    expect(await installedOpenclaw(canary)).toBe(EARLIER_OPENCLAW);
    expect(await canary.ok('grep -c "e2e broken build" /opt/service-deploy/node/lib/node_modules/openclaw/openclaw.mjs || true')).toBe('0\n');
    await healthzOn(canary);
    const after1 = await footprintOf('fleet-1');
    expect(after1.pid).not.toBe(before['fleet-1']!.pid);
    expect(Number(after1.backups)).toBe(Number(before['fleet-1']!.backups) + 1);
    for (const host of ['fleet-2', 'fleet-3']) expect(await footprintOf(host), `${host} was touched`).toEqual(before[host]);
    // Every server behind the pin, and doctor says so.
    const rows = await versionTable('broken release');
    expect(rows.map((r) => [r.host, r.release, r.openclaw, r.result])).toEqual(HOSTS.map((h) => [h, RELEASE, `${EARLIER_OPENCLAW} (pin ${PINNED_OPENCLAW})`, 'FAILING']));
    // Only OpenClaw was left behind: the other components stay on their pins.
    for (const row of rows) expect({ node: row.node, qmd: row.qmd, losslessClaw: row.losslessClaw }, row.host).toEqual(ON_THE_PIN);
    for (const row of rows) expect(row.failed.split(', '), row.host).toContain('agent-runtime');
  });

  step(`7. rolling.yml with the good release: fleet-1 first, then fleet-2 and fleet-3; every server upgraded to ${PINNED_OPENCLAW} and healthy; the table shows it`, 30 * 60_000, async () => {
    for (const host of HOSTS) fleet.setEnvironment(host);
    const run = await play('rolling.yml');
    timings.rollingGoodMs = run.ms;
    expect(run.exitCode, `${playFailure(run)}\n${run.stdout.slice(-4000)}`).toBe(0);
    expectRecap(run, { 'fleet-1': 'changed', 'fleet-2': 'changed', 'fleet-3': 'changed' });
    // Two batches (1, then the rest: at most 5), in that order.
    const plays = run.stdout.split(/^PLAY \[/m).slice(1).filter((p) => !p.startsWith('RECAP'));
    const installed = plays.map((p) => [...p.matchAll(/^changed: \[(fleet-\d)\]/gm)].map((m) => m[1]).filter((h, i, all) => all.indexOf(h) === i).sort());
    expect(installed, run.stdout.slice(-3000)).toEqual([['fleet-1'], ['fleet-2', 'fleet-3']]);
    for (const host of HOSTS) {
      expect(run.stdout).toContain(`upgraded OpenClaw ${EARLIER_OPENCLAW} -> ${PINNED_OPENCLAW}: ${host} runs OpenClaw ${PINNED_OPENCLAW}`);
      const c = fleet.host(host).server.container;
      expect(await installedOpenclaw(c), host).toBe(PINNED_OPENCLAW);
      await healthzOn(c);
    }
    const rows = await versionTable('good release');
    expect(rows).toEqual(HOSTS.map((host) => ({ host, release: RELEASE, openclaw: PINNED_OPENCLAW, ...ON_THE_PIN, result: 'healthy', failed: '-', fixes: '-' })));
  });

  step('8. reset.yml asks first; confirmed, it resets fleet-3 only and its backup arrives on the control node (0600)', 10 * 60_000, async () => {
    const refused = await play('reset.yml', ['--limit', 'fleet-3', '-e', 'service_deploy_confirm_reset=no']);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stdout).toContain('not confirmed; nothing was changed');
    expect(fs.existsSync(fleet.host('fleet-3').server.container.hostPath('/root/.openclaw/openclaw.json'))).toBe(true);

    const run = await play('reset.yml', ['--limit', 'fleet-3', '-e', 'service_deploy_confirm_reset=yes']);
    expect(run.exitCode, `${playFailure(run)}\n${run.stdout.slice(-4000)}`).toBe(0);
    expectRecap(run, { 'fleet-3': 'changed' });
    timings.resetMs = run.ms;
    const dir = path.join(fleet.dir, 'backups', 'fleet-3');
    const files = fs.readdirSync(dir);
    expect(files.length).toBe(1);
    expect(files[0]).toMatch(/^openclaw-backup-\d{8}-\d{6}\.tar\.gz$/);
    const archive = path.join(dir, files[0]!);
    expect(fs.statSync(archive).mode & 0o777).toBe(0o600);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    const entries = (await execa('tar', ['-tzf', archive])).stdout.split('\n');
    expect(entries.some((e) => /(^|\/)root\/\.openclaw\/openclaw\.json$/.test(e))).toBe(true);
    expect(fs.existsSync(fleet.host('fleet-3').server.container.hostPath('/root/.openclaw'))).toBe(false);
    for (const h of ['fleet-1', 'fleet-2']) expect(fs.existsSync(fleet.host(h).server.container.hostPath('/root/.openclaw/openclaw.json')), h).toBe(true);
  });

  step('9. no secret in any process argument, the ansible output, the servers\' logs; the Vault files are encrypted', 5 * 60_000, async () => {
    fleet.argv.stop();
    expect([...fleet.argv.leaks.keys()], `leaks seen in ${fleet.argv.samples} samples`).toEqual([]);
    const shown = Object.entries(fleet.secrets).filter(([, v]) => plays.some((p) => `${p.stdout}${p.stderr}`.includes(v))).map(([k]) => k);
    expect(shown, 'secrets in the ansible-playbook output').toEqual([]);
    for (const h of fleet.hosts) expect(await filesWithSecrets(h.server.container, fleet.secrets, ['/var/log/service-deploy/install.log', '/var/log/auth.log', '/var/log/syslog']), h.name).toEqual([]);
    for (const f of ['group_vars/all/vault.yml', ...HOSTS.map((h) => `host_vars/${h}/vault.yml`)]) expect(fs.readFileSync(path.join(fleet.dir, f), 'utf8').startsWith('$ANSIBLE_VAULT;'), f).toBe(true);
    report.secretScan = { argvSamples: fleet.argv.samples, processes: fleet.argv.processesSeen, plays: plays.length };
  });
});
