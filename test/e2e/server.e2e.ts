// Real-server end to end (issue 7): the product deployed on a booted Debian systemd
// container (bullseye, bookworm or trixie: E2E_SUITE, issue 15) the way a partner runs it, `curl <setup>/install.sh | bash -s -- --catalog`,
// then operated: re-run, model change, tampering + guard + doctor, reset and restore.
// Run with `npm run test:e2e` (scripts/e2e.mjs); docs/e2e.md says what is real and what
// is a stand-in.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { cleanupTempDirs } from '../helpers/tmp.js';
import { E2E_CACHE, PREVIOUS_NODE_VERSION } from './artifacts.js';
import { DEFAULT_SUITE, type Suite } from './container.js';
import { scenarioSteps, type StepOptions } from './steps.js';
import { CHANNEL_PORT, GATEWAY_PORT, GATEWAY_UNIT, World, channelPost, log, seconds, timeSplit, type InstallRun } from './harness.js';
import { runE2eDamages } from './damage.js';
import { filesWithSecrets, scanWorldReadable } from './secrets.js';
import { confinementStep } from './confinement.js';
import { nginxHardened } from './nginx-hardening.js';
import { describeFootprint, footprint, memoryAfterRestore, memoryAndHeartbeat, memoryBoundFacts, noProcessPerChat } from './memory.js';
import { doctorWarnsLimits, limitsSkippedInContainer, meshPathRefusedEdgePathWorks } from './channel-edge.js';
import { craftedArchivesOnRealRoot } from './crafted-archives.js';
import { gatewayNode, serverOnPreviousNode, upgradeFromPreviousNode } from './node-upgrade.js';
import { brokenUpgradeRollsBack, chatTraffic, consistentBackupOnServer, earlierReleaseInstalled, exchangesRestored, packBrokenBuild, restartDuringTurn, rollbackByHand, upgradeFromEarlierRelease } from './lifecycle.js';
import { QUICKSTART_WORLD, prepareQuickstart, runQuickstart, type QuickstartRun } from './quickstart.js';
import { pairedBrowserAfterRotationThenRevoked } from './pairing.js';
import { oldKeyGone, rotateApiKeyInAnswers } from './key-rotation.js';
import { systemSnapshot, uninstallLeavesNothing, type SystemSnapshot } from './uninstall.js';
import { signatureRefusedOnThisOpenssl } from './signature.js';
import { storesOnServer } from './stores.js';
import { shortSoak } from './soak-short.js';
import { lockedTreesOnServer } from './locked-trees.js';
import { BUSY_START_LINES } from '../helpers/gateway-journal.js';

const components = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/components.json'), 'utf8'));
/** The Node the x64/arm64 binary is built on (package-lock.json). */
const EMBEDDED_NODE: string = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8')).packages[`node_modules/node-linux-${process.arch === 'arm64' ? 'arm64' : 'x64'}`].version;
const profile = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/service-profile.json'), 'utf8'));
const PROVIDER: string = profile.gatewayProviderName;
const DEFAULT_MODEL: string = profile.defaultModelId;
const NEW_MODEL = 'e2e-model-2';
const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';
const LOGS = ['/var/log/service-deploy/install.log', '/var/log/service-deploy/guard.log', '/var/log/service-deploy/guard.log.1'];

const world = new World(QUICKSTART_WORLD);
const report: Record<string, unknown> = { startedAt: new Date().toISOString(), suite: world.suite, release: world.release };
const started = Date.now();

const { step, failure } = scenarioSteps(async (error) => {
  const extra = await world.diagnostics().catch(() => '');
  return `${world.masked(error.message)}\n--- diagnostics (secrets masked)\n${extra}`;
});

/**
 * A step that does not depend on the distribution (its subject is our own code: archives,
 * single damages, the upgrade machinery): it runs on the default suite only, to keep
 * the matrix within CI's budget (docs/e2e.md, "Adding to the scenario").
 */
function defaultSuiteStep(name: string, timeoutMs: number, fn: () => Promise<void>, options: StepOptions = {}): void {
  suiteStep(DEFAULT_SUITE, name, timeoutMs, fn, options);
}

/**
 * The same, on another suite: the second server suite takes some of these steps so the
 * two, which run at once, take about as long (CI's time is the longer one's).
 */
function suiteStep(suite: Suite, name: string, timeoutMs: number, fn: () => Promise<void>, options: StepOptions = {}): void {
  if (world.suite === suite) return step(name, timeoutMs, fn, options);
  it.skip(`${name} (on ${suite} only: it does not depend on the distribution)`, () => undefined);
}

function expectInstallOk(run: InstallRun): void {
  const failed = (run.json?.steps ?? []).filter((s: { status: string }) => s.status === 'failed');
  expect(run.exitCode, `install exit ${run.exitCode}; failed steps: ${JSON.stringify(failed)}\nstderr: ${run.stderr.slice(-3000)}`).toBe(0);
  expect(run.json?.ok, run.stdout.slice(-3000)).toBe(true);
  // What the portal sees of the run (stdout JSON, stderr) carries no secret either.
  const shown = Object.entries(world.secrets).filter(([, v]) => `${run.stdout}${run.stderr}`.includes(v)).map(([k]) => k);
  expect(shown, 'secrets in the output of the install').toEqual([]);
}

/** `service-deploy chat` on the server itself (it reads channel.env and trusts the deploy's certificate). */
async function chat(message: string): Promise<{ reply: string; sessionId: string; model: string }> {
  // The channel admits 10 messages a minute per address; steps that chat more than that
  // (the exfiltration attempts) back off as a real client would: for the Retry-After the
  // server sends, within a budget of three windows.
  const deadline = Date.now() + 3 * 60_000;
  for (;;) {
    const r = await world.deploy(`chat --message '${message}' --json --timeout 120`, { timeoutMs: 180_000 });
    const wait = /HTTP 429 rate_limited[\s\S]*retry in (\d+) s/.exec(r.stderr);
    if (r.exitCode !== 0 && wait && Date.now() + Number(wait[1]) * 1000 < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Number(wait[1]) * 1000));
      continue;
    }
    expect(r.exitCode, `chat exit ${r.exitCode}: ${r.stdout}\n${r.stderr}`).toBe(0);
    return r.json;
  }
}

/** Waits until the gateway answers /healthz (after a restart it takes 10-20 s to come up). */
async function waitHealthy(timeoutMs = 120_000): Promise<number> {
  const t = Date.now();
  const r = await world.container.sh(`for i in $(seq 1 ${Math.ceil(timeoutMs / 500)}); do curl -fsS -o /dev/null http://127.0.0.1:${GATEWAY_PORT}/healthz 2>/dev/null && exit 0; sleep 0.5; done; exit 1`, { timeoutMs: timeoutMs + 10_000 });
  expect(r.exitCode, `the gateway did not answer /healthz within ${seconds(timeoutMs)}`).toBe(0);
  return Date.now() - t;
}

async function doctorIds(): Promise<string[]> {
  const r = await world.deploy('doctor --list-checks --json');
  expect(r.exitCode, r.stderr).toBe(0);
  return (r.json as { checks: Array<{ id: string }> }).checks.map((c) => c.id);
}

/** Every failing check of a doctor --json result except `os` (Debian is unsupported on purpose). */
function failing(doctor: any): Array<{ id: string; status: string; message: string }> {
  return (doctor?.checks ?? []).filter((c: { id: string; status: string }) => c.id !== 'os' && (c.status === 'fail' || c.status === 'crashed'));
}

beforeAll(async () => {
  log('setting up: artifacts, loopback stand-ins, container');
  await world.open();
}, budget(15 * 60_000));

afterAll(async () => {
  report.totalMs = Date.now() - started;
  report.argvSamples = world.argv.samples;
  report.processesSeen = world.argv.processesSeen;
  report.notes = world.notes;
  report.timings = world.timings;
  Object.assign(report, failure());
  await world.close();
  cleanupTempDirs();
  fs.mkdirSync(E2E_CACHE, { recursive: true });
  fs.writeFileSync(path.join(E2E_CACHE, `last-run-${world.suite}.json`), JSON.stringify(report, null, 2) + '\n');
  if ((report.quickstart as QuickstartRun | undefined)?.walkthrough) log((report.quickstart as QuickstartRun).walkthrough.line);
}, 5 * 60_000);

describe.sequential(`a partner deploys and operates the agent on a real server (${world.release}, systemd)`, () => {
  let fresh: InstallRun;
  let backupArchive = '';
  let token = '';
  let knock = '';
  let beforeInstall: SystemSnapshot | undefined;
  let rotatedOutKey = '';

  step("0. the release signature on this suite's OpenSSL: tampered sums, another key, an Ed25519 signature and none are refused, nothing installed", 3 * 60_000, async () => {
    world.notes.push(`release signature: ${await signatureRefusedOnThisOpenssl(world)}`);
  });

  step('1. docs/quickstart.md as written (the first install: sudo, --answers, --channel), then the catalog deploy over it -> exit 0, JSON result', 20 * 60_000, async () => {
    await prepareQuickstart(world);
    beforeInstall = await systemSnapshot(world);
    report.quickstart = await runQuickstart(world);
    fresh = await world.installSh('--catalog');
    expectInstallOk(fresh);
    const ids = fresh.json.steps.map((s: { id: string }) => s.id);
    expect(ids).toEqual(expect.arrayContaining(['preflight', 'system-packages', 'node-runtime', 'agent-runtime', 'mesh-client', 'memory', 'context-engine', 'mcp', 'browser', 'runtime-config', 'gateway-service', 'guard', 'health']));
    expect(ids.filter((id: string) => id.startsWith('channel')).length, `channel steps in ${ids}`).toBeGreaterThan(0);
    expect(fresh.stderr).toContain('SERVICE_ALLOW_UNSUPPORTED_OS=1'); // install.sh's warning: Debian is not supported
    expect(fresh.stderr).toContain('SHA256SUMS: signature verified'); // a signed release (test/e2e/artifacts.ts serves dist/)
    log(`install.sh: ${fresh.stderr.match(/downloading service-deploy-linux-\S+/)?.[0] ?? 'no download line'}`);
    const split = timeSplit(fresh);
    report.freshInstall = { wallMs: fresh.wallMs, ...split, recap: fresh.json.recap };
    log(`catalog deploy over the quickstart's install (recap ${JSON.stringify(fresh.json.recap)}): ${seconds(fresh.wallMs)} wall = our work ${seconds(split.oursMs)} + apt/npm downloads ${seconds(split.downloadsMs)} + install.sh/binary download ${seconds(split.bootstrapMs)}`);
    log(`  ${split.detail}`);
    const env = world.channelEnv();
    token = env.SERVICE_CHANNEL_TOKEN ?? '';
    knock = env.SERVICE_CHANNEL_KNOCK ?? '';
    expect(token.length).toBeGreaterThanOrEqual(16);
    expect(knock.length).toBeGreaterThanOrEqual(16);
    world.secrets.channelToken = token;
    world.secrets.channelKnock = knock;
    report.channelLimits = limitsSkippedInContainer(fresh);
  });

  step('2. gateway user service active with the drop-in variables; /healthz; nginx on 18790; cron entry; mesh client', 3 * 60_000, async () => {
    const c = world.container;
    expect(await world.userUnit('ActiveState')).toBe('active');
    const pid = Number(await world.userUnit('MainPID'));
    expect(pid).toBeGreaterThan(0);
    // The running gateway's environment holds channel.env's values (compared inside; values never printed).
    const envCheck = await c.ok(`set -a; . /root/.openclaw/channel.env; set +a
for v in SERVICE_CHANNEL_TOKEN SERVICE_CHANNEL_KNOCK SERVICE_TS_HOSTNAME; do
  want="\${!v}"; have="$(tr '\\0' '\\n' </proc/${pid}/environ | sed -n "s/^$v=//p")"
  if [ -n "$want" ] && [ "$want" = "$have" ]; then echo "ok $v"; else echo "missing $v"; fi
done
test -f /root/.config/systemd/user/${GATEWAY_UNIT}.d/service-env.conf && echo "ok drop-in"`);
    expect(envCheck.trim().split('\n')).toEqual(['ok SERVICE_CHANNEL_TOKEN', 'ok SERVICE_CHANNEL_KNOCK', 'ok SERVICE_TS_HOSTNAME', 'ok drop-in']);
    expect(await c.ok(`curl -fsS -o /dev/null -w '%{http_code}' http://127.0.0.1:${GATEWAY_PORT}/healthz`)).toBe('200');
    // The deployment's memory at rest (issue 26): deployed, no chat yet.
    const atRest = await footprint(world);
    report.memoryAtRest = atRest;
    log(`memory at rest: ${describeFootprint(atRest)}; server MemTotal ${(atRest.server.totalKiB / 1024).toFixed(0)} MiB, MemAvailable ${(atRest.server.availableKiB / 1024).toFixed(0)} MiB`);
    const listening = await c.ok(`ss -Hltnp`);
    expect(listening).toMatch(new RegExp(`:${CHANNEL_PORT}\\s.*nginx`));
    // The gateway itself listens on loopback only.
    const gatewayLines = listening.split('\n').filter((l) => new RegExp(`:${GATEWAY_PORT}\\s`).test(l));
    expect(gatewayLines.length).toBeGreaterThan(0);
    for (const line of gatewayLines) expect(line).toMatch(new RegExp(`(127\\.0\\.0\\.1|\\[::1\\]):${GATEWAY_PORT}\\s`));
    expect(await c.ok('systemctl is-active nginx cron')).toBe('active\nactive\n');
    const cron = await c.ok('cat /etc/cron.d/service-guard');
    expect(cron).toMatch(/^\d+ \* \* \* \* root .*service-guard\.sh/m);
    expect(await c.ok('test -x /usr/local/bin/service-guard.sh && test -x /usr/local/bin/service-deploy && echo yes')).toBe('yes\n');
    expect(await c.ok(`${USER_ENV} loginctl show-user root --property=Linger`)).toBe('Linger=yes\n');
    // Real dpkg state of the mesh client from the signed loopback repository, logged in.
    expect(await c.ok(`dpkg-query -W -f='\${Status}' tailscale`)).toBe('install ok installed');
    expect(JSON.parse(await c.ok('tailscale status --json')).Self.HostName).toBe('openclaw-acme-dental-e2e');
    // Pinned components where the install put them.
    expect((await c.ok('/opt/service-deploy/node/bin/node --version')).trim()).toBe(`v${components.node.version}`);
    // The gateway runs on it (the pinned Node 26.12.1); the binary names the Node it is built on.
    expect(await gatewayNode(world)).toEqual({ exe: '/opt/service-deploy/node/bin/node', version: components.node.version });
    expect(await c.ok('/usr/local/bin/service-deploy --version --verbose')).toMatch(new RegExp(`^service-deploy \\S+\\nNode\\.js ${EMBEDDED_NODE.replaceAll('.', '\\.')} linux-${process.arch} \\(`));
    // libatomic1 (Node >= 25 links it; the root had none, as minimal images): added by the install, recorded for uninstall.
    expect(await c.ok(`dpkg-query -W -f='\${Status}' libatomic1`)).toBe('install ok installed');
    expect(JSON.parse(await c.ok('cat /opt/service-deploy/openclaw-current/package.json')).version).toBe(components.openclaw.version);
    expect(world.mcp.initializes.some((i) => i.authorized)).toBe(true);
    const cfg = world.runtimeConfig();
    expect(Object.keys(cfg.models.providers)).toEqual([PROVIDER]);
    expect(cfg.agents.defaults.model.primary).toBe(`${PROVIDER}/${DEFAULT_MODEL}`);
    expect(fs.statSync(world.container.hostPath('/root/.openclaw/openclaw.json')).mode & 0o777).toBe(0o600);
    // The service profile overrides are recorded, so the hourly guard keeps them.
    const answers = fs.readFileSync(world.container.hostPath('/var/lib/service-deploy/answers.json'), 'utf8');
    expect(answers).toContain(world.ai.url);
    expect(fs.statSync(world.container.hostPath('/var/lib/service-deploy/answers.json')).mode & 0o777).toBe(0o600);
    // Right after the fresh install: no secret in a world-readable file or the logs.
    const scan = await scanWorldReadable(c, world.secrets);
    expect(scan.files).toEqual([]);
    expect(await filesWithSecrets(c, world.secrets, LOGS)).toEqual([]);
  });

  step('3. signed chat through nginx gets the stand-in model reply; wrong knock -> no response; 11th request in a minute -> 429; straight to the gateway (the mesh side) the route is absent', 5 * 60_000, async () => {
    const answer = await chat('hello from the e2e');
    expect(answer.model).toBe(`${PROVIDER}/${DEFAULT_MODEL}`);
    expect(answer.reply).toContain(`STAND-IN REPLY from ${DEFAULT_MODEL}`);
    expect(answer.reply).toContain('hello from the e2e');
    expect(answer.sessionId).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]*$/);
    expect(world.ai.requests.length).toBeGreaterThan(0);
    expect(world.ai.requests.every((r) => r.authorized)).toBe(true);

    // Knock missing or wrong: nginx closes the connection without a response (444).
    for (const wrong of [undefined, 'not-the-knock', knock.slice(0, -1)]) {
      const r = await channelPost({ knock: wrong });
      expect(r.status, `knock ${wrong === undefined ? 'missing' : 'wrong'} got a response`).toBeUndefined();
      expect(r.error).toBeTruthy();
    }
    // Rate limit per client IP: 127.0.0.2 is a fresh client. 10 pass the limit (and are
    // refused by the plugin: no bearer), the 11th within the minute is 429.
    const statuses: Array<number | string | undefined> = [];
    for (let i = 0; i < 11; i++) {
      const r = await channelPost({ knock, localAddress: '127.0.0.2' });
      statuses.push(r.status ?? r.error);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses[10]).toBe(429);
    report.rateLimit = statuses;
    report.edgePaths = await meshPathRefusedEdgePathWorks(world);
  });

  step('3b. nginx: nothing on port 80; its sandbox drop-in applied (exposure <= 5), reload, logs, log rotation and restart still work', 5 * 60_000, async () => {
    report.nginx = await nginxHardened(world, chat);
  });

  step('4. re-run with the same answers: 0 changed, gateway not restarted', 5 * 60_000, async () => {
    const pidBefore = await world.userUnit('MainPID');
    const rerun = await world.installSh('--catalog');
    expectInstallOk(rerun);
    const changed = rerun.json.steps.filter((s: { status: string }) => s.status === 'changed');
    expect(rerun.json.recap.changed, `changed steps: ${JSON.stringify(changed)}`).toBe(0);
    expect(await world.userUnit('MainPID')).toBe(pidBefore);
    report.rerun = { wallMs: rerun.wallMs, binaryMs: rerun.json.durationMs, recap: rerun.json.recap };
    log(`re-run (no changes): ${seconds(rerun.wallMs)} wall, the binary ${seconds(rerun.json.durationMs)}`);
  });

  step('5. re-run with a new model and a new service API key (rotation, docs/operator.md): the model changes and chat answers report it; the gateway uses the new key, the old one is gone from the config, the secret source and the stored answers', 5 * 60_000, async () => {
    const pidBefore = await world.userUnit('MainPID');
    rotatedOutKey = rotateApiKeyInAnswers(world);
    const run = await world.installSh('--catalog', { SERVICE_MODEL: NEW_MODEL });
    expectInstallOk(run);
    expect(run.json.steps.find((s: { id: string }) => s.id === 'runtime-config').status).toBe('changed');
    expect(run.json.steps.find((s: { id: string }) => s.id === 'runtime-secrets').status).toBe('changed');
    expect(world.runtimeConfig().agents.defaults.model.primary).toBe(`${PROVIDER}/${NEW_MODEL}`);
    expect(await world.userUnit('MainPID')).not.toBe(pidBefore); // restarted once to load both
    report.modelChange = { wallMs: run.wallMs, recap: run.json.recap };
    const requestsBefore = world.ai.requests.length;
    const answer = await chat('which model are you');
    expect(answer.model).toBe(`${PROVIDER}/${NEW_MODEL}`);
    expect(answer.reply).toContain(`STAND-IN REPLY from ${NEW_MODEL}`);
    expect(world.ai.requests.at(-1)?.model).toBe(NEW_MODEL);
    // The AI gateway stand-in now accepts the new key only.
    const since = world.ai.requests.slice(requestsBefore);
    expect(since.length).toBeGreaterThan(0);
    expect(since.every((r) => r.authorized), 'model requests after the rotation carry the new key').toBe(true);
    report.keyRotation = await oldKeyGone(world, rotatedOutKey);
  });

  step('5a. the paired browser after the rotation (its device token and the old key refused, the new key once and it is back without a new approval), then revoked with `devices remove`; the old key nowhere on the server', 5 * 60_000, async () => {
    const deviceId = (report.quickstart as QuickstartRun).pairing!.deviceId;
    report.deviceAfterRotation = await pairedBrowserAfterRotationThenRevoked(world, deviceId, rotatedOutKey);
    expect((report.keyRotation as { filesWithOldKey: string[] }).filesWithOldKey, 'files on the server still holding the old key').toEqual([]);
  }, { independent: true });

  step('5b. memory: the real QMD finds a memory file through qmd mcp; display name; a heartbeat run is ok; the guard script runs', 15 * 60_000, async () => {
    report.memory = await memoryAndHeartbeat(world);
  });

  step('5c. no process per chat: 36 chats in distinct sessions add no process, every turn has the QMD tools, the agent\'s qmd__query reaches the resident QMD; the memory bound and what it depends on', 10 * 60_000, async () => {
    report.processesOverChats = await noProcessPerChat(world, chat, token, knock, (report.memory as { memoryWord: string }).memoryWord);
    report.memoryBound = await memoryBoundFacts(world);
  });
  // Failed while the pinned runtime kept a `qmd mcp` chain per session (before the
  // resident QMD service, issue 26 item 1). Nothing after it builds on it. On trixie,
  // the newest systemd and Chromium, where a browser once left the gateway's cgroup;
  // the probe refuses to count another container's processes (it counted other jobs'
  // gateways, and a browser of one, before each container had cgroups of its own).
  suiteStep('trixie', "5d. soak, short form: ~250 signed chats over 100 portal sessions from 12 addresses; the gateway unit's process count does not grow with them", 30 * 60_000, async () => {
    report.soakShort = await shortSoak(world, { token, knock });
  }, { independent: true });
  // On bookworm: trixie has the soak's short form, and the two jobs, which run at once,
  // take about as long (bookworm with both ran past the e2e's 55-minute budget).
  defaultSuiteStep(`5e. Node: a server on the previous pin (${PREVIOUS_NODE_VERSION}, every server before this release) answers and doctor fails its Node; a re-run upgrades it to ${components.node.version} (the gateway on it, answering); rollback by hand and the upgrade again`, 30 * 60_000, async () => {
    const { reply, ...previous } = await serverOnPreviousNode(world, chat);
    report.nodeUpgrade = { previous, ...(await upgradeFromPreviousNode(world, chat, reply)) };
  });

  step('6. tampering: doctor names each; guard restores the providers; doctor --fix the rest; doctor passes', 6 * 60_000, async () => {
    const c = world.container;
    // a) a direct model-vendor provider next to the service's
    const cfg = world.runtimeConfig();
    cfg.models.providers.openai = { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-direct-vendor-key-e2e', api: 'openai-completions', models: [{ id: 'gpt-4o', name: 'gpt-4o' }] };
    fs.writeFileSync(c.hostPath('/root/.openclaw/openclaw.json'), JSON.stringify(cfg, null, 2), { mode: 0o600 });
    // b) the drop-in deleted, c) the malformed limit_conn directive, proxy restarted with it (fails, as on a real server)
    await c.ok(`rm /root/.config/systemd/user/${GATEWAY_UNIT}.d/service-env.conf
sed -i 's/limit_conn service_cn/limit_conn zone=service_cn/' /etc/nginx/conf.d/service-channel.conf
grep -q 'limit_conn zone=' /etc/nginx/conf.d/service-channel.conf
systemctl restart nginx || true`);

    const before = await world.deploy('doctor --json');
    expect(before.exitCode).toBe(1);
    const failed = failing(before.json);
    const byId = Object.fromEntries(failed.map((f) => [f.id, f]));
    expect(Object.keys(byId), JSON.stringify(failed, null, 1)).toEqual(expect.arrayContaining(['providers', 'channel-drop-in', 'nginx-limit-conn']));
    expect(byId.providers!.message).toContain('openai');
    expect(byId['channel-drop-in']!.message).toMatch(/service-env\.conf|drop-in/);
    expect(byId['nginx-limit-conn']!.message).toMatch(/zone=/);
    report.doctorTampered = failed.map((f) => f.id);

    const guard = await world.deploy('guard --json');
    expect(guard.exitCode, `${guard.stdout}\n${guard.stderr}`).toBe(0);
    const restored = (guard.json.restorations as Array<{ what: string }>).map((r) => r.what).join('; ');
    expect(restored).toMatch(/provider/);
    expect(Object.keys(world.runtimeConfig().models.providers)).toEqual([PROVIDER]);
    report.guardRestored = restored;
    // The guard restarted the gateway (config and drop-in changed) and does not wait for it;
    // an operator waits for it to come up before the next doctor run.
    report.healthAfterGuardMs = await waitHealthy();

    const fixed = await world.deploy('doctor --fix --json');
    expect(failing(fixed.json), JSON.stringify(fixed.json?.fixes)).toEqual([]);
    await waitHealthy();
    const ids = (await doctorIds()).filter((id) => id !== 'os');
    const after = await world.deploy(`doctor --json ${ids.join(' ')}`);
    expect(after.exitCode, JSON.stringify(failing(after.json))).toBe(0);
    expect(after.json.ok).toBe(true);
    const os = (await world.deploy('doctor --json os')).json.checks[0];
    // Debian stands in for Ubuntu; with SERVICE_ALLOW_UNSUPPORTED_OS=1 (as the install
    // was run) doctor warns about it instead of failing.
    expect(os.status).toBe('warn');
    const whole = await world.deploy('doctor --json');
    expect(whole.exitCode, JSON.stringify(failing(whole.json))).toBe(0);
    doctorWarnsLimits(whole.json);
    report.doctorAfterFix = after.json.summary;
    expect(await c.ok(`test -f /root/.config/systemd/user/${GATEWAY_UNIT}.d/service-env.conf && grep -c 'limit_conn service_cn 3;' /etc/nginx/conf.d/service-channel.conf`)).toBe('1\n');
    const answer = await chat('still there after the repairs?');
    expect(answer.model).toBe(`${PROVIDER}/${NEW_MODEL}`);
  });

  defaultSuiteStep('6b. single damages (chmod, chown, truncate, delete, edits, stopped services, a downgrade): doctor names each, --fix repairs the fixable ones', 20 * 60_000, async () => {
    report.damages = await runE2eDamages(world);
  });

  step("6c. stores: logrotate rotates the channel's log (nginx reopens), the session budget in force, doctor's stores passes; the mesh node key expiring warns, expired fails", 5 * 60_000, async () => {
    report.stores = await storesOnServer(world);
  });

  suiteStep('trixie', '6d. a gateway that stopped itself at a start on a busy server (exit 78, left failed by systemd): the guard reads why from the real journal and starts it again', 8 * 60_000, async () => {
    const c = world.container;
    // The gateway's start is replaced for one run by a process that says what the pinned
    // release says when its state lease worker misses the 5 s limit (its lines as stop 36's
    // CI journal had them; test/runtime/gateway-refusal.test.ts makes the release itself
    // say them) and exits 78. A slow worker cannot be made on purpose here: made slow
    // everywhere, the gateway's own lease fails first and exits 1 (systemd restarts that).
    const dropIn = `/root/.config/systemd/user/${GATEWAY_UNIT}.d/zz-e2e-refusal.conf`;
    const say = BUSY_START_LINES.map((line) => `echo '${line}'`).join('; ');
    const state = `${USER_ENV} systemctl --user show --property=ActiveState,ExecMainStatus ${GATEWAY_UNIT}`;
    try {
      await c.ok(`cat > ${dropIn} <<'EOF'\n[Service]\nExecStart=\nExecStart=/bin/sh -c "${say}; exit 78"\nEOF\n${USER_ENV} systemctl --user daemon-reload && ${USER_ENV} systemctl --user restart ${GATEWAY_UNIT}`);
      const parked = await c.sh(`for i in $(seq 1 240); do s=$(${state}); case "$s" in *ActiveState=failed*) case "$s" in *ExecMainStatus=78*) exit 0 ;; esac ;; esac; sleep 0.5; done; echo "$s"; exit 1`, { timeoutMs: 180_000 });
      expect(parked.exitCode, `the unit is not failed with exit 78: ${parked.stdout}`).toBe(0);
    } finally {
      await c.ok(`rm -f ${dropIn}; ${USER_ENV} systemctl --user daemon-reload`);
    }
    // Still failed after the reload: systemd does not restart an exit 78 (RestartPreventExitStatus).
    expect(await world.userUnit('ActiveState')).toBe('failed');
    const check = await world.deploy('guard --check --json');
    expect(check.exitCode, `${check.stdout}\n${check.stderr}`).toBe(0);
    expect(check.json).toMatchObject({ check: true, restarted: false, restorations: [{ what: GATEWAY_UNIT }] });
    expect(await world.userUnit('ActiveState')).toBe('failed');
    const guard = await world.deploy('guard --json');
    expect(guard.exitCode, `${guard.stdout}\n${guard.stderr}`).toBe(0);
    expect(guard.json).toMatchObject({ restarted: true, restorations: [{ what: GATEWAY_UNIT, after: 'started again', before: expect.stringMatching(/stopped itself at its start, the server too busy \(Gateway failed to start: OpenClaw startup migrations/) }] });
    report.parkedGatewayBackMs = await waitHealthy(300_000);
    expect(await world.userUnit('ActiveState')).toBe('active');
    expect((await world.deploy('guard --json')).json).toMatchObject({ changed: false, restarted: false });
  });

  step('7. --reset-clean: backup holds config + workspace; runtime, mesh client, config, workspace gone; restore brings it back', 12 * 60_000, async () => {
    const c = world.container;
    await c.ok('mkdir -p /root/.openclaw/workspace && echo "e2e memory marker" >/root/.openclaw/workspace/E2E-MARKER.md');
    // Chat traffic through the channel while the reset runs (lifecycle.ts).
    const traffic = chatTraffic(token, knock);
    await traffic.answered(3);
    const resetStartedAt = Date.now();
    const reset = await world.installSh('--reset-clean --yes --json');
    const exchanges = await traffic.stop();
    expect(reset.exitCode, `${reset.stdout}\n${reset.stderr}`).toBe(0);
    const archive: string = reset.json.backup;
    backupArchive = archive;
    expect(archive).toMatch(/^\/tmp\/openclaw-backup-\d{8}-\d{6}\.tar\.gz$/);
    expect(await c.ok(`stat -c %a ${archive}`)).toBe('600\n');
    const entries = (await c.ok(`tar -tzf ${archive}`)).split('\n');
    expect(entries.some((e) => /(^|\/)root\/\.openclaw\/openclaw\.json$/.test(e)), entries.join('\n')).toBe(true);
    expect(entries.some((e) => /(^|\/)root\/\.openclaw\/workspace\/E2E-MARKER\.md$/.test(e))).toBe(true);
    const gone = await c.sh(`for p in /opt/service-deploy/node /usr/bin/tailscale /root/.openclaw /root/.openclaw/workspace /var/lib/service-deploy /etc/cron.d/service-guard; do test -e $p && echo "still there: $p"; done
dpkg-query -W -f='\${Status}\\n' tailscale 2>/dev/null | grep -q 'install ok installed' && echo 'still installed: tailscale'
ss -Hltn | grep -q ':${GATEWAY_PORT}\\s' && echo 'still listening: ${GATEWAY_PORT}'
true`);
    expect(gone.stdout.trim()).toBe('');
    report.reset = { wallMs: reset.wallMs, entries: reset.json.entries };

    // restore with a new mesh auth key in the environment (a reset logs the node out)
    const restore = await world.deploy(`restore ${archive} --json`, { answers: true, timeoutMs: 12 * 60_000 });
    expect(restore.exitCode, `${restore.stdout.slice(-3000)}\n${restore.stderr.slice(-3000)}`).toBe(0);
    report.restore = { wallMs: restore.ms };
    expect(await world.userUnit('ActiveState')).toBe('active');
    expect(await c.ok(`curl -fsS -o /dev/null -w '%{http_code}' http://127.0.0.1:${GATEWAY_PORT}/healthz`)).toBe('200');
    expect(await c.ok('cat /root/.openclaw/workspace/E2E-MARKER.md')).toBe('e2e memory marker\n');
    expect(await c.ok(`dpkg-query -W -f='\${Status}' tailscale`)).toBe('install ok installed');
    expect(world.channelEnv().SERVICE_CHANNEL_TOKEN).toBe(token);
    const answer = await chat('back after the restore?');
    expect(answer.model).toBe(`${PROVIDER}/${NEW_MODEL}`);
    expect(answer.reply).toContain('back after the restore?');
    report.trafficDuringReset = await exchangesRestored(world, exchanges, resetStartedAt);
  });

  step('7b. memory after restore: the index was in the backup and finds the memory file again', 5 * 60_000, async () => {
    await memoryAfterRestore(world);
  });

  step('8. confinement (after the restore): exfiltration attempts refused, MCP/browser/workspace still work, sandbox exposure, the runtime\'s own audits', 15 * 60_000, () => confinementStep(world, chat, report));

  defaultSuiteStep('8b. crafted backups on a real /: refused ones change nothing (hashes of /etc /usr /root /var/lib), an accepted one gets the install\'s modes', 15 * 60_000, async () => {
    const t = Date.now();
    report.craftedArchives = { ...(await craftedArchivesOnRealRoot(world, backupArchive)), wallMs: Date.now() - t };
    log(`crafted archives: ${JSON.stringify(report.craftedArchives)}`);
  });

  defaultSuiteStep('8c. the locked trees (issue 29): doctor finds the installed OpenClaw and QMD trees are the shipped locks (0 differences) and names a changed package; a server of the earlier layout (OpenClaw global in the Node prefix) converges on a re-run with its sessions and memory intact', 20 * 60_000, async () => {
    report.lockedTrees = await lockedTreesOnServer(world, chat);
  });

  // Issue 19's real-server part (on trixie: bookworm carries the soak's short form, the
  // Node upgrade and the damages, and both jobs run at once). It leaves the server on the
  // earlier release; what follows (secret scans, uninstall) does not depend on the version.
  suiteStep('trixie', '9. lifecycle: an on-demand backup (writers paused, databases checked); a gateway restart during an agent turn drains it and delivers the answer', 10 * 60_000, async () => {
    report.backupOnDemand = await consistentBackupOnServer(world, chat);
    report.restartDuringTurn = await restartDuringTurn(world, chat);
  });

  suiteStep('trixie', '9b. upgrades: an earlier release from the registry upgraded to the pinned one, rolled back by hand; an upgrade to a broken build rolls back by itself', 30 * 60_000, async () => {
    const broken = await packBrokenBuild(world);
    const { reply: earlier, ...installed } = await earlierReleaseInstalled(world, chat);
    const { reply: later, ...upgraded } = await upgradeFromEarlierRelease(world, chat, earlier);
    Object.assign(report, { earlierRelease: installed, upgrade: upgraded });
    report.rollbackByHand = await rollbackByHand(world, chat, earlier, later);
    report.brokenUpgrade = await brokenUpgradeRollsBack(world, chat, broken);
  });

  step('no secret in process arguments, the install/guard logs or any world-readable file', 5 * 60_000, async () => {
    world.argv.stop();
    expect([...world.argv.leaks.keys()], `leaks seen in ${world.argv.samples} samples`).toEqual([]);
    expect(await filesWithSecrets(world.container, world.secrets, LOGS)).toEqual([]);
    const scan = await scanWorldReadable(world.container, world.secrets);
    expect(scan.files).toEqual([]);
    report.secretScan = { argvSamples: world.argv.samples, processes: world.argv.processesSeen, worldReadableFilesScanned: scan.scanned, secretsChecked: Object.keys(world.secrets) };
    log(`secret scans: ${world.argv.samples} argv samples over ${world.argv.processesSeen} processes, ${scan.scanned} world-readable files, ${LOGS.length} logs: clean`);
  });

  step('10. uninstall: dpkg -l and /etc as before the first install; nothing of ours left', 15 * 60_000, async () => {
    report.uninstall = await uninstallLeavesNothing(world, beforeInstall!);
  });
});
