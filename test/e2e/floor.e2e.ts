// The older bound of the distro matrix (issue 15): Debian 11 (bullseye) is older than
// Ubuntu 22.04 on every axis. Its OpenSSL 1.1.1 checks the release signature (step 0, as
// on every suite); its glibc 2.31 is below the install's floor (2.34: QMD's SQLite
// module, src/steps/preflight.ts), so the install must refuse in preflight, saying why,
// with nothing changed, instead of failing half-way. docs/e2e.md says what it proves.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { cleanupTempDirs } from '../helpers/tmp.js';
import { E2E_CACHE } from './artifacts.js';
import { scenarioSteps } from './steps.js';
import { World, log, seconds } from './harness.js';
import { signatureRefusedOnThisOpenssl } from './signature.js';
import { filesWithSecrets, scanWorldReadable } from './secrets.js';
import { systemSnapshot } from './uninstall.js';

const world = new World({ suite: 'bullseye' });
const report: Record<string, unknown> = { startedAt: new Date().toISOString(), suite: world.suite, release: world.release };
const started = Date.now();
const { step, failure } = scenarioSteps(async (error) => `${world.masked(error.message)}\n--- diagnostics (secrets masked)\n${await world.diagnostics().catch(() => '')}`);

beforeAll(async () => {
  log('setting up: artifacts, loopback stand-ins, a bullseye container');
  await world.open();
}, 15 * 60_000);

afterAll(async () => {
  report.totalMs = Date.now() - started;
  report.notes = world.notes;
  report.timings = world.timings;
  Object.assign(report, failure());
  await world.close();
  cleanupTempDirs();
  fs.mkdirSync(E2E_CACHE, { recursive: true });
  fs.writeFileSync(path.join(E2E_CACHE, `last-run-${world.suite}.json`), JSON.stringify(report, null, 2) + '\n');
}, 5 * 60_000);

describe.sequential(`the older bound: ${world.release}`, () => {
  step("0. the release signature on this suite's OpenSSL (1.1.1): tampered sums, another key, an Ed25519 signature and none are refused, nothing installed", 3 * 60_000, async () => {
    expect(await world.container.ok('openssl version')).toMatch(/^OpenSSL 1\.1\.1/);
    world.notes.push(`release signature: ${await signatureRefusedOnThisOpenssl(world)}`);
  });

  step('1. the catalog deploy: install.sh verifies the release on OpenSSL 1.1.1 and installs the binary; the binary refuses glibc 2.31 in preflight (exit 2, why), nothing else changed', 5 * 60_000, async () => {
    const before = await systemSnapshot(world);
    const run = await world.installSh('--catalog');
    report.refusalMs = run.wallMs;
    log(`catalog deploy refused in ${seconds(run.wallMs)}`);
    const what = `exit ${run.exitCode}\n${run.stderr.slice(-3000)}`;
    expect(run.stderr, what).toContain('SHA256SUMS: signature verified');
    expect(run.exitCode, what).toBe(2);
    expect(run.json?.ok, what).toBe(false);
    const failed = (run.json?.steps ?? []).filter((s: { status: string }) => s.status === 'failed');
    expect(failed.map((s: { id: string }) => s.id), what).toEqual(['preflight']);
    expect(failed[0].error, what).toMatch(/glibc 2\.31 is older than 2\.34, which QMD .* needs: use Ubuntu 22\.04 or 24\.04/);
    // The binary is install.sh's (verified) download; nothing of the deployment follows it.
    expect(await world.container.ok('test -x /usr/local/bin/service-deploy && echo yes')).toBe('yes\n');
    expect(await world.container.ok('for p in /opt/service-deploy /root/.openclaw /etc/nginx /etc/cron.d/service-guard /var/lib/service-deploy/answers.json; do test -e $p && echo $p; done; true')).toBe('');
    const after = await systemSnapshot(world);
    expect(after.packages, 'no package was installed or removed').toEqual(before.packages);
    expect(after.etc, '/etc is as before').toEqual(before.etc);
    // The refusal's output and the machine carry no secret.
    expect(Object.entries(world.secrets).filter(([, v]) => `${run.stdout}${run.stderr}`.includes(v)).map(([k]) => k)).toEqual([]);
    expect((await scanWorldReadable(world.container, world.secrets)).files).toEqual([]);
    expect(await filesWithSecrets(world.container, world.secrets, ['/var/log/service-deploy/install.log'])).toEqual([]);
  });

  step("2. the oldest systemd's facts for the gateway's memory bound (issue 26): user@.service delegates the memory controller to user managers", 60_000, async () => {
    const facts = await world.container.ok(`printf 'systemd %s; ' "$(systemctl --version | sed -n '1s/^systemd \\([0-9]*\\).*/\\1/p')"
printf 'user@.service %s; ' "$(grep -h '^Delegate=' /lib/systemd/system/user@.service /usr/lib/systemd/system/user@.service 2>/dev/null | head -n 1)"
printf 'user@0.service DelegateControllers=%s; ' "$(systemctl show -p DelegateControllers --value user@0.service)"
printf '/sys/fs/cgroup is %s' "$(stat -fc %T /sys/fs/cgroup)"`);
    log(`memory bound facts: ${facts}`);
    world.notes.push(`memory bound facts: ${facts}`);
    report.memoryBoundFacts = facts;
    expect(facts).toMatch(/user@\.service Delegate=.*\bmemory\b/);
  });
});
