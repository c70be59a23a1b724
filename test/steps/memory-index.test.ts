import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { shippedLock } from '../../src/runtime/locks.js';
import { readQmdCollection, refreshServiceUnit, refreshTimerUnit } from '../../src/steps/memory-index.js';
import { runBinary } from '../helpers/binary.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

/**
 * QMD is the agent's memory (issue 18 item 2): the install creates a QMD collection over
 * the memory files, refreshes it on a user timer, keeps it private, and the index goes
 * through --reset-clean and restore. In the sandbox QMD is a stand-in CLI that keeps its
 * collection config where QMD does (test/helpers/standins/qmd); the real QMD runs in the
 * e2e (test/e2e/memory.ts).
 */
const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

async function installed(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const first = await sb.install([...FIRST_INSTALL.args, '--json'], FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  expect(JSON.parse(String(first.stdout)).steps.find((s: { id: string }) => s.id === 'memory-index').status).toBe('changed');
  return sb;
}

const mode = (sb: Sandbox, p: string) => sb.stat(p.slice(1))!.mode & 0o777;
const qmdCalls = (sb: Sandbox) => sb.calls('qmd').map((c) => c.args.join(' '));
const stepStatus = (out: string, id: string) => JSON.parse(out).steps.find((s: { id: string }) => s.id === id).status;

describe('QMD memory', () => {
  it('installs the shipped lock of its architecture (npm ci: the CPU build only), staged beside its own prefix, wired as the MCP server qmd', async () => {
    const sb = await installed();
    const npm = sb.calls('npm').find((c) => c.args.includes(path.join(sb.root, LAYOUT.qmdNext)))!;
    expect(npm.args).toEqual(['ci', '--prefix', path.join(sb.root, LAYOUT.qmdNext), '--no-audit', '--no-fund', '--omit=optional', '--ignore-scripts']);
    expect(npm.args).not.toContain('--global');
    // The project as shipped: the pin and the CPU build of this architecture, the lock beside it.
    const shipped = shippedLock('qmd', process.arch === 'arm64' ? 'arm64' : 'x64')!;
    expect(sb.read(`${LAYOUT.qmdPrefix.slice(1)}/package.json`)).toBe(shipped.manifestText);
    expect(sb.read(`${LAYOUT.qmdPrefix.slice(1)}/package-lock.json`)).toBe(shipped.lockText);
    const manifest = JSON.parse(shipped.manifestText);
    expect(Object.keys(manifest.dependencies).filter((d) => /^@node-llama-cpp\/|^sqlite-vec-/.test(d))).toEqual(process.arch === 'arm64' ? ['@node-llama-cpp/linux-arm64', 'sqlite-vec-linux-arm64'] : ['@node-llama-cpp/linux-x64', 'sqlite-vec-linux-x64']);
    expect(manifest.allowScripts).toEqual({ 'better-sqlite3': true, 'node-llama-cpp': true });
    // Staged, then renamed in: nothing left beside it; what else the prefix holds (the refresh script) is there.
    expect(sb.stat(LAYOUT.qmdNext.slice(1))).toBeUndefined();
    expect(sb.stat(LAYOUT.qmdRefreshScript.slice(1))?.isFile()).toBe(true);
    const cfg = JSON.parse(sb.read(LAYOUT.runtimeConfig.slice(1))!);
    expect(cfg.mcp.servers.qmd).toEqual({ url: 'http://127.0.0.1:18788/mcp', transport: 'streamable-http', requestTimeoutMs: 60000 });
  });

  it('creates the collection over the memory files, refreshes it, keeps it private, starts the timer; a re-run does nothing', async () => {
    const sb = await installed();
    const workspace = path.join(sb.root, LAYOUT.workspaceDir);
    expect(qmdCalls(sb)).toEqual([`collection add ${workspace} --name memory --mask MEMORY.md,memory/*.md`, 'update']);
    expect(readQmdCollection(sb.read(LAYOUT.qmdCollectionsFile.slice(1))!, 'memory')).toEqual({ path: workspace, pattern: 'MEMORY.md,memory/*.md' });
    for (const dir of [LAYOUT.qmdCacheDir, LAYOUT.qmdConfigDir]) expect(mode(sb, dir)).toBe(0o700);
    // The QMD stand-in wrote them with the process umask (0644), as QMD does.
    for (const file of [LAYOUT.qmdIndex, LAYOUT.qmdCollectionsFile, LAYOUT.qmdRefreshStamp]) expect(mode(sb, file)).toBe(0o600);
    expect(sb.read(LAYOUT.qmdRefreshTimerFile.slice(1))).toBe(refreshTimerUnit().content);
    expect(sb.read(LAYOUT.qmdRefreshServiceFile.slice(1))).toBe(refreshServiceUnit().content);
    expect(sb.calls('systemctl').map((c) => c.args.join(' '))).toContain('--user enable --now qmd-refresh.timer');

    sb.clearCalls();
    const again = await sb.install(['--non-interactive', '--json']);
    expect(stepStatus(String(again.stdout), 'memory-index')).toBe('ok');
    expect(qmdCalls(sb)).toEqual([]);
    expect(sb.calls('npm')).toEqual([]);
  });

  it('puts back a collection pointed elsewhere and an index opened to others', async () => {
    const sb = await installed();
    const yml = LAYOUT.qmdCollectionsFile.slice(1);
    fs.writeFileSync(path.join(sb.root, yml), sb.read(yml)!.replace(/path: .*/, 'path: /srv/elsewhere'));
    fs.chmodSync(path.join(sb.root, LAYOUT.qmdIndex), 0o644);
    fs.chmodSync(path.join(sb.root, LAYOUT.qmdCacheDir), 0o755);
    sb.clearCalls();
    const check = await sb.install(['--non-interactive', '--check', '--json']);
    const planned = JSON.parse(String(check.stdout)).steps.find((s: { id: string }) => s.id === 'memory-index');
    expect(planned.changes.join('\n')).toMatch(/\/srv\/elsewhere .*-> \/root\/\.openclaw\/workspace[\s\S]*index\.sqlite.*0600 files/);
    expect(qmdCalls(sb)).toEqual([]); // check mode runs nothing
    const fix = await sb.install(['--non-interactive', '--json']);
    expect(stepStatus(String(fix.stdout), 'memory-index'), String(fix.stdout)).toBe('changed');
    expect(qmdCalls(sb)).toEqual(['collection remove memory', `collection add ${path.join(sb.root, LAYOUT.workspaceDir)} --name memory --mask MEMORY.md,memory/*.md`, 'update']);
    expect(mode(sb, LAYOUT.qmdIndex)).toBe(0o600);
    expect(mode(sb, LAYOUT.qmdCacheDir)).toBe(0o700);
  });

  it('render prints the timer and its service', async () => {
    const sb = await installed();
    const timer = await runBinary(['render', 'qmd-timer'], { env: sb.env() });
    expect(timer.exitCode, String(timer.stderr)).toBe(0);
    expect(timer.stdout).toContain('OnUnitActiveSec=15min');
    const service = await runBinary(['render', 'qmd-service'], { env: sb.env() });
    expect(service.stdout).toMatch(/UMask=0077[\s\S]*ExecStart=\/bin\/sh \/opt\/service-deploy\/qmd\/refresh\.sh/);
    const script = await runBinary(['render', 'qmd-script'], { env: sb.env() });
    expect(script.stdout).toMatch(/qmd="\/opt\/service-deploy\/qmd\/node_modules\/\.bin\/qmd"\n"\$qmd" update/);
  });

  it('the index is in the --reset-clean backup, removed by the reset, and put back by restore', async () => {
    const sb = await installed();
    fs.writeFileSync(path.join(sb.root, LAYOUT.workspaceDir, 'MEMORY.md'), 'Prefers Tuesday mornings\n');
    // A refresh as the timer would run it: the index now holds the memory file.
    const refreshed = await sb.install(['--non-interactive']);
    expect(refreshed.exitCode).toBe(0);
    fs.rmSync(path.join(sb.root, LAYOUT.qmdRefreshStamp));
    expect((await sb.install(['--non-interactive'])).exitCode).toBe(0);
    const index = sb.read(LAYOUT.qmdIndex.slice(1));
    expect(index).toContain('MEMORY.md\tPrefers Tuesday mornings');

    const reset = await sb.install(['--reset-clean', '--yes']);
    expect(reset.exitCode, String(reset.stderr)).toBe(0);
    const archive = fs.readdirSync(path.join(sb.root, 'tmp')).find((f) => f.startsWith('openclaw-backup-'))!;
    const entries: string[] = [];
    await tar.t({ file: path.join(sb.root, 'tmp', archive), onReadEntry: (e) => entries.push(e.path.replace(/\/$/, '')) });
    expect(entries).toEqual(expect.arrayContaining([LAYOUT.qmdIndex.slice(1), LAYOUT.qmdConfigDir.slice(1), LAYOUT.qmdCollectionsFile.slice(1)]));
    for (const gone of [LAYOUT.qmdCacheDir, LAYOUT.qmdConfigDir, LAYOUT.qmdRefreshTimerFile, LAYOUT.qmdRefreshServiceFile]) {
      expect(fs.existsSync(path.join(sb.root, gone)), gone).toBe(false);
    }
    expect(sb.calls('systemctl').map((c) => c.args.join(' '))).toContain('--user disable --now qmd-refresh.timer');

    sb.clearCalls();
    const restored = await runBinary(['restore', `/tmp/${archive}`], { env: sb.env({ SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey }) });
    expect(restored.exitCode, String(restored.stderr)).toBe(0);
    expect(sb.read(LAYOUT.qmdIndex.slice(1))).toContain('MEMORY.md\tPrefers Tuesday mornings');
    expect(readQmdCollection(sb.read(LAYOUT.qmdCollectionsFile.slice(1))!, 'memory')?.path).toBe(path.join(sb.root, LAYOUT.workspaceDir));
    // The collection came back with the backup: the install only refreshes it (no stamp in a backup).
    expect(qmdCalls(sb)).toEqual(['update']);
    for (const dir of [LAYOUT.qmdCacheDir, LAYOUT.qmdConfigDir]) expect(mode(sb, dir)).toBe(0o700);
    expect(mode(sb, LAYOUT.qmdIndex)).toBe(0o600);
  });
});
