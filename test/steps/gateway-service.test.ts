import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXPOSURE_TARGET, gatewayUnitFile, parseExposure, unitDirectives } from '../../src/steps/gateway-service.js';
import { ensureOpenClaw } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

// Issue 19 item 5: the service policy is the pinned release's own. The package keeps
// it in SYSTEMD_FIXED_POLICY (what `openclaw gateway install` writes); the chunk's
// file name carries a build hash, so it is found by what it exports.
let packagePolicy: Record<string, string>;
beforeAll(async () => {
  const entry = await ensureOpenClaw();
  const dist = path.join(path.dirname(entry), 'dist');
  const chunk = fs.readdirSync(dist).find((f) => /^systemd-unit-.*\.mjs$/.test(f) && fs.readFileSync(path.join(dist, f), 'utf8').includes('SYSTEMD_FIXED_POLICY'));
  expect(chunk, `no systemd-unit chunk in ${dist}`).toBeDefined();
  const source = fs.readFileSync(path.join(dist, chunk!), 'utf8');
  const alias = /SYSTEMD_FIXED_POLICY as (\w+)/.exec(source)?.[1];
  expect(alias, 'SYSTEMD_FIXED_POLICY is not exported by the chunk').toBeDefined();
  const mod = await import(pathToFileURL(path.join(dist, chunk!)).href);
  packagePolicy = mod[alias!];
}, 10 * 60_000);

describe('the gateway unit', () => {
  it('carries every setting of the pinned release\'s service policy, with its values', () => {
    const ours = unitDirectives(gatewayUnitFile().content);
    expect(Object.keys(packagePolicy).length).toBeGreaterThanOrEqual(10);
    const differences = Object.entries(packagePolicy)
      .filter(([key, value]) => JSON.stringify(ours.get(key)) !== JSON.stringify([value]))
      .map(([key, value]) => `${key}: package ${value}, ours ${ours.get(key)?.join(' | ') ?? '(missing)'}`);
    expect(differences).toEqual([]);
    // The values the issue measured, so a silent change of the pin shows here too.
    expect(packagePolicy['Service.TimeoutStopSec']).toBe('330');
    expect(packagePolicy['Service.KillMode']).toBe('mixed');
  });

  it('comments every relaxation of the sandbox with its reason', () => {
    const text = gatewayUnitFile().content;
    const relaxations = text.split('\n').filter((l) => /^# Relaxation:/.test(l));
    expect(relaxations.length).toBeGreaterThanOrEqual(4);
    for (const option of ['MemoryDenyWriteExecute', 'PrivateNetwork', 'PrivateUsers', 'ProcSubset', 'RestrictSUIDSGID']) expect(text).toMatch(new RegExp(`# Relaxation: no ${option}`));
  });

  it('closes the way to both service managers (a transient unit would run outside the sandbox)', () => {
    const hidden = gatewayUnitFile().content.split('\n').filter((l) => l.startsWith('InaccessiblePaths=')).flatMap((l) => l.slice('InaccessiblePaths='.length).split(/\s+/));
    for (const p of ['-%t/bus', '-%t/systemd', '-/run/dbus', '-/run/systemd/private']) expect(hidden).toContain(p);
    expect(gatewayUnitFile().content).toMatch(/^UnsetEnvironment=DBUS_SESSION_BUS_ADDRESS$/m);
  });

  const analyze = fs.existsSync('/usr/bin/systemd-analyze') ? it : it.skip;
  analyze(`systemd-analyze security rates it at most ${EXPOSURE_TARGET} (the unit before the sandbox: 9.6 or worse)`, async () => {
    const dir = tempDir('unit-');
    const runtime = path.join(dir, 'xdg');
    fs.mkdirSync(runtime, { mode: 0o700 });
    const score = async (content: string) => {
      const file = path.join(dir, 'openclaw-gateway.service');
      fs.writeFileSync(file, content);
      const r = await execa('systemd-analyze', ['security', '--user', '--offline=yes', '--no-pager', file], { env: { XDG_RUNTIME_DIR: runtime }, reject: false });
      const exposure = parseExposure(r.stdout);
      expect(exposure, `${r.stdout}\n${r.stderr}`).toBeDefined();
      return exposure!;
    };
    const ours = await score(gatewayUnitFile().content);
    expect(ours).toBeLessThanOrEqual(EXPOSURE_TARGET);
    // The same unit without the sandbox part: what the issue measured.
    const bare = gatewayUnitFile().content.replace(/# ---- sandbox[\s\S]*?\n\[Install\]/, '[Install]');
    expect(await score(bare)).toBeGreaterThanOrEqual(9.6);
    console.log(`systemd-analyze security (offline, user unit): ${ours} (without the sandbox: ${await score(bare)})`);
  });
});
