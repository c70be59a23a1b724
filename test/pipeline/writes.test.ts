import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runDoctor } from '../../src/doctor/run.js';
import { runGuard } from '../../src/guard/index.js';
import { Files } from '../../src/host/files.js';
import { createHost } from '../../src/host/index.js';
import { TEMP_MARK } from '../../src/host/temp.js';
import { runBackupCommand } from '../../src/install/backups.js';
import { FOOTPRINT } from '../../src/install/footprint.js';
import { runInstall } from '../../src/install/install.js';
import { TEMP_DIRS } from '../../src/install/leftovers.js';
import { runRestore } from '../../src/install/restore.js';
import { runUninstall } from '../../src/install/uninstall.js';
import { LAYOUT } from '../../src/layout.js';
import { backupRoots, type Written } from '../../src/pipeline/writes.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

/**
 * A path our file layer writes that no module declares (pipeline/writes.ts) fails here:
 * host/files.ts is watched while an install with the channel, the guard and doctor --fix
 * after damage, a re-run that changes the model, a backup and its schedule, an upgrade,
 * --reset-clean, a restore and uninstall run in this process against a sandbox with the
 * stand-ins. Each written path must be declared, lie in a folder declared as replaced
 * whole (a program's prefix, an upgrade's staging), or be a temp name in one of the
 * folders swept for them.
 */

/** The program path each Files method writes (or re-modes). */
const TARGETS: Record<string, (args: unknown[], result: unknown) => string> = {
  write: (a) => a[0] as string,
  writeNew: (a) => a[0] as string,
  createNew: (a) => a[0] as string,
  ensureDir: (a) => a[0] as string,
  mkdir: (a) => a[0] as string,
  makeTempDir: (_a, result) => result as string,
  symlink: (a) => a[1] as string,
  publishNew: (a) => a[1] as string,
  copyNew: (a) => a[1] as string,
  copyTree: (a) => a[1] as string,
  rename: (a) => a[1] as string,
  chmod: (a) => a[0] as string,
  chown: (a) => a[0] as string,
};

function watchWrites(): { written: Map<string, string>; restore(): void } {
  const written = new Map<string, string>();
  const spies = Object.entries(TARGETS).map(([name, target]) => {
    const original = (Files.prototype as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[name]!;
    return vi.spyOn(Files.prototype as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>, name).mockImplementation(async function (this: Files, ...args: unknown[]) {
      const result = await original.apply(this, args);
      const p = target(args, result);
      if (!written.has(p)) written.set(p, name);
      return result;
    });
  });
  return { written, restore: () => spies.forEach((s) => s.mockRestore()) };
}

const pattern = (p: string) => new RegExp(`^${p.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}$`);
const inside = (p: string, folder: string) => p.startsWith(`${folder}/`);

/** Why `p`, written by `how`, is fine; undefined when nobody declared it. */
export function declaredFor(p: string, how: string, writes: readonly Written[] = FOOTPRINT, tempDirs: readonly string[] = TEMP_DIRS): string | undefined {
  const places = writes.filter((w) => w.type !== 'programs');
  const exact = places.find((w) => (w.path.includes('*') ? pattern(w.path).test(p) : w.path === p));
  if (exact) return `declared: ${exact.path}`;
  const parts = p.split('/');
  const temp = parts.findIndex((part) => part.includes(TEMP_MARK));
  if (temp > 0 && tempDirs.includes(parts.slice(0, temp).join('/') || '/')) return 'a temp name in a swept folder';
  const roots = backupRoots(writes).map((r) => r.path);
  const whole = places.find((w) => w.type === 'folder' && (w.staged || roots.includes(w.path)) && inside(p, w.path));
  if (whole) return `inside ${whole.path}, replaced whole`;
  if ((how === 'chmod' || how === 'chown') && places.some((w) => w.type === 'folder' && inside(p, w.path))) return 'a mode or owner in a declared folder';
  return undefined;
}

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

describe('every path service-deploy writes is declared by its writer', () => {
  it('through install, guard, doctor --fix, re-run, backups, upgrade, reset, restore and uninstall', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const saved = { ...process.env };
    const out: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    const watch = watchWrites();
    /** Runs one command in this process and checks its JSON document said ok. */
    const run = async (what: string, command: () => Promise<unknown>) => {
      out.length = 0;
      process.exitCode = undefined;
      await command();
      const doc = JSON.parse(out.join('').trim().split('\n').filter(Boolean).join('\n') || '{}');
      expect([what, process.exitCode ?? 0, doc.ok ?? true], out.join('')).toEqual([what, 0, true]);
    };
    try {
      for (const key of Object.keys(process.env)) delete process.env[key];
      Object.assign(process.env, sb.env(FIRST_INSTALL.env));
      const request = { answers: { customerName: 'Acme Dental GmbH' }, nonInteractive: true, json: true };
      await run('install', () => runInstall({ ...request, channel: true }));

      // Damage the guard restores and doctor --fix repairs.
      const host = createHost({ quiet: true });
      fs.chmodSync(path.join(sb.root, LAYOUT.answersFile), 0o644);
      fs.rmSync(path.join(sb.root, LAYOUT.openclawWrapper));
      fs.rmSync(path.join(sb.root, LAYOUT.channelDropIn));
      fs.appendFileSync(path.join(sb.root, LAYOUT.gatewayUnitFile), '\n# changed\n');
      const config = JSON.parse(sb.read(LAYOUT.runtimeConfig)!);
      config.models.providers.other = { baseUrl: 'https://example.invalid/v1', models: [] };
      fs.writeFileSync(path.join(sb.root, LAYOUT.runtimeConfig), JSON.stringify(config));
      await runGuard(host, { check: false });
      fs.rmSync(path.join(sb.root, LAYOUT.runtimeConfig));
      await runDoctor(host, { names: [], fix: true });

      await run('re-run with a new model', () => runInstall({ ...request, answers: { ...request.answers, model: 'other-model' } }));
      await run('backup --every', () => runBackupCommand({ every: '24h', json: true }));
      await run('backup', () => runBackupCommand({ json: true }));

      // An upgrade: the installed OpenClaw is older than the pin.
      const pkg = path.join(sb.root, LAYOUT.openclawProject, 'node_modules/openclaw/package.json');
      fs.writeFileSync(pkg, JSON.stringify({ ...JSON.parse(fs.readFileSync(pkg, 'utf8')), version: '2026.9.1' }));
      await run('upgrade', () => runInstall(request));

      await run('reset', () => runInstall({ ...request, resetClean: true, yes: true }));
      const copy = fs.readdirSync(path.join(sb.root, LAYOUT.backupDir)).filter((n) => n.startsWith('openclaw-backup-')).sort().pop()!;
      await run('restore', () => runRestore({ ...request, archive: `${LAYOUT.backupDir}/${copy}`, yes: true }));
      await run('uninstall', () => runUninstall({ yes: true, json: true }));
    } finally {
      watch.restore();
      stdout.mockRestore();
      for (const key of Object.keys(process.env)) delete process.env[key];
      Object.assign(process.env, saved);
      process.exitCode = undefined;
    }
    const undeclared = [...watch.written].filter(([p, how]) => declaredFor(p, how) === undefined).map(([p, how]) => `${p} (${how})`);
    expect(undeclared, 'written, but declared by no module (pipeline/writes.ts)').toEqual([]);
    // The watch saw the writes it is about.
    expect([...watch.written.keys()]).toEqual(expect.arrayContaining([LAYOUT.runtimeConfig, LAYOUT.guardScript, LAYOUT.upgradeRecord, LAYOUT.backupTimerFile]));
  });

  it('a path nobody declares is caught', () => {
    expect(declaredFor('/etc/service-deploy/unknown.conf', 'write')).toBeUndefined();
    expect(declaredFor('/etc/nginx/conf.d/other.conf', 'write')).toBeUndefined();
    expect(declaredFor(`/etc/${TEMP_MARK}x`, 'write')).toBeUndefined();
    expect(declaredFor(LAYOUT.guardScript, 'write')).toBe(`declared: ${LAYOUT.guardScript}`);
    expect(declaredFor(`${LAYOUT.runtimeDir}/.openclaw.json${TEMP_MARK}1-2-abcdef12`, 'writeNew')).toBe('a temp name in a swept folder');
  });
});
