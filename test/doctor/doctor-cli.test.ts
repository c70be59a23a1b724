import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHECKS } from '../../src/doctor/index.js';
import { LAYOUT } from '../../src/layout.js';
import { CHANNEL, makeHealthySandbox, type OpsSandbox } from '../helpers/ops-sandbox.js';
import { FIRST_INSTALL, SECRETS, makeSandbox } from '../helpers/sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';

let sb: OpsSandbox;
beforeEach(async () => {
  sb = await makeHealthySandbox();
});
afterEach(async () => {
  await sb.close();
});

const config = () => JSON.parse(sb.read(LAYOUT.runtimeConfig)!);
const setConfig = (c: unknown) => sb.write(LAYOUT.runtimeConfig, JSON.stringify(c, null, 2), 0o600);

describe('service-deploy doctor (binary, sandbox)', () => {
  it('healthy: one line per check in declared order, a summary, exit 0', async () => {
    const run = await sb.run(['doctor']);
    expect(run.exitCode, String(run.stdout)).toBe(0);
    const lines = String(run.stdout).trim().split('\n');
    expect(lines.slice(0, CHECKS.length).map((l) => l.split(/\s+/)[1])).toEqual(CHECKS.map((c) => c.id));
    // Every check passes but `backups`, which skips: no backup schedule was set (it is optional).
    expect(lines.slice(0, CHECKS.length).filter((l) => !l.startsWith('pass')).map((l) => l.split(/\s+/).slice(0, 2).join(' '))).toEqual(['skip backups']);
    expect(lines.at(-1)).toBe(`summary: ${CHECKS.length - 1} pass, 0 warn, 0 fail, 1 skip`);
  });

  it('--json: the documented shape (schemaVersion 1), stable key order', async () => {
    const run = await sb.run(['doctor', '--json']);
    const out = jsonOutput('doctor', run.stdout);
    expect(Object.keys(out)).toEqual(['schemaVersion', 'ok', 'summary', 'checks', 'deployed', 'versions']);
    expect(out.schemaVersion).toBe(1);
    expect(out.summary).toEqual({ pass: CHECKS.length - 1, warn: 0, fail: 0, skip: 1, crashed: 0 });
    for (const c of out.checks) {
      expect(Object.keys(c)).toEqual(['id', 'title', 'status', 'message', 'fixable', 'durationMs']);
    }
  });

  it('--fix turns every fixable failure into a pass, and exit 0', async () => {
    // Break everything that --fix can repair, at once.
    const c = config();
    c.models.providers.openai = { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-proj-zzzzzzzzzzzzzzzzzz' };
    c.gateway.token = c.gateway.auth.token;
    delete c.gateway.auth;
    c.gateway.bind = 'lan';
    setConfig(c);
    fs.rmSync(path.join(sb.root, LAYOUT.channelDropIn));
    fs.chmodSync(path.join(sb.root, LAYOUT.channelEnv), 0o644);
    sb.write(LAYOUT.nginxSite, sb.read(LAYOUT.nginxSite)!.replace('limit_conn service_cn 3;', 'limit_conn zone=service_cn 3;'), 0o600);
    fs.rmSync(path.join(sb.root, LAYOUT.guardCron));
    fs.rmSync(path.join(sb.state, 'nft-table')); // the connection limits flushed from the kernel

    const before = await sb.run(['doctor', '--json']);
    expect(before.exitCode).toBe(1);
    const failed = jsonOutput('doctor', before.stdout).checks.filter((r: { status: string }) => r.status === 'fail');
    expect(failed.map((r: { id: string }) => r.id).sort()).toEqual(
      // secrets: the direct vendor provider's key sits in openclaw.json in plain text.
      ['channel-drop-in', 'channel-env', 'channel-limits', 'config-valid', 'files', 'gateway-auth', 'gateway-bind', 'guard-cron', 'nginx', 'nginx-limit-conn', 'providers', 'secrets'].sort(),
    );
    expect(failed.filter((r: { fixable: boolean }) => !r.fixable).map((r: { id: string }) => r.id)).toEqual(['config-valid']);

    sb.clearCalls();
    const fixed = await sb.run(['doctor', '--fix', '--json']);
    const out = jsonOutput('doctor', fixed.stdout);
    // The files action writes the nginx site (the manifest knows it changed) and restarts nginx; nginx-site then has nothing left to do.
    expect(out.fixes.map((f: { id: string; ok: boolean }) => [f.id, f.ok])).toEqual([['cron', true], ['guard', true], ['files', true], ['channel-limits', true]]);
    expect(out.checks.filter((r: { id: string; status: string }) => r.status !== 'pass' && !(r.id === 'backups' && r.status === 'skip')).map((r: { id: string; message: string }) => `${r.id}: ${r.message}`)).toEqual([]);
    expect(fixed.exitCode).toBe(0);
    expect(out.before.filter((r: { status: string }) => r.status === 'fail')).toHaveLength(12);
    expect(sb.calls('nft').map((call) => call.args.join(' '))).toContain(`-f ${path.join(sb.root, LAYOUT.channelFirewallRules)}`);
    // One gateway restart (by the guard), one nginx restart.
    const restarts = sb.calls('systemctl').filter((call) => call.args.includes('restart')).map((call) => call.args.join(' '));
    expect(restarts).toEqual([`--user restart ${LAYOUT.gatewayUnit}`, 'restart nginx']);
    expect(sb.read(LAYOUT.nginxSite)).toContain('limit_conn service_cn 3;');
    expect(sb.stat(LAYOUT.nginxSite)!.mode & 0o777).toBe(0o600);
    for (const secret of [SECRETS.apiKey, CHANNEL.token, CHANNEL.knock, 'sk-proj-zzzzzzzzzzzzzzzzzz']) expect(String(fixed.stdout)).not.toContain(secret);
  });

  it('--fix: a drop-in that is on disk but not loaded gets daemon-reload + restart, and then passes', async () => {
    fs.rmSync(path.join(sb.root, LAYOUT.channelDropIn));
    await sb.systemctl('--user', 'daemon-reload');
    await sb.systemctl('--user', 'restart', LAYOUT.gatewayUnit);
    sb.write(LAYOUT.channelDropIn, (await import('../../src/steps/channel.js')).channelDropInContent());
    const broken = await sb.run(['doctor', 'channel-drop-in']);
    expect(broken.exitCode).toBe(1);
    expect(broken.stdout).toMatch(/every chat call fails with 503 "misconfigured"/);
    expect(broken.stdout).toMatch(/\$ XDG_RUNTIME_DIR=\/run\/user\/0 systemctl --user daemon-reload/);
    sb.clearCalls();
    const fixed = await sb.run(['doctor', 'channel-drop-in', '--fix']);
    expect(fixed.exitCode, String(fixed.stdout)).toBe(0);
    const calls = sb.calls('systemctl').map((c) => c.args.join(' ')).filter((c) => !/is-active|is-enabled|show/.test(c));
    expect(calls).toEqual(['--user daemon-reload', `--user restart ${LAYOUT.gatewayUnit}`]);
    expect(fs.readFileSync(`/proc/${sb.gatewayPid()}/environ`, 'utf8')).toContain('SERVICE_TS_HOSTNAME=');
  });

  it('answers.json replaced by a symbolic link: failing checks name it with a command, JSON printed, exit 1 (not a refusal)', async () => {
    const elsewhere = path.join(sb.root, 'tmp/answers-elsewhere.json');
    fs.mkdirSync(path.dirname(elsewhere), { recursive: true });
    fs.renameSync(path.join(sb.root, LAYOUT.answersFile), elsewhere);
    fs.symlinkSync(elsewhere, path.join(sb.root, LAYOUT.answersFile));
    const run = await sb.run(['doctor', '--json']);
    expect(run.exitCode, String(run.stderr)).toBe(1);
    const out = JSON.parse(String(run.stdout));
    expect(out.summary.crashed).toBe(0);
    const named = out.checks.filter((c: { status: string; message: string }) => c.status !== 'skip' && c.message.includes(`${LAYOUT.answersFile} is not a regular file`));
    expect(named.map((c: { id: string }) => c.id)).toContain('gateway-auth');
    for (const c of named) expect([c.status, c.commands]).toEqual(['fail', [`mv ${LAYOUT.answersFile} ${LAYOUT.answersFile}.broken`, 'service-deploy install']]);
  });

  it('healthy: each command once, one systemctl per scope, no firewall tool of a disabled firewall; named checks run only their own', async () => {
    sb.clearCalls();
    const run = await sb.run(['doctor']);
    expect(run.exitCode, String(run.stdout)).toBe(0);
    const all = (name: string) => sb.calls(name).map((c) => c.args.join(' '));
    // Each slow command once (they are started early and shared, never run twice).
    const openclaw = all('openclaw').map((a) => a.split(' ').slice(0, 2).join(' '));
    expect(openclaw.sort()).toEqual(['config validate', 'devices list', 'secrets audit']);
    for (const name of ['systemd-analyze', 'journalctl', 'nginx', 'dpkg-query', 'ss', 'nft']) expect(all(name), name).toHaveLength(1);
    // One `systemctl show` per scope answers every unit question.
    expect(all('systemctl').filter((a) => a.startsWith('show'))).toHaveLength(1);
    expect(all('systemctl').filter((a) => a.startsWith('--user show'))).toHaveLength(1);
    expect(all('systemctl').filter((a) => !/^(--user )?show /.test(a))).toEqual([]);
    // No ufw.conf enabling ufw, firewalld.service not active: neither tool is run.
    expect([...all('ufw'), ...all('firewall-cmd')]).toEqual([]);

    // Named checks start only their own commands.
    sb.clearCalls();
    const named = await sb.run(['doctor', 'os', 'config-valid']);
    expect(named.exitCode, String(named.stdout)).toBe(0);
    expect(all('openclaw').map((a) => a.split(' ').slice(0, 2).join(' '))).toEqual(['config validate']);
    for (const name of ['systemd-analyze', 'journalctl', 'nginx', 'dpkg-query', 'systemctl']) expect(all(name), name).toEqual([]);
  });

  it('--fix re-checks with fresh answers: the slow commands run again after the fixes', async () => {
    fs.chmodSync(path.join(sb.root, LAYOUT.channelEnv), 0o644);
    sb.clearCalls();
    const run = await sb.run(['doctor', '--fix', '--json']);
    expect(run.exitCode, String(run.stdout)).toBe(0);
    const openclaw = sb.calls('openclaw').map((c) => c.args.slice(0, 2).join(' '));
    expect(openclaw.filter((a) => a === 'secrets audit')).toHaveLength(2);
    expect(openclaw.filter((a) => a === 'devices list')).toHaveLength(2);
    expect(sb.calls('systemd-analyze')).toHaveLength(2);
  });

  it('--fix with nothing fixable says so and changes nothing', async () => {
    const run = await sb.run(['doctor', '--fix']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^nothing to fix automatically/);
    expect(sb.calls('systemctl').filter((c) => c.args.includes('restart'))).toEqual([]);
  });

  it('naming checks runs only those; an unknown name is a usage error (exit 2) listing the checks', async () => {
    const run = await sb.run(['doctor', 'os', 'disk', '--json']);
    expect(jsonOutput('doctor', run.stdout).checks.map((c: { id: string }) => c.id)).toEqual(['os', 'disk']);
    const bad = await sb.run(['doctor', 'nope']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/unknown check nope[\s\S]*os, node-runtime/);
  });

  it('--list-checks prints the registry in order', async () => {
    const run = await sb.run(['doctor', '--list-checks', '--json']);
    expect(jsonOutput('doctor-checks', run.stdout).checks.map((c: { id: string }) => c.id)).toEqual(CHECKS.map((c) => c.id));
  });
});

describe('doctor after a real install (the same checks serve install and doctor)', () => {
  it('passes everything the install set up; channel checks skip; only runtime state is missing', async () => {
    const plain = await makeSandbox();
    try {
      const install = await plain.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
      expect(install.exitCode, String(install.stderr)).toBe(0);
      const { execa } = await import('execa');
      const run = await execa(path.join(process.cwd(), 'dist/service-deploy'), ['doctor', '--json'], { env: plain.env(), extendEnv: false, reject: false });
      const out = jsonOutput('doctor', run.stdout);
      const notPass = Object.fromEntries(out.checks.filter((c: { status: string }) => c.status !== 'pass').map((c: { id: string; status: string }) => [c.id, c.status]));
      // The sandbox has no listeners (ss-output) and the stand-in gateway has no real pid; nothing else may differ.
      expect(notPass).toEqual({ backups: 'skip', 'channel-env': 'skip', 'channel-drop-in': 'skip', nginx: 'skip', 'nginx-limit-conn': 'skip', 'tls-cert': 'skip', 'channel-limits': 'skip', 'channel-port': 'skip' });
    } finally {
      await plain.close();
    }
  });
});
