// The older bound of the distro matrix (issue 15): Debian 11 (bullseye) is older than
// Ubuntu 22.04 on every axis. Its OpenSSL 1.1.1 checks the release signature (step 0, as
// on every suite); its glibc 2.31 is below the install's floor (2.34: QMD's SQLite
// module, src/steps/preflight.ts), so the install must refuse in preflight, saying why,
// with nothing changed, instead of failing half-way. docs/e2e.md says what it proves.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { budget } from '../helpers/budget.js';
import { cleanupTempDirs } from '../helpers/tmp.js';
import { E2E_CACHE } from './artifacts.js';
import { scenarioSteps } from './steps.js';
import { gatewayUnitFile } from '../../src/steps/gateway-service.js';
import { nginxHardeningDropIn } from '../../src/steps/nginx-hardening.js';
import { GATEWAY_UNIT, World, log, seconds } from './harness.js';
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
}, budget(15 * 60_000));

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

// Issue 27 items 2 and 5 on systemd 247 (the install refuses this OS, so the units are
// put in by hand): the gateway unit's sandbox starts (its ExecStart replaced by a sleep:
// there is no runtime here) and shows the gateway the file system it should; the nginx
// drop-in starts, reloads and serves Debian's nginx 1.18. Both rated by this systemd.
describe.sequential(`the sandboxes on ${world.release}'s systemd`, () => {
  step('3. the gateway unit starts its sandbox on systemd 247 (folders hidden or bound as on 252/257); the nginx drop-in starts, reloads and serves nginx 1.18; both rated', 10 * 60_000, async () => {
    const c = world.container;
    const USER = 'XDG_RUNTIME_DIR=/run/user/0';
    report.systemd = (await c.ok('systemctl --version | head -1')).trim();
    // What the unit binds must exist (the install makes it); a secret in a hidden place.
    await c.ok(`mkdir -p /root/.openclaw /root/.cache /root/.config/qmd /var/lib/service-deploy/runtime-secrets /etc/service-deploy/tls /root/.config/systemd/user/${GATEWAY_UNIT}.d
echo '{}' >/var/lib/service-deploy/runtime-secrets/secrets.json; echo hidden >/var/lib/service-deploy/answers.json; echo hidden >/root/answers.env`);
    fs.writeFileSync(world.container.hostPath(`/root/.config/systemd/user/${GATEWAY_UNIT}`), gatewayUnitFile().content);
    fs.writeFileSync(world.container.hostPath(`/root/.config/systemd/user/${GATEWAY_UNIT}.d/e2e-sleep.conf`), '[Service]\nExecStart=\nExecStart=/bin/sleep 600\n');
    await c.ok(`loginctl enable-linger root; for i in $(seq 1 120); do ${USER} systemctl --user is-system-running >/dev/null 2>&1 && break; ${USER} systemctl --user is-system-running 2>/dev/null | grep -qE 'degraded|starting' && break; sleep 0.5; done
${USER} systemctl --user daemon-reload && ${USER} systemctl --user start ${GATEWAY_UNIT}`, { timeoutMs: 120_000 });
    const parse = await c.sh(`journalctl -b --no-pager 2>/dev/null | grep -E '${GATEWAY_UNIT}:[0-9]+: ' ; true`);
    expect(parse.stdout.trim(), 'systemd 247 refused lines of the unit').toBe('');
    const pid = (await c.ok(`${USER} systemctl --user show -p MainPID --value ${GATEWAY_UNIT}`)).trim();
    expect(Number(pid)).toBeGreaterThan(0);
    // A simple unit's MainPID is known at fork, before systemd's child has set up the
    // sandbox and exec'd the command: entered too early, its mount namespace is still the
    // manager's (CI saw answers.json there). Wait for the exec (budget, not a fixed sleep).
    const exe = await c.sh(`for i in $(seq 1 300); do case "$(readlink /proc/${pid}/exe)" in */sleep) echo exec; exit 0;; esac; sleep 0.1; done; readlink /proc/${pid}/exe`, { timeoutMs: 60_000 });
    expect(exe.stdout.trim(), 'the unit\'s main process exec\'d its command within 30 s').toBe('exec');
    const seen = await c.ok(`nsenter -t ${pid} -m sh -c 'ls -A /var/lib/service-deploy; echo --; ls -A /root; echo --; cat /var/lib/service-deploy/answers.json /root/answers.env /etc/shadow 2>&1; ls /etc/service-deploy 2>&1; true'`);
    const [state, home, hidden] = seen.split('--\n');
    expect(state!.trim().split('\n')).toEqual(['runtime-secrets']);
    expect(home!.trim().split('\n').sort()).toEqual(['.cache', '.config', '.openclaw']);
    expect(hidden, 'answers.json, an answers file in /root, /etc/shadow, /etc/service-deploy').not.toMatch(/^hidden$|root:/m);
    const gateway = await c.ok(`${USER} systemd-analyze security --user --no-pager ${GATEWAY_UNIT} | tail -1`, { timeoutMs: 60_000 });
    report.gatewayExposure = gateway.trim();
    await c.ok(`${USER} systemctl --user stop ${GATEWAY_UNIT}`);

    // nginx from bullseye's own packages, with our drop-in.
    await c.ok('DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null', { timeoutMs: 6 * 60_000 });
    const dropIn = nginxHardeningDropIn();
    await c.ok(`mkdir -p ${path.posix.dirname(dropIn.path)}`);
    fs.writeFileSync(world.container.hostPath(dropIn.path), dropIn.content);
    await c.ok('systemctl daemon-reload && systemctl restart nginx && systemctl reload nginx && systemctl is-active nginx', { timeoutMs: 120_000 });
    expect(await c.ok('systemctl show -p DropInPaths --value nginx')).toContain(dropIn.path);
    expect(await c.ok('curl -fsS http://127.0.0.1/')).toContain('Welcome to nginx');
    const nginx = await c.ok('systemd-analyze security --no-pager nginx.service | tail -1', { timeoutMs: 60_000 });
    report.nginxExposure = nginx.trim();
    log(`${report.systemd}: gateway unit: ${report.gatewayExposure}; nginx with the drop-in: ${report.nginxExposure}`);
    world.notes.push(`${report.systemd}: gateway unit ${report.gatewayExposure}; nginx with the drop-in ${report.nginxExposure}`);
    const score = (line: string) => Number(/: (\d+(?:\.\d+)?)/.exec(line)?.[1] ?? NaN);
    expect(score(report.nginxExposure as string)).toBeLessThanOrEqual(5.0);
    expect(score(report.gatewayExposure as string)).toBeLessThanOrEqual(4.5);
  });
});
