// npm run soak (scripts/soak.mjs bundles and runs this): the deployment under months of
// portal traffic, compressed (issue 26 item 5; docs/operations.md, "Soak"). On a booted
// server of the e2e (harness.ts), limited to a small server's memory (soak-host.ts):
// the catalog deploy, the memory at rest, then thousands of signed chats over hundreds of
// portal sessions from 12 client addresses (soak-traffic.ts), the heartbeat shortened,
// a gateway restart and a guard run in the middle, a sample every minute (soak-run.ts).
// Prints the table and the verdicts, writes soak.json, soak.txt and soak.svg to
// SOAK_OUT; exit 1 when an acceptance figure is missed.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from '../helpers/binary.js';
import { E2E_CACHE } from './artifacts.js';
import { World, log, seconds } from './harness.js';
import { PROCESS_SHARE, RECOMMENDED_MEMORY, planTraffic, renderReport, summarize, type ChatRecord, type SoakSample } from './soak.js';
import { MemoryLimit, ServerProbe } from './soak-host.js';
import { renderSvg, type Marker } from './soak-plot.js';
import { SoakRecorder, restartGateway, setHeartbeatEvery, waitHealthy, waitReady } from './soak-run.js';
import { AddressPool, ChannelClient, SoakDriver } from './soak-traffic.js';

/** SIZE: bytes, or a number with K, M, G (binary); 0: none. */
function bytes(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMG]?)i?B?$/i.exec(text.trim());
  if (!m) throw new Error(`SOAK_MEMORY_MAX=${text}: give a size such as 2G, 1536M or 0 (none)`);
  return Math.round(Number(m[1]) * 1024 ** ' KMG'.indexOf((m[2] || ' ').toUpperCase()));
}

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}=${process.env[name]}: give a number`);
  return value;
}

const settings = {
  sessions: positive('SOAK_SESSIONS', 520),
  chats: positive('SOAK_CHATS', 2000),
  concurrency: positive('SOAK_CONCURRENCY', 4),
  sampleMs: positive('SOAK_SAMPLE_S', 60) * 1000,
  restMs: positive('SOAK_REST_S', 120) * 1000,
  idleMs: positive('SOAK_IDLE_S', 0) * 1000,
  heartbeat: process.env.SOAK_HEARTBEAT ?? '1m',
  memoryMax: bytes(process.env.SOAK_MEMORY_MAX ?? '2G'),
  seed: positive('SOAK_SEED', 26),
  /** The traffic stops after this many minutes whatever is left of the plan (0: none); the report says how far it got. */
  budgetMs: positive('SOAK_BUDGET_MIN', 0) * 60_000,
  retryBudgetMs: positive('SOAK_RETRY_S', 600) * 1000,
  out: path.resolve(process.env.SOAK_OUT ?? path.join(E2E_CACHE, 'soak')),
  /** Where in the run (share of the plan's chats) the gateway restart and the guard run happen. */
  restartAt: 0.35,
  guardAt: 0.65,
};

/** What a run leaves in soak.json, from which the table and the plot are made (again: SOAK_REPORT). */
export interface SoakRun {
  startedAt: string;
  commit: string;
  release: string;
  settings: typeof settings;
  memoryLimit: { bytes: number; cgroup: string; version: number } | null;
  events: Array<Marker & { atMs: number; detail?: string }>;
  notes: string[];
  planned: number;
  stoppedAtBudget: boolean;
  interrupted: boolean;
  samples: SoakSample[];
  chats: ChatRecord[];
}

/** Summary, table and plot of a run, written to `out` (soak.svg, soak.txt) and printed; true when every verdict passed. */
function writeReport(run: SoakRun, out: string): boolean {
  const summary = summarize(run.samples, run.chats);
  // Chats the plan had and the traffic never sent (a time budget, an interruption) are not answered chats.
  const sent = run.chats.length;
  if (run.planned > 0) summary.verdicts.unshift({ name: 'the whole plan ran', ok: sent >= run.planned, detail: `${sent} of ${run.planned} planned chats sent${run.stoppedAtBudget ? ` (stopped at the time budget, SOAK_BUDGET_MIN=${run.settings.budgetMs / 60_000})` : run.interrupted ? ' (interrupted)' : ''}` });
  summary.ok = summary.verdicts.every((v) => v.ok) && !run.interrupted;
  const text = renderReport(run.samples, summary);
  const limitText = run.memoryLimit ? `${(run.memoryLimit.bytes / 2 ** 30).toFixed(1)} GiB server, ${summary.oomKills} OOM kills` : 'no memory limit';
  const subtitle = `${run.commit} · ${run.release} · ${limitText} · ${summary.chats} chats, ${summary.sessions} sessions · ${run.startedAt.slice(0, 16)}Z`;
  const svg = renderSvg(run.samples, { title: 'Soak: memory and processes over chats', subtitle, budgetBytes: RECOMMENDED_MEMORY * PROCESS_SHARE, events: run.events });
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'soak.svg'), svg);
  fs.writeFileSync(path.join(out, 'soak.txt'), `${subtitle}\n\n${text}\n`);
  process.stdout.write(`\n${subtitle}\n\n${text}\n\n`);
  for (const e of run.events) process.stdout.write(`event at ${e.x} chats (${(e.atMs / 60_000).toFixed(1)} min): ${e.label}${e.detail ? `: ${e.detail}` : ''}\n`);
  for (const note of run.notes) process.stdout.write(`note: ${note}\n`);
  process.stdout.write(`written: ${path.join(out, 'soak.svg')}, soak.txt\n`);
  return summary.ok;
}

// SOAK_REPORT=path/to/soak.json: the table and the plot of an earlier run, made again (no server).
if (process.env.SOAK_REPORT) {
  const file = path.resolve(process.env.SOAK_REPORT);
  const ok = writeReport(JSON.parse(fs.readFileSync(file, 'utf8')) as SoakRun, process.env.SOAK_OUT ? settings.out : path.dirname(file));
  process.exit(ok ? 0 : 1);
}

const started = Date.now();
// The commit the run starts from: the checkout may move on while it runs (an hour).
const startCommit = commit();
const notes: string[] = [];
const events: SoakRun['events'] = [];
const limit = settings.memoryMax > 0 ? MemoryLimit.create(settings.memoryMax, `sd-soak-${process.pid}`) : undefined;
const world = new World({ cgroup: limit?.dir });
let recorder: SoakRecorder | undefined;
let driver: SoakDriver | undefined;
let interrupted = false;
let stoppedAtBudget = false;
let planned = 0;

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping the traffic; the report so far follows, then teardown`);
    driver?.stop();
  });
}

function commit(): string {
  try {
    return execFileSync('git', ['-C', REPO, 'describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

async function install(): Promise<void> {
  // The first gateway start can outlast the install's health budget on a loaded machine;
  // the install says to run it again (it continues where it stopped), as an operator would.
  for (let attempt = 1; ; attempt++) {
    const run = await world.installSh('--catalog');
    log(`catalog deploy (attempt ${attempt}): exit ${run.exitCode} in ${seconds(run.wallMs)}, recap ${JSON.stringify(run.json?.recap)}`);
    if (run.exitCode === 0) return;
    const failed = (run.json?.steps ?? []).filter((s: { status: string }) => s.status === 'failed').map((s: { id: string }) => s.id);
    if (attempt >= 3) throw new Error(`the catalog deploy failed ${attempt} times (last: ${failed.join(', ')}):\n${world.masked(run.stderr.slice(-3000))}`);
    notes.push(`catalog deploy attempt ${attempt} failed at ${failed.join(', ') || '?'} (machine load ${os.loadavg()[0]!.toFixed(1)}); run again`);
  }
}

/** The server's guard.log: the hourly guard from cron and the bench's own guard run both write it. */
const GUARD_LOG = '/var/log/service-deploy/guard.log';
let guardLogSeen = 0;
function guardLogLines(): string[] {
  try {
    return fs.readFileSync(world.container.hostPath(GUARD_LOG), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * The hourly guard (cron, at minute 30) puts the managed 30-minute heartbeat back and
 * restarts the gateway, as on any server: an event, and the soak's heartbeat again
 * (without this, an hour into the soak its quiet spells had no heartbeat any more).
 */
async function hourlyGuard(): Promise<void> {
  const lines = guardLogLines();
  if (lines.length < guardLogSeen) guardLogSeen = 0; // rotated
  const fresh = lines.slice(guardLogSeen);
  guardLogSeen = lines.length;
  const restored = fresh.filter((line) => / restored /.test(line));
  if (restored.length === 0) return;
  event('hourly guard (cron)', restored.map((line) => line.replace(/^\S+ /, '')).join('; '));
  if (restored.some((line) => line.includes('agents.defaults.heartbeat'))) {
    // Not while the gateway the guard restarted is starting (waitReady says why).
    await waitReady(world);
    setHeartbeatEvery(world, settings.heartbeat);
    event(`heartbeat every ${settings.heartbeat} again`);
  }
}

function event(label: string, detail?: string): void {
  const chats = driver?.progress.answered ?? 0;
  events.push({ x: chats, label, atMs: Date.now() - started, ...(detail ? { detail } : {}) });
  log(`event at ${chats} chats: ${label}${detail ? ` (${detail})` : ''}`);
}

async function main(): Promise<number> {
  log(`soak: ${JSON.stringify({ ...settings, out: undefined })}; memory limit: ${limit ? `${(settings.memoryMax / 2 ** 30).toFixed(2)} GiB (cgroup v${limit.version} ${limit.dir})` : 'none'}`);
  await world.open();
  world.argv.stop(); // the e2e's argv watch reads /proc ten times a second: not for hours
  await install();
  const env = world.channelEnv();
  world.secrets.channelToken = env.SERVICE_CHANNEL_TOKEN!;
  world.secrets.channelKnock = env.SERVICE_CHANNEL_KNOCK!;
  await waitHealthy(world);

  // Quiet spells of two minutes every 200 chats: the runtime defers a scheduled heartbeat
  // while any turn of the agent runs, so under steady traffic it would never run.
  const plan = planTraffic({ seed: settings.seed, minSessions: settings.sessions, minChats: settings.chats, lullEveryChats: 200, lullMs: 120_000 });
  planned = plan.chats;
  log(`plan: ${plan.chats} chats over ${plan.sessions} sessions (${Object.entries(plan.kinds).map(([k, v]) => `${k} ${v.sessions} sessions/${v.chats} chats`).join(', ')}), ${settings.concurrency} conversations at once, 12 client addresses`);
  const pool = new AddressPool(Array.from({ length: 12 }, (_, i) => `127.0.0.${i + 2}`));
  const client = new ChannelClient({ token: env.SERVICE_CHANNEL_TOKEN!, knock: env.SERVICE_CHANNEL_KNOCK! }, pool, { startedAt: started, retryBudgetMs: settings.retryBudgetMs });
  driver = new SoakDriver(plan, client, settings.concurrency);
  const probe = new ServerProbe(world.container.initPid);
  recorder = new SoakRecorder(world, probe, driver, { startedAt: started, limit, trimAiRequests: true });

  // At rest: installed, healthy, no chat yet, its timers given time to run once.
  // The gateway keeps growing for minutes after /healthz answers (plugins, workers,
  // caches): at rest is once its anonymous memory holds still (within 3% over 30 s), at
  // least SOAK_REST_S after the start and at most ten minutes.
  log(`at rest: at least ${seconds(settings.restMs)}, until the gateway's memory holds still`);
  const restFrom = Date.now();
  let previous = probe.unitFigures().anonBytes;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    const now = probe.unitFigures().anonBytes;
    const still = Math.abs(now - previous) <= 0.03 * Math.max(previous, 1);
    previous = now;
    if ((still && Date.now() - restFrom >= settings.restMs) || Date.now() - restFrom > 10 * 60_000) break;
  }
  const rest = await recorder.sample('rest');
  log(`at rest: server processes ${(rest.server.pssBytes / 2 ** 20).toFixed(0)} MiB PSS (${rest.server.processes} processes), gateway unit ${(rest.unit.anonBytes / 2 ** 20).toFixed(0)} MiB anon / ${(rest.unit.pssBytes / 2 ** 20).toFixed(0)} MiB PSS (${rest.unit.processes} processes)${rest.memcg ? `, cgroup usage ${(rest.memcg.usageBytes / 2 ** 20).toFixed(0)} MiB of which page cache ${(rest.memcg.cacheBytes / 2 ** 20).toFixed(0)} MiB` : ''}`);

  setHeartbeatEvery(world, settings.heartbeat);
  event(`heartbeat every ${settings.heartbeat}`);
  guardLogSeen = guardLogLines().length;

  // The restart and the guard run happen while the traffic flows (chats that meet them
  // are retried), at a share of the plan's chats or of the time budget, whichever comes first.
  const pending: Array<Promise<void>> = [];
  let guarding = false;
  let restarted = false;
  let guarded = false;
  const trafficStarted = Date.now();
  const share = (answered: number) => Math.max(answered / plan.chats, settings.budgetMs > 0 ? (Date.now() - trafficStarted) / settings.budgetMs : 0);
  const events = (progress: { answered: number }) => {
    if (!restarted && share(progress.answered) >= settings.restartAt) {
      restarted = true;
      event('gateway restart');
      pending.push(restartGateway(world).catch((error: Error) => void notes.push(`gateway restart failed: ${error.message}`)));
    }
    if (!guarded && share(progress.answered) >= settings.guardAt) {
      guarded = true;
      pending.push(
        (async () => {
          const guard = await world.deploy('guard --json');
          guardLogSeen = guardLogLines().length; // this run's lines are not the hourly guard's
          const restored = (guard.json?.restorations ?? []).map((r: { what: string }) => r.what).join('; ');
          event('guard run', `exit ${guard.exitCode}, restored: ${restored || 'nothing'}, gateway restarted: ${guard.json?.restarted ?? '?'}`);
          await waitReady(world);
          setHeartbeatEvery(world, settings.heartbeat);
          event(`heartbeat every ${settings.heartbeat} again`);
        })().catch((error: Error) => void notes.push(`guard run failed: ${error.message}`)),
      );
    }
  };
  driver.onChat((_chat, progress) => events(progress));

  const traffic = driver.run();
  let done = false;
  void traffic.finally(() => (done = true));
  while (!done) {
    const wake = Date.now() + settings.sampleMs;
    while (!done && Date.now() < wake) await new Promise((resolve) => setTimeout(resolve, 500));
    if (done) break;
    events(driver.progress);
    if (!guarding) {
      guarding = true;
      pending.push(hourlyGuard().catch((error: Error) => void notes.push(`setting the heartbeat after the hourly guard failed: ${error.message}`)).finally(() => (guarding = false)));
    }
    if (settings.budgetMs > 0 && Date.now() - trafficStarted > settings.budgetMs && !stoppedAtBudget) {
      stoppedAtBudget = true;
      event('time budget: traffic stopped', `${driver.progress.answered} of ${plan.chats} planned chats answered in ${seconds(Date.now() - trafficStarted)}`);
      driver.stop();
    }
    const s = await recorder.sample();
    log(`${(s.atMs / 60_000).toFixed(0)} min: ${s.chats} chats (${s.failed} failed), ${s.sessions} sessions; gateway unit ${(s.unit.anonBytes / 2 ** 20).toFixed(0)} MiB anon, ${s.unit.processes} processes, ${s.unit.fds} fds; server ${(s.server.pssBytes / 2 ** 20).toFixed(0)} MiB PSS; p50/p99 ${(s.interval.p50Ms / 1000).toFixed(1)}/${(s.interval.p99Ms / 1000).toFixed(1)} s; MCP admission failures ${s.mcpAdmissionFailures}; load ${s.loadAverage.toFixed(1)}`);
  }
  await traffic;
  await Promise.all(pending);
  await recorder.sample('end');
  if (settings.idleMs > 0 && !interrupted) {
    log(`idle for ${seconds(settings.idleMs)} (MCP runtimes past their idle limit are retired)`);
    await new Promise((resolve) => setTimeout(resolve, settings.idleMs));
    await recorder.sample('idle');
  }
  return report(recorder.samples);
}

function report(samples: SoakSample[]): number {
  const run: SoakRun = {
    startedAt: new Date(started).toISOString(),
    commit: startCommit,
    release: world.release,
    settings,
    memoryLimit: limit ? { bytes: settings.memoryMax, cgroup: limit.dir, version: limit.version } : null,
    events,
    notes,
    planned,
    stoppedAtBudget,
    interrupted,
    samples,
    chats: driver?.chats ?? [],
  };
  fs.mkdirSync(settings.out, { recursive: true });
  fs.writeFileSync(path.join(settings.out, 'soak.json'), JSON.stringify(run, null, 1) + '\n');
  const ok = writeReport(run, settings.out);
  process.stdout.write(`and soak.json (the run took ${seconds(Date.now() - started)}; SOAK_REPORT=${path.join(settings.out, 'soak.json')} npm run soak makes the table and plot again)\n`);
  return ok ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  log(`soak failed: ${world.masked((error as Error).stack ?? String(error))}`);
  if (recorder && recorder.samples.length > 0) report(recorder.samples);
} finally {
  await world.close();
  if (process.env.E2E_KEEP === '1' && limit) log(`    rmdir ${limit.dir}   (the server's memory limit, once it is stopped)`);
  else await limit?.remove();
}
process.exit(code);
