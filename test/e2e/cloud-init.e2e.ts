// The portal's one-click catalog deploy through a real cloud-init (issue 15): a fresh
// server boots with examples/cloud-init/user-data.yaml as its NoCloud seed while a real
// boot-time apt run holds the package locks; cloud-init's runcmd runs the deploy, which
// must wait for the locks, say so and for whom, and finish. docs/e2e.md.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { scenarioSteps } from './steps.js';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.js';
import { E2E_CACHE } from './artifacts.js';
import { ANSWERS_FILE, HELD_MARK, MIN_HOLD_S, RELEASED_MARK, RESULT_FILE, cloudInitFiles, lockHolderDeb, userDataForE2e } from './cloud-init.js';
import type { Suite } from './container.js';
import { GATEWAY_PORT, World, log, parseJson, recordTimeline, seconds } from './harness.js';
import { filesWithSecrets, scanWorldReadable } from './secrets.js';

/** trixie's cloud-init (25.1) is the closest to what current Ubuntu images run (24.x-25.x); it also reports "degraded". */
const SUITE = (process.env.E2E_CLOUD_SUITE ?? 'trixie') as Suite;
const HOSTNAME = 'srv-cloud-e2e';
const CUSTOMER = 'Cloud Init Clinic E2E';

const scratch = tempDir('sd-e2e-cloud-');
const world = new World({
  suite: SUITE,
  hostname: HOSTNAME,
  // What a cloud image has: cloud-init, sshd (cloud-init makes its host keys) and iproute2 (it prints the network).
  extraPackages: ['cloud-init', 'openssh-server', 'iproute2'],
  // The boot's start-up includes cloud-init's final stage, which runs the whole deploy.
  waitFor: 'manager',
});
const modelId = 'cloud-e2e-model';
world.options.files = cloudInitFiles({
  userData: userDataForE2e({ customerName: CUSTOMER, apiKey: world.secrets.apiKey!, modelId, meshAuthKey: world.secrets.meshAuthKey!, mcpToken: world.secrets.mcpToken! }),
  instanceId: `e2e-${Date.now()}`,
  hostname: HOSTNAME,
  lockHolderDeb: lockHolderDeb(scratch),
});
const report: Record<string, unknown> = { startedAt: new Date().toISOString(), suite: SUITE };
const timings: Record<string, number> = {};
const started = Date.now();

const { step, failure } = scenarioSteps(async (error) => {
  const extra = await world.container
    ?.sh('tail -n 40 /var/log/cloud-init-output.log; echo "--- cloud-init.log"; grep -E "WARNING|ERROR|Traceback" /var/log/cloud-init.log | tail -n 30; echo "--- status"; cloud-init status --long; journalctl -u e2e-apt-lock -u e2e-boot-apt --no-pager -n 20; echo "--- install.log"; tail -n 30 /var/log/service-deploy/install.log; echo "--- result.json"; tail -c 2500 /root/service-deploy/result.json', { timeoutMs: 30_000 })
    .catch(() => undefined);
  return `${world.masked(error.message)}\n--- diagnostics (secrets masked)\n${world.masked(`${extra?.stdout ?? ''}${extra?.stderr ?? ''}`).slice(-6000)}`;
});

beforeAll(async () => {
  log(`setting up: a ${SUITE} server with cloud-init, the portal's user-data as its NoCloud seed`);
  const t = Date.now();
  await world.open();
  timings.bootMs = Date.now() - t;
}, 20 * 60_000);

afterAll(async () => {
  report.totalMs = Date.now() - started;
  report.timings = { ...world.timings, ...timings };
  report.notes = world.notes;
  Object.assign(report, failure());
  await world.close();
  cleanupTempDirs();
  fs.mkdirSync(E2E_CACHE, { recursive: true });
  fs.writeFileSync(path.join(E2E_CACHE, 'last-run-cloud-init.json'), JSON.stringify(report, null, 2) + '\n');
}, 5 * 60_000);

describe.sequential(`the catalog deploy through a real cloud-init (${SUITE}) while apt holds the locks`, () => {
  let result: any;
  let output = '';

  step('1. cloud-init runs the user-data; its status ends "done" without errors or warnings', 20 * 60_000, async () => {
    const t = Date.now();
    const wait = await world.container.sh('cloud-init status --wait >/dev/null; cloud-init status --format json', { timeoutMs: 18 * 60_000 });
    timings.cloudInitMs = Date.now() - t + (timings.bootMs ?? 0);
    const status = parseJson(wait.stdout);
    output = await world.container.ok('cat /var/log/cloud-init-output.log');
    expect(status, `cloud-init status --format json printed: ${wait.stdout}\n${wait.stderr}\n${world.masked(output.slice(-3000))}`).toBeTruthy();
    // "done" (not "error", not "degraded done"), and nothing recorded as an error or a
    // recoverable one. The message's first line says why (CI's summary keeps only it),
    // then the whole status and the end of the user-data's output.
    const recoverable = Object.values(status.recoverable_errors ?? {}).flat();
    const why = `cloud-init status "${status.status}"; errors: ${JSON.stringify(status.errors ?? []).slice(0, 300)}; recoverable: ${JSON.stringify(recoverable).slice(0, 200)}; output ends: ${world.masked(output.trim().split('\n').slice(-2).join(' | ')).slice(-300)}`;
    const details = `${why}\n${JSON.stringify(status, null, 1)}`;
    expect(status.status, details).toBe('done');
    expect(status.errors ?? [], details).toEqual([]);
    expect(recoverable, details).toEqual([]);
    expect(wait.exitCode, `cloud-init status exit ${wait.exitCode}`).toBe(0);
    // The final message names where the result is.
    expect(output).toContain(`JSON result in ${RESULT_FILE}`);
    // trixie's own cloud-init accepts the user-data as it received it.
    const schema = await world.container.sh('cloud-init schema --system', { timeoutMs: 120_000 });
    expect(schema.exitCode, world.masked(`${schema.stdout}${schema.stderr}`)).toBe(0);
    report.cloudInit = { status: status.status, datasource: status.datasource, schema: schema.stdout.trim().split('\n').at(-1) };
  });

  step('2. the JSON result is where the portal collects it (0600): every step ok, channel configured, model from the answers', 2 * 60_000, async () => {
    const file = world.container.hostPath(RESULT_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    result = JSON.parse(fs.readFileSync(file, 'utf8'));
    const failed = (result.steps ?? []).filter((s: { status: string }) => s.status === 'failed');
    expect(result.ok, JSON.stringify(failed)).toBe(true);
    expect(result.recap.failed).toBe(0);
    expect(result.steps.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining(['package-lock', 'system-packages', 'channel-nginx', 'gateway-service', 'health']));
    expect(output).toContain('service-deploy catalog deploy: exit 0');
    // The answers arrived as a file and were removed after the successful deploy.
    expect(fs.existsSync(world.container.hostPath(ANSWERS_FILE))).toBe(false);
    const cfg = JSON.parse(fs.readFileSync(world.container.hostPath('/root/.openclaw/openclaw.json'), 'utf8'));
    expect(cfg.agents.defaults.model.primary).toMatch(new RegExp(`/${modelId}$`));
    expect(await world.container.ok(`curl -fsS -o /dev/null -w '%{http_code}' http://127.0.0.1:${GATEWAY_PORT}/healthz`)).toBe('200');
    report.recap = result.recap;
    timings.installMs = result.durationMs;
    // The e2e's one first install with a JSON result (the server scenario's is the
    // quickstart's, run as the page says: no --json): its timeline, beside the report.
    report.timeline = recordTimeline(result, 'cloud-init', `first install: the catalog deploy through cloud-init, ${SUITE} e2e ${new Date().toISOString().slice(0, 10)} (package-lock waits for the boot's apt run, held >= ${MIN_HOLD_S} s)`);
  });

  step(`3. the deploy waited for the real apt/dpkg run (held >= ${MIN_HOLD_S} s), said so and for whom, then went on`, 2 * 60_000, async () => {
    const held = (await world.container.ok(`cat ${HELD_MARK}`)).trim().split(' ').map(Number);
    const released = (await world.container.ok(`cat ${RELEASED_MARK}`)).trim().split(' ').map(Number);
    const holdS = released[1]! - released[0]!;
    expect(holdS).toBeGreaterThanOrEqual(MIN_HOLD_S);
    // The install's own words (stderr -> cloud-init-output.log, and its log file).
    const waiting = /waiting for the package manager lock: (.*)/.exec(output);
    expect(waiting, `no "waiting for the package manager lock" in cloud-init-output.log:\n${world.masked(output.slice(-3000))}`).toBeTruthy();
    // For whom: the boot-time apt-get (lock-frontend) and/or its dpkg, named by pid and command.
    expect(waiting![1]).toMatch(/pid \d+ \((apt-get install -y -q \/root\/e2e\/e2e-lock-holder[^)]*|[^)]*dpkg[^)]*)\) on \/var\/lib\/dpkg\/lock/);
    expect(held[0], 'the lock holder never ran').toBeGreaterThan(0);
    expect(output).toContain('package manager lock released');
    // It did not wait for cloud-init itself (it runs inside it: that wait could never end).
    expect(output).toMatch(/inside cloud-init/);
    const lockStep = result.steps.find((s: { id: string }) => s.id === 'package-lock');
    expect(lockStep.durationMs, 'the package-lock step did not wait').toBeGreaterThan(5_000);
    const installLog = await world.container.ok('cat /var/log/service-deploy/install.log');
    expect(installLog).toMatch(/waiting for the package manager lock: pid \d+/);
    report.lockWait = { heldS: holdS, waitedMs: lockStep.durationMs, holder: waiting![1] };
    timings.lockWaitMs = lockStep.durationMs;
    log(`the deploy waited ${seconds(lockStep.durationMs)} for ${waiting![1]}; the holder held the locks ${holdS} s`);
  });

  step('4. no secret in process arguments, the logs, or any world-readable file', 5 * 60_000, async () => {
    world.argv.stop();
    expect([...world.argv.leaks.keys()], `leaks seen in ${world.argv.samples} samples`).toEqual([]);
    expect(await filesWithSecrets(world.container, world.secrets, ['/var/log/service-deploy/install.log', '/var/log/cloud-init-output.log', '/var/log/cloud-init.log'])).toEqual([]);
    const scan = await scanWorldReadable(world.container, world.secrets);
    expect(scan.files).toEqual([]);
    report.secretScan = { argvSamples: world.argv.samples, worldReadableFilesScanned: scan.scanned };
  });
});
