import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import { LAYOUT } from '../../src/layout.js';
import { parseExposure, unitDirectives } from '../../src/steps/gateway-service.js';
import { QMD_MEMORY, qmdEntry, qmdMcpUnitFile } from '../../src/steps/memory-service.js';
import { runBinary } from '../helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * QMD as one resident MCP server (issue 26 item 1): the install writes its user unit,
 * starts it beside the gateway and waits for it to answer; it restarts only when its unit
 * or the QMD package changed; reset and uninstall take it away. In the sandbox the unit
 * "runs" in the systemctl stand-in and answers at SERVICE_QMD_HEALTH_URL (a loopback
 * stand-in); the real QMD serves the real gateway in the e2e (test/e2e/memory.ts).
 */
const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

const components = loadComponents({});
const unit = qmdMcpUnitFile(components);
const systemctl = (sb: Sandbox) => sb.calls('systemctl').map((c) => c.args.join(' '));
const stepOf = (out: unknown, id: string) => JSON.parse(String(out)).steps.find((s: { id: string }) => s.id === id);
const startCount = (sb: Sandbox, name: string) => (fs.existsSync(path.join(sb.state, `user-${name}.starts`)) ? Number(fs.readFileSync(path.join(sb.state, `user-${name}.starts`), 'utf8')) : 0);

async function installed(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const first = await sb.install([...FIRST_INSTALL.args, '--json'], FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  expect(stepOf(first.stdout, 'memory-service').status).toBe('changed');
  return sb;
}

describe('the QMD MCP service unit', () => {
  it('runs QMD\'s entry point with the pinned Node, on loopback, with a memory bound and restart policy', () => {
    const d = unitDirectives(unit.content);
    expect(d.get('Service.ExecStart')).toEqual([`/opt/service-deploy/node/bin/node ${qmdEntry(components)} mcp --http --host 127.0.0.1 --port 18788`]);
    expect(qmdEntry(components)).toBe('/opt/service-deploy/qmd/node_modules/@tobilu/qmd/dist/cli/qmd.js');
    expect(d.get('Service.Restart')).toEqual(['always']);
    expect(d.get('Service.MemoryHigh')).toEqual([QMD_MEMORY.high]);
    expect(d.get('Service.MemoryMax')).toEqual([QMD_MEMORY.max]);
    expect(d.get('Unit.Before')).toEqual([LAYOUT.gatewayUnit]);
    expect(d.get('Install.WantedBy')).toEqual(['default.target']);
    // Home folders empty but its index (read-write) and collection config (read-only); the
    // deployment's secrets, nginx, backups, the mesh, logs and the managers are out of reach.
    expect(d.get('Service.ProtectHome')).toEqual(['tmpfs']);
    expect(d.get('Service.BindPaths')).toEqual([`-${LAYOUT.qmdCacheDir}`]);
    expect(d.get('Service.BindReadOnlyPaths')).toEqual([`-${LAYOUT.qmdConfigDir}`]);
    expect(d.get('Service.ReadWritePaths')).toBeUndefined();
    const hidden = (d.get('Service.InaccessiblePaths') ?? []).flatMap((l) => l.split(/\s+/));
    for (const p of [`-${LAYOUT.stateDir}`, '-/etc/service-deploy', '-/etc/nginx', '-/var/backups', '-/var/lib/tailscale', '-/var/log', `-${LAYOUT.runDir}`, '-/etc/shadow', '-/etc/ssh', '-/etc/ssl/private', '-%t/bus', '-%t/systemd', '-/run/dbus', '-/run/systemd/private']) expect(hidden).toContain(p);
    expect(d.get('Service.ExecStartPre')).toEqual([`+/bin/mkdir -p -m 0700 ${LAYOUT.runDir}`]);
    expect(d.get('Service.CapabilityBoundingSet')).toEqual(['']);
    expect(d.get('Service.UMask')).toEqual(['0077']);
  });

  const analyze = fs.existsSync('/usr/bin/systemd-analyze') ? it : it.skip;
  analyze('systemd-analyze accepts it and rates its sandbox at most 3.5 (the gateway\'s target is 4.5)', async () => {
    const runtime = tempDir('xdg-');
    fs.chmodSync(runtime, 0o700);
    const file = path.join(runtime, LAYOUT.qmdMcpService);
    fs.writeFileSync(file, unit.content);
    const r = await execa('systemd-analyze', ['security', '--user', '--offline=yes', '--no-pager', file], { env: { XDG_RUNTIME_DIR: runtime }, reject: false });
    expect(r.stderr, r.stderr).not.toMatch(/Unknown|bad unit file|Ignoring/i);
    const exposure = parseExposure(r.stdout);
    expect(exposure, `${r.stdout}\n${r.stderr}`).toBeDefined();
    expect(exposure!).toBeLessThanOrEqual(3.5);
    console.log(`systemd-analyze security (offline, user unit) qmd-mcp.service: ${exposure}`);
  });
});

describe('the memory-service step (sandbox)', () => {
  it('writes the unit, enables and starts it after the index exists, and waits for it to answer; a re-run touches nothing', async () => {
    const sb = await installed();
    expect(sb.read(LAYOUT.qmdMcpServiceFile.slice(1))).toBe(unit.content);
    const calls = systemctl(sb);
    expect(calls).toContain(`--user enable ${LAYOUT.qmdMcpService}`);
    expect(calls).toContain(`--user restart ${LAYOUT.qmdMcpService}`);
    // The collection is made (memory-index) before the server is started.
    const order = sb.calls().map((c) => `${c.command} ${c.args.join(' ')}`);
    expect(order.findIndex((c) => c.startsWith('qmd collection add'))).toBeLessThan(order.indexOf(`systemctl --user restart ${LAYOUT.qmdMcpService}`));
    expect(startCount(sb, LAYOUT.qmdMcpService)).toBe(1);

    sb.clearCalls();
    const again = await sb.install(['--non-interactive', '--json']);
    expect(stepOf(again.stdout, 'memory-service').status).toBe('ok');
    expect(systemctl(sb).filter((c) => c.includes(LAYOUT.qmdMcpService) && !c.startsWith('--user show'))).toEqual([]);
    expect(startCount(sb, LAYOUT.qmdMcpService)).toBe(1);
  });

  it('restarts QMD (not the gateway) when the QMD package is reinstalled; restarts it when its unit was edited (--check says so first)', async () => {
    const sb = await installed();
    const gatewayStarts = startCount(sb, LAYOUT.gatewayUnit);
    // A damaged QMD package: the memory step reinstalls it.
    fs.rmSync(path.join(sb.root, LAYOUT.qmdPrefix, 'node_modules', components.qmd.package, 'package.json'));
    const repaired = await sb.install(['--non-interactive', '--json']);
    expect(repaired.exitCode, String(repaired.stderr)).toBe(0);
    expect(stepOf(repaired.stdout, 'memory').status).toBe('changed');
    expect(stepOf(repaired.stdout, 'memory-service').changes.join('\n')).toMatch(/restart qmd-mcp\.service \(the QMD package changed\)/);
    expect(startCount(sb, LAYOUT.qmdMcpService)).toBe(2);
    expect(startCount(sb, LAYOUT.gatewayUnit)).toBe(gatewayStarts);

    fs.writeFileSync(path.join(sb.root, LAYOUT.qmdMcpServiceFile), unit.content.replace('--host 127.0.0.1', '--host 0.0.0.0'));
    sb.clearCalls();
    const check = await sb.install(['--non-interactive', '--check', '--json']);
    const planned = stepOf(check.stdout, 'memory-service');
    expect(planned.changes.join('\n')).toMatch(/restart qmd-mcp\.service \(its unit changed\)/);
    expect(systemctl(sb).filter((c) => !/^(--user )?(show|is-)/.test(c))).toEqual([]);
    expect(sb.read(LAYOUT.qmdMcpServiceFile.slice(1))).toContain('--host 0.0.0.0');
    const fixed = await sb.install(['--non-interactive', '--json']);
    expect(stepOf(fixed.stdout, 'memory-service').status).toBe('changed');
    expect(sb.read(LAYOUT.qmdMcpServiceFile.slice(1))).toBe(unit.content);
    expect(startCount(sb, LAYOUT.qmdMcpService)).toBe(3);
    expect(startCount(sb, LAYOUT.gatewayUnit)).toBe(gatewayStarts);
  });

  it('fails the install, naming the unit and its log, when QMD does not answer', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    fs.writeFileSync(path.join(sb.state, 'qmd-down'), '');
    const run = await sb.install([...FIRST_INSTALL.args, '--json'], { ...FIRST_INSTALL.env, SERVICE_HEALTH_TIMEOUT_MS: '1500' });
    expect(run.exitCode).toBe(1);
    const step = stepOf(run.stdout, 'memory-service');
    expect(step.status).toBe('failed');
    expect(step.error).toMatch(/qmd-mcp\.service does not answer http:\/\/127\.0\.0\.1:\d+\/qmd\/health: HTTP 503/);
    expect(step.hint).toMatch(/journalctl --user-unit=qmd-mcp\.service/);
  });

  it('render qmd-mcp prints the unit the install writes', async () => {
    const sb = await installed();
    const r = await runBinary(['render', 'qmd-mcp'], { env: sb.env() });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(`${r.stdout}\n`).toBe(unit.content);
  });

  it('--reset-clean stops it with the writers, disables it and removes its unit; uninstall disables it too', async () => {
    const sb = await installed();
    sb.clearCalls();
    const reset = await sb.install(['--reset-clean', '--yes']);
    expect(reset.exitCode, String(reset.stderr)).toBe(0);
    const calls = systemctl(sb);
    // Stopped after the gateway (a draining turn may still search the memory), before the archive.
    expect(calls.indexOf(`--user stop ${LAYOUT.qmdMcpService}`)).toBeGreaterThan(calls.indexOf(`--user stop ${LAYOUT.gatewayUnit}`));
    expect(calls).toContain(`--user disable --now ${LAYOUT.qmdMcpService}`);
    expect(fs.existsSync(path.join(sb.root, LAYOUT.qmdMcpServiceFile))).toBe(false);

    const other = await installed();
    other.clearCalls();
    const r = await runBinary(['uninstall', '--yes'], { env: other.env() });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(systemctl(other)).toContain(`--user disable --now ${LAYOUT.qmdMcpService}`);
    expect(fs.existsSync(path.join(other.root, LAYOUT.qmdMcpServiceFile))).toBe(false);
  });
});
