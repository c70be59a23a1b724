// The soak's short form in the e2e (issue 26 item 5; hooked into server.e2e.ts): a few
// hundred signed chats over a hundred portal sessions through the channel, from
// the 12 client addresses, and the gateway unit's process count must not grow with them
// (OpenClaw 2026.9.6 started a `qmd mcp` chain of 4 processes for each new session and
// kept it: issue 26). The bench (npm run soak) is the long form with the curves.
// A count that has clearly grown ends the traffic early (the verdict is in, and every
// kept chain costs the shared machine ~54 MiB), and the gateway is restarted so the
// steps after this one find a server without them.
import { expect } from 'vitest';
import { log, seconds, type World } from './harness.js';
import { PROCESS_TOLERANCE, percentile, planTraffic } from './soak.js';
import { ServerProbe } from './soak-host.js';
import { restartGateway, waitHealthy } from './soak-run.js';
import { AddressPool, ChannelClient, SoakDriver } from './soak-traffic.js';

const WARM_UP = 40;
/** Clearly grown: three chains' worth of processes above the count after warm-up. */
const CLEARLY_GROWN = 12;

export interface ShortSoakReport {
  chats: number;
  failed: number;
  sessions: number;
  processes: { afterWarmUp: number; atEnd: number; max: number; afterWarmUpByName: Record<string, number>; atEndByName: Record<string, number> };
  stoppedEarly: boolean;
  latency: { p50Ms: number; p99Ms: number };
  wallMs: number;
}

/** The unit's process count with a timer's or worker's passing process filtered out: the lowest of three reads a second apart. */
async function settledCount(probe: ServerProbe): Promise<{ count: number; byName: Record<string, number> }> {
  let best: { count: number; byName: Record<string, number> } | undefined;
  for (let i = 0; i < 3; i++) {
    const unit = probe.unitFigures();
    if (!best || unit.pids.length < best.count) best = { count: unit.pids.length, byName: unit.byName };
    if (i < 2) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return best!;
}

export async function shortSoak(world: World, secrets: { token: string; knock: string }): Promise<ShortSoakReport> {
  const t = Date.now();
  // ~250 chats: short, returning and long sessions as the bench has them, no quiet spells.
  const plan = planTraffic({ seed: 5, minSessions: 100, minChats: 250 });
  const pool = new AddressPool(Array.from({ length: 12 }, (_, i) => `127.0.0.${i + 2}`));
  const driver = new SoakDriver(plan, new ChannelClient(secrets, pool, { startedAt: t, retryBudgetMs: 3 * 60_000 }), 4);
  const probe = new ServerProbe(world.container.initPid);
  let afterWarmUp: { count: number; byName: Record<string, number> } | undefined;
  let max = 0;
  let stoppedEarly = false;
  let checking = false;
  driver.onChat((_chat, progress) => {
    const done = progress.answered + progress.failed;
    if (checking || done < WARM_UP || done % 10 !== 0) return;
    checking = true;
    void (async () => {
      const now = await settledCount(probe);
      afterWarmUp ??= now;
      max = Math.max(max, now.count);
      if (now.count - afterWarmUp.count >= CLEARLY_GROWN && !stoppedEarly) {
        stoppedEarly = true;
        log(`soak short form: the gateway unit has ${now.count} processes after ${done} chats, ${afterWarmUp.count} after warm-up: stopping the traffic`);
        driver.stop();
      }
    })().finally(() => (checking = false));
  });
  log(`soak short form: ${plan.chats} chats over ${plan.sessions} sessions, 4 at once from 12 addresses`);
  await driver.run();
  const atEnd = await settledCount(probe);
  max = Math.max(max, atEnd.count);
  const answered = driver.chats.filter((c) => c.ok);
  const report: ShortSoakReport = {
    chats: answered.length,
    failed: driver.chats.length - answered.length,
    sessions: driver.progress.sessions,
    processes: { afterWarmUp: afterWarmUp?.count ?? atEnd.count, atEnd: atEnd.count, max, afterWarmUpByName: afterWarmUp?.byName ?? {}, atEndByName: atEnd.byName },
    stoppedEarly,
    latency: { p50Ms: percentile(answered.map((c) => c.latencyMs ?? 0), 50), p99Ms: percentile(answered.map((c) => c.latencyMs ?? 0), 99) },
    wallMs: Date.now() - t,
  };
  log(`soak short form: ${report.chats} chats (${report.failed} failed) over ${report.sessions} sessions in ${seconds(report.wallMs)}; gateway unit processes ${report.processes.afterWarmUp} after warm-up -> ${report.processes.atEnd} (max ${max}): ${JSON.stringify(report.processes.atEndByName)}`);
  const grown = report.processes.atEnd - report.processes.afterWarmUp > PROCESS_TOLERANCE;
  if (grown) {
    // What each session left behind goes with the gateway's processes.
    await restartGateway(world);
    await waitHealthy(world);
  }
  const failures = driver.chats.filter((c) => !c.ok).slice(0, 3).map((c) => c.error);
  expect(report.failed, `failed chats: ${JSON.stringify(failures)}`).toBe(0);
  expect(
    report.processes.atEnd - report.processes.afterWarmUp,
    `the gateway unit's processes grew with the chats: ${report.processes.afterWarmUp} after ${WARM_UP} chats (${JSON.stringify(report.processes.afterWarmUpByName)}), ${report.processes.atEnd} after ${report.chats} chats over ${report.sessions} sessions (${JSON.stringify(report.processes.atEndByName)})${stoppedEarly ? '; the traffic was stopped early' : ''}`,
  ).toBeLessThanOrEqual(PROCESS_TOLERANCE);
  return report;
}
