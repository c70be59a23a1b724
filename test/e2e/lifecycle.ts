// The e2e's lifecycle part (issue 19): a consistent backup of the live deployment with
// every database checked, and an upgrade to a broken build of OpenClaw (a local package
// whose gateway exits at start) that rolls back by itself. Hooked into server.e2e.ts as
// its last steps: the rollback leaves the server on the package it had.
import { expect } from 'vitest';
import { GATEWAY_PORT, log, type World } from './harness.js';

type Chat = (message: string) => Promise<{ reply: string }>;

const PKG = '/opt/service-deploy/node/lib/node_modules/openclaw';
const NPM = '/opt/service-deploy/node/bin/npm';

/** `service-deploy backup` on the running server: writers paused, every database checked, nothing removed, chat after. */
export async function consistentBackupOnServer(world: World, chat: Chat): Promise<Record<string, unknown>> {
  const c = world.container;
  await chat('an exchange before the on-demand backup');
  const r = await world.deploy('backup --json', { timeoutMs: 10 * 60_000 });
  expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
  const out = r.json as { archive: string; databases: Array<{ path: string; integrity: string }>; pausedMs: number; bytes: number; stopped: string[] };
  expect(out.archive).toMatch(/^\/var\/backups\/service-deploy\/openclaw-backup-\d{8}-\d{6}\.tar\.gz$/);
  expect(await c.ok(`stat -c %a ${out.archive} /var/backups/service-deploy`)).toBe('600\n700\n');
  expect(out.databases.some((d) => d.path === '/root/.openclaw/state/openclaw.sqlite'), JSON.stringify(out.databases)).toBe(true);
  expect(out.databases.filter((d) => d.integrity !== 'ok')).toEqual([]);
  expect(out.stopped).toContain('openclaw-gateway.service');
  expect(await c.ok(`curl -fsS -o /dev/null -w '%{http_code}' --retry 60 --retry-delay 1 --retry-all-errors http://127.0.0.1:${GATEWAY_PORT}/healthz`)).toBe('200');
  const answer = await chat('still answering after the backup?');
  expect(answer.reply).toContain('still answering after the backup?');
  const report = { wallMs: r.ms, gatewayPausedMs: out.pausedMs, databases: out.databases.length, bytes: out.bytes };
  log(`on-demand backup: ${JSON.stringify(report)}`);
  return report;
}

/**
 * The installed OpenClaw is marked as an earlier release, and the pin's version is
 * offered as a local package whose gateway exits at start: the upgrade installs it
 * beside the old one, switches, migrates, fails to start, and rolls back: the old
 * package and state back, /healthz and chat answering, exit 1 with the report.
 */
export async function brokenUpgradeRollsBack(world: World, chat: Chat): Promise<Record<string, unknown>> {
  const c = world.container;
  const version = JSON.parse(await c.ok(`cat ${PKG}/package.json`)).version as string;
  await c.ok(`set -e; rm -rf /root/e2e/broken; mkdir -p /root/e2e/broken/package; cd /root/e2e/broken
tar -C ${PKG} --exclude=./node_modules -cf - . | tar -C package -xf -
# The gateway of this build exits at start; every other command works.
{ head -n 1 package/openclaw.mjs; echo 'if (process.argv[2] === "gateway") { console.error("e2e broken build: the gateway exits at start"); process.exit(1); }'; tail -n +2 package/openclaw.mjs; } >package/openclaw.new
mv package/openclaw.new package/openclaw.mjs; chmod 755 package/openclaw.mjs
${NPM} pack --silent --pack-destination /root/e2e/broken ./package >/dev/null
cp ${PKG}/package.json /root/e2e/broken/installed-package.json
# What a server installed by an earlier service-deploy has: an earlier release.
sed -i 's/"version": *"${version}"/"version": "2026.9.5"/' ${PKG}/package.json`);
  const tarball = (await c.ok('ls /root/e2e/broken/*.tgz')).trim();
  const run = await world.installSh('--catalog --json', { SERVICE_OPENCLAW_SOURCE: tarball, SERVICE_HEALTH_TIMEOUT_MS: '90000' }, 20 * 60_000);
  expect(run.exitCode, `${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`).toBe(1);
  expect(run.json?.upgrade, run.stdout.slice(-3000)).toMatchObject({ from: '2026.9.5', to: version, rolledBack: true });
  expect(['start', 'health']).toContain(run.json.upgrade.failedAt);
  expect(JSON.parse(await c.ok(`cat ${PKG}/package.json`)).version).toBe('2026.9.5');
  expect(await c.ok(`grep -c 'e2e broken build' ${PKG}/openclaw.mjs || true`)).toBe('0\n');
  expect(await c.ok('test -e /opt/service-deploy/openclaw-previous && echo kept || echo none')).toBe('none\n');
  expect(await c.ok(`curl -fsS -o /dev/null -w '%{http_code}' http://127.0.0.1:${GATEWAY_PORT}/healthz`)).toBe('200');
  const answer = await chat('answering again after the rollback?');
  expect(answer.reply).toContain('answering again after the rollback?');
  // The package as it was, byte for byte (the mark of an earlier release taken off again).
  await c.ok(`cp /root/e2e/broken/installed-package.json ${PKG}/package.json`);
  const report = { wallMs: run.wallMs, failedAt: run.json.upgrade.failedAt, backup: run.json.upgrade.backup };
  log(`broken upgrade rolled back: ${JSON.stringify(report)}`);
  return report;
}
