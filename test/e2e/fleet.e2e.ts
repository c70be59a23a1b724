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
import { EXAMPLE, Fleet, playFailure, type PlayRun } from './fleet.js';
import { log, seconds } from './harness.js';
import { filesWithSecrets } from './secrets.js';

const SUITE = (process.env.E2E_FLEET_SUITE ?? 'bookworm') as Suite;
const HOSTS = ['fleet-1', 'fleet-2', 'fleet-3'];
const NEW_MODEL = 'e2e-model-2';
const fleet = new Fleet(SUITE, HOSTS.length);
const report: Record<string, unknown> = { startedAt: new Date().toISOString(), suite: SUITE };
const timings: Record<string, number> = {};
const plays: PlayRun[] = [];
const started = Date.now();

const { step, failure } = scenarioSteps(async (error) => {
  const last = plays.at(-1);
  return fleet.masked(`${error.message}\n--- last ansible-playbook output\n${last ? `${last.stdout.slice(-6000)}\n${last.stderr.slice(-2000)}` : '(none)'}`);
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

  step('4. doctor.yml prints one table with three healthy rows', 10 * 60_000, async () => {
    const run = await play('doctor.yml');
    expect(run.exitCode, `${playFailure(run)}\n${run.stdout.slice(-4000)}`).toBe(0);
    const rows = run.stdout.split('\n').map((l) => /"(fleet-\d)\s+\| (\S+)\s+\| ([^|]+)\|/.exec(l)).filter((m): m is RegExpExecArray => Boolean(m));
    expect(rows.map((m) => [m[1], m[2], m[3]!.trim()]), run.stdout.slice(-3000)).toEqual(HOSTS.map((h) => [h, 'healthy', '-']));
    expect(run.stdout).toMatch(/"host\s+\| result\s+\| failed checks\s+\| fixes"/);
    timings.doctorMs = run.ms;
    report.doctorTable = rows.map((m) => m[0]);
  });

  step('5. reset.yml asks first; confirmed, it resets fleet-3 only and its backup arrives on the control node (0600)', 10 * 60_000, async () => {
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

  step('6. no secret in any process argument, the ansible output, the servers\' logs; the Vault files are encrypted', 5 * 60_000, async () => {
    fleet.argv.stop();
    expect([...fleet.argv.leaks.keys()], `leaks seen in ${fleet.argv.samples} samples`).toEqual([]);
    const shown = Object.entries(fleet.secrets).filter(([, v]) => plays.some((p) => `${p.stdout}${p.stderr}`.includes(v))).map(([k]) => k);
    expect(shown, 'secrets in the ansible-playbook output').toEqual([]);
    for (const h of fleet.hosts) expect(await filesWithSecrets(h.server.container, fleet.secrets, ['/var/log/service-deploy/install.log', '/var/log/auth.log', '/var/log/syslog']), h.name).toEqual([]);
    for (const f of ['group_vars/all/vault.yml', ...HOSTS.map((h) => `host_vars/${h}/vault.yml`)]) expect(fs.readFileSync(path.join(fleet.dir, f), 'utf8').startsWith('$ANSIBLE_VAULT;'), f).toBe(true);
    report.secretScan = { argvSamples: fleet.argv.samples, processes: fleet.argv.processesSeen, plays: plays.length };
  });
});
