// The e2e's lifecycle part (issue 19), hooked into server.e2e.ts:
//  - chat traffic through the channel while --reset-clean runs (around step 7's reset):
//    restore brings back every exchange answered before the reset began, and every
//    restored database passes PRAGMA integrity_check;
//  - a consistent on-demand backup of the live deployment, every database checked;
//  - a gateway restart while an agent turn is in flight (the stand-in model holds its
//    answer): the gateway drains, the turn completes and its answer is delivered;
//  - upgrades between real releases: the earlier 2026.9.5 from the registry installed as
//    an earlier service-deploy did, upgraded by the install to the pinned release, rolled
//    back by hand, and an upgrade to a broken build (a local package whose gateway exits
//    at start) that rolls back by itself. The server ends on the earlier release (what
//    follows, the secret scans and uninstall, does not depend on the version).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { signRequest } from '../../src/channel/protocol.js';
import { REPO } from '../helpers/binary.js';
import type { Container } from './container.js';
import { GATEWAY_PORT, GATEWAY_UNIT, channelPost, log, seconds, type World } from './harness.js';

type Chat = (message: string) => Promise<{ reply: string }>;

const components = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/components.json'), 'utf8'));
const PINNED: string = components.openclaw.version;
/** An earlier release of the pinned line, from the registry. */
export const EARLIER_OPENCLAW = '2026.9.5';

export const PINNED_OPENCLAW = PINNED;
/** The OpenClaw package that runs, through the link the unit runs it by (issue 29). */
const PKG = '/opt/service-deploy/openclaw-current';
/** Where the releases before the locks installed OpenClaw: globally, into the Node prefix. */
export const GLOBAL_PACKAGE = '/opt/service-deploy/node/lib/node_modules/openclaw';
const NODE_BIN = '/opt/service-deploy/node/bin';
const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';
/** npm of the deployed Node, with the e2e's sources (CA files) and the container's proxy settings (/root/.npmrc). */
const NPM_ENV = `set -a; . /root/e2e/sources.env; set +a; export PATH=${NODE_BIN}:$PATH`;

/** Polls `probe` until it holds, within `budgetMs`; the error names what was awaited. */
async function until(what: string | (() => string), budgetMs: number, probe: () => boolean | Promise<boolean>): Promise<number> {
  const t = Date.now();
  while (!(await probe())) {
    if (Date.now() - t > budgetMs) throw new Error(`waited ${seconds(Date.now() - t)} for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return Date.now() - t;
}

export async function healthz(world: World): Promise<void> {
  await healthzOn(world.container);
}

/** /healthz answers 200 on this server within 2 minutes. */
export async function healthzOn(c: Container): Promise<void> {
  expect(await c.ok(`curl -fsS -o /dev/null -w '%{http_code}' --retry 120 --retry-delay 1 --retry-all-errors http://127.0.0.1:${GATEWAY_PORT}/healthz`, { timeoutMs: 180_000 })).toBe('200');
}

/** The answers (exact texts) not found in the deployment's SQLite databases under /root/.openclaw (or their WAL). */
export async function answersMissing(world: World, replies: string[]): Promise<string[]> {
  const out = await world.container.ok(
    `while IFS= read -r reply; do grep -rqF --include='*.sqlite' --include='*.sqlite-wal' -- "$reply" /root/.openclaw || echo "$reply"; done`,
    { input: `${replies.join('\n')}\n` },
  );
  return out.split('\n').filter(Boolean);
}

async function installedVersion(world: World, dir?: string): Promise<string | undefined> {
  return installedOpenclaw(world.container, dir);
}

/** The OpenClaw version that runs on this server (through its link, else the earlier layout's global package), or the one in `dir`; undefined when none. */
export async function installedOpenclaw(c: Container, dir?: string): Promise<string | undefined> {
  const text = await c.sh(dir ? `cat ${dir}/package.json` : `cat ${PKG}/package.json 2>/dev/null || cat ${GLOBAL_PACKAGE}/package.json`);
  return text.exitCode === 0 ? (JSON.parse(text.stdout) as { version: string }).version : undefined;
}

// ---- chat traffic during --reset-clean

export interface Exchange {
  n: number;
  message: string;
  sentAt: number;
  doneAt: number;
  status?: number;
  reply?: string;
  error?: string;
}

/**
 * Signed chat requests through the channel (nginx on the container's address, as a
 * partner's client sends them), one after another until stopped, from three client
 * addresses in turn (each its own bucket of nginx's 10 a minute).
 */
export function chatTraffic(token: string, knock: string): { answered(count: number): Promise<void>; stop(): Promise<Exchange[]> } {
  const exchanges: Exchange[] = [];
  const tag = randomBytes(4).toString('hex');
  let stopped = false;
  const loop = (async () => {
    for (let n = 1; !stopped; n++) {
      const message = `traffic ${tag} exchange ${n}`;
      const body = JSON.stringify({ message });
      const sentAt = Date.now();
      const r = await channelPost({ knock, localAddress: `127.0.0.${11 + (n % 3)}`, headers: signRequest({ token, body }), body, timeoutMs: 120_000 });
      let reply: string | undefined;
      try {
        reply = r.status === 200 ? (JSON.parse(r.body ?? '') as { reply?: string }).reply : undefined;
      } catch {
        reply = undefined;
      }
      exchanges.push({ n, message, sentAt, doneAt: Date.now(), status: r.status, reply, error: r.error ?? (r.status === 200 ? undefined : r.body?.slice(0, 200)) });
      // A refused or dropped request (the reset stopped the channel) is not retried at once.
      if (r.status !== 200) await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  return {
    /** Waits until `count` exchanges are answered (the traffic is flowing). */
    async answered(count) {
      try {
        await until(() => `${count} answered exchanges of the chat traffic (the last: ${JSON.stringify(exchanges.slice(-3))})`, 3 * 60_000, () => exchanges.filter((e) => e.status === 200 && e.reply).length >= count);
      } catch (error) {
        stopped = true;
        throw error;
      }
    },
    async stop() {
      stopped = true;
      await loop;
      return exchanges;
    },
  };
}

/** A script for the deployed Node: PRAGMA integrity_check of every SQLite file under the given paths (read-only opens). */
const INTEGRITY_SCRIPT = `import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
const magic = Buffer.from('SQLite format 3\\0', 'latin1');
const out = [];
const visit = (p) => {
  let st;
  try { st = fs.lstatSync(p); } catch { return; }
  if (st.isDirectory()) { for (const name of fs.readdirSync(p)) visit(path.join(p, name)); return; }
  if (!st.isFile() || st.size < 16) return;
  const head = Buffer.alloc(16);
  const fd = fs.openSync(p, 'r');
  fs.readSync(fd, head, 0, 16, 0);
  fs.closeSync(fd);
  if (!head.equals(magic)) return;
  let result;
  try {
    const db = new DatabaseSync(p, { readOnly: true });
    result = db.prepare('PRAGMA integrity_check').all().map((r) => String(Object.values(r)[0])).join('; ');
    db.close();
  } catch (error) {
    result = 'cannot open: ' + error.message;
  }
  out.push({ path: p, result });
};
for (const root of process.argv.slice(2)) visit(root);
console.log(JSON.stringify(out));
`;

/** Every SQLite database under the backup's roots, with what integrity_check says. */
export async function databasesIntegrity(world: World): Promise<Array<{ path: string; result: string }>> {
  fs.mkdirSync(world.container.hostPath('/root/e2e'), { recursive: true });
  fs.writeFileSync(world.container.hostPath('/root/e2e/integrity.mjs'), INTEGRITY_SCRIPT, { mode: 0o600 });
  const out = await world.container.ok(`${NODE_BIN}/node /root/e2e/integrity.mjs /root/.openclaw /var/lib/service-deploy /root/.cache/qmd/index.sqlite /root/.config/qmd`, { timeoutMs: 5 * 60_000 });
  return JSON.parse(out) as Array<{ path: string; result: string }>;
}

/**
 * After restore: every exchange answered before the reset began is in the restored
 * agent databases (its answer's text, found in the per-agent SQLite files), and every
 * restored database passes integrity_check.
 */
export async function exchangesRestored(world: World, exchanges: Exchange[], resetStartedAt: number): Promise<Record<string, unknown>> {
  const before = exchanges.filter((e) => e.status === 200 && e.reply && e.doneAt < resetStartedAt);
  const during = exchanges.filter((e) => e.sentAt >= resetStartedAt || e.doneAt >= resetStartedAt);
  expect(before.length, JSON.stringify(exchanges)).toBeGreaterThanOrEqual(3);
  const missing = await answersMissing(world, before.map((e) => e.reply!));
  expect(missing, `answered before the reset began, not in the restored agent databases (all exchanges: ${JSON.stringify(exchanges)})`).toEqual([]);
  const databases = await databasesIntegrity(world);
  expect(databases.map((d) => d.path), 'no database found after the restore').toContain('/root/.openclaw/state/openclaw.sqlite');
  expect(databases.filter((d) => d.result !== 'ok')).toEqual([]);
  const report = {
    answeredBeforeReset: before.length,
    duringReset: { sent: during.length, answered: during.filter((e) => e.status === 200).length, refused: during.filter((e) => e.status !== 200).map((e) => e.status ?? e.error) },
    databasesChecked: databases.length,
  };
  log(`chat traffic during --reset-clean: ${JSON.stringify(report)}`);
  return report;
}

// ---- on-demand backup

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
  expect(out.stopped).toContain(GATEWAY_UNIT);
  await healthz(world);
  const answer = await chat('still answering after the backup?');
  expect(answer.reply).toContain('still answering after the backup?');
  const report = { wallMs: r.ms, gatewayPausedMs: out.pausedMs, databases: out.databases.length, bytes: out.bytes };
  log(`on-demand backup: ${JSON.stringify(report)}`);
  return report;
}

// ---- a restart during an agent turn

/**
 * The stand-in model holds the answer of one turn; while it is held the gateway unit is
 * restarted (as a model change or the guard does). The unit stays "deactivating" while
 * the gateway drains the turn; once the model answers, the turn completes, its answer
 * reaches the client through the channel, and the gateway comes back.
 */
export async function restartDuringTurn(world: World, chat: Chat): Promise<Record<string, unknown>> {
  const c = world.container;
  const marker = `slow turn ${randomBytes(4).toString('hex')}`;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let seen = 0;
  const previous = world.ai.script;
  world.ai.script = (request) => {
    const last = [...request.messages].reverse().find((m) => m.role === 'user');
    if (!JSON.stringify(last?.content ?? '').includes(marker)) return previous?.(request);
    seen++;
    return held.then(() => undefined); // then the echo
  };
  const unitState = async () => (await c.ok(`${USER_ENV} systemctl --user show --property=ActiveState --value ${GATEWAY_UNIT}`)).trim();
  try {
    const pidBefore = await world.userUnit('MainPID');
    const t = Date.now();
    const turn = chat(marker).then(
      (answer) => ({ answer, at: Date.now() }),
      (error: Error) => ({ error }),
    );
    await until('the stand-in model to receive the slow turn', 120_000, () => seen > 0);
    const restart = c.sh(`${USER_ENV} systemctl --user restart ${GATEWAY_UNIT}`, { timeoutMs: 6 * 60_000 });
    await until('the gateway unit to be stopping (deactivating) while the turn is held', 60_000, async () => (await unitState()) === 'deactivating');
    const stopping = Date.now();
    expect(await world.userUnit('MainPID'), 'the old gateway process is still there, draining').toBe(pidBefore);
    release();
    const done = await turn;
    if ('error' in done) throw done.error;
    expect(done.answer.reply).toContain(marker);
    const restarted = await restart;
    expect(restarted.exitCode, restarted.stderr).toBe(0);
    await healthz(world);
    expect(await world.userUnit('MainPID')).not.toBe(pidBefore);
    // The runtime's own account: it went through its active-work drain before it closed.
    // (The turn being waited for is proved above: held while the unit was deactivating,
    // answered after. The pinned release logs "draining active work" only when its first
    // snapshot of active work is not idle, which on a loaded machine it was not always:
    // information only.)
    const said = (await c.sh(`journalctl _SYSTEMD_USER_UNIT=${GATEWAY_UNIT} --since @${Math.floor(t / 1000)} --no-pager -o cat | grep -E 'draining active work|drain settled' | head -4`)).stdout.trim().split('\n').filter(Boolean);
    expect(said.some((l) => l.includes('drain settled')), `the gateway's journal since the restart: ${JSON.stringify(said)}`).toBe(true);
    expect(done.at, 'the answer came after the stop began').toBeGreaterThan(stopping);
    const report = { turnMs: done.at - t, answeredAfterStopBeganMs: done.at - stopping, restartMs: Date.now() - stopping, gatewaySaid: said.map((l) => l.replace(/^.*\[gateway\] /, '')) };
    log(`restart during an agent turn: ${JSON.stringify(report)}`);
    return report;
  } finally {
    release();
    world.ai.script = previous;
  }
}

// ---- upgrades between real releases, by hand and broken

/** A build of the pinned release whose gateway exits at start (every other command works), packed from the installed package. */
export async function packBrokenBuild(world: World): Promise<string> {
  return packBrokenBuildOn(world.container);
}

/** packBrokenBuild on one server (the pinned release installed there); the tarball's path inside it. */
export async function packBrokenBuildOn(c: Container): Promise<string> {
  expect(await installedOpenclaw(c)).toBe(PINNED);
  await c.ok(`set -e; ${NPM_ENV}; rm -rf /root/e2e/broken; mkdir -p /root/e2e/broken/package; cd /root/e2e/broken
tar -C ${PKG} --exclude=./node_modules -cf - . | tar -C package -xf -
{ head -n 1 package/openclaw.mjs; echo 'if (process.argv[2] === "gateway") { console.error("e2e broken build: the gateway exits at start"); process.exit(1); }'; tail -n +2 package/openclaw.mjs; } >package/openclaw.new
mv package/openclaw.new package/openclaw.mjs; chmod 755 package/openclaw.mjs
npm pack --silent --ignore-scripts --pack-destination /root/e2e/broken ./package >/dev/null
rm -rf package`, { timeoutMs: 5 * 60_000 });
  return (await c.ok('ls /root/e2e/broken/*.tgz')).trim();
}

/**
 * What a server installed by an earlier service-deploy runs: the earlier release from
 * the registry, installed the way that install did (npm of the deployed Node, over the
 * package), with state of its own: the pinned release's databases have newer schemas,
 * which the earlier release refuses to open (found here: "refused startup because 2
 * OpenClaw database schema(s) are newer than this build"), so it starts on fresh state
 * (config, workspace and channel stay). Chat answers on it; the answer is what the
 * upgrade must carry over.
 */
export async function earlierReleaseInstalled(world: World, chat: Chat): Promise<Record<string, unknown> & { reply: string }> {
  const t = Date.now();
  await putEarlierRelease(world.container);
  const question = `answering on ${EARLIER_OPENCLAW}? ${randomBytes(4).toString('hex')}`;
  const answer = await chat(question);
  expect(answer.reply).toContain(question);
  const report = { wallMs: Date.now() - t, reply: answer.reply };
  log(`OpenClaw ${EARLIER_OPENCLAW} from the registry installed and answering: ${seconds(report.wallMs)}`);
  return report;
}

/**
 * The earlier release put on a deployed server the way an earlier service-deploy installed
 * it (npm of the deployed Node, over the package), on fresh state (the pinned release's
 * databases are newer than it opens), started and answering /healthz.
 */
export async function putEarlierRelease(c: Container): Promise<void> {
  await c.ok(`set -e; ${NPM_ENV}; ${USER_ENV} systemctl --user stop ${GATEWAY_UNIT}
npm install --global --prefix /opt/service-deploy/node --no-audit --no-fund --allow-scripts=openclaw openclaw@${EARLIER_OPENCLAW} >/dev/null
${EARLIER_LAYOUT}
rm -rf /root/.openclaw/state /root/.openclaw/agents
${USER_ENV} systemctl --user start ${GATEWAY_UNIT}`, { timeoutMs: 10 * 60_000 });
  expect(await installedOpenclaw(c)).toBe(EARLIER_OPENCLAW);
  await healthzOn(c);
}

/**
 * With a global package in place, the rest of what the releases before the locks left: no
 * project and no link; the unit and the wrapper run the global entry (the gateway stopped).
 */
export const EARLIER_LAYOUT = `rm -rf /opt/service-deploy/openclaw /opt/service-deploy/openclaw-current
sed -i 's#/opt/service-deploy/openclaw-current/openclaw.mjs#${GLOBAL_PACKAGE}/openclaw.mjs#' /root/.config/systemd/user/${GATEWAY_UNIT} /usr/local/bin/openclaw
ln -sfn ../lib/node_modules/openclaw/openclaw.mjs /opt/service-deploy/node/bin/openclaw
${USER_ENV} systemctl --user daemon-reload`;

/**
 * The install (the pinned release) upgrades the earlier one: backup, beside, switch,
 * the runtime's migrations of the earlier release's databases, start, health. The
 * answer given on the earlier release is still there, and chat answers.
 */
export async function upgradeFromEarlierRelease(world: World, chat: Chat, earlierReply: string): Promise<Record<string, unknown> & { reply: string }> {
  const run = await world.installSh('--catalog --json', {}, 20 * 60_000);
  expect(run.exitCode, `${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`).toBe(0);
  expect(run.json?.ok, run.stdout.slice(-3000)).toBe(true);
  expect(run.json.upgrade).toMatchObject({ from: EARLIER_OPENCLAW, to: PINNED });
  expect(run.json.upgrade.backup).toMatch(/^\/var\/backups\/service-deploy\/openclaw-pre-upgrade-\d{8}-\d{6}\.tar\.gz$/);
  expect(await installedVersion(world)).toBe(PINNED);
  expect(await installedVersion(world, '/opt/service-deploy/openclaw-previous')).toBe(EARLIER_OPENCLAW);
  const status = await world.deploy('status --json');
  expect(status.json?.components?.openclaw, status.stdout).toMatchObject({ installed: PINNED, previous: EARLIER_OPENCLAW });
  await healthz(world);
  expect(await answersMissing(world, [earlierReply]), 'the answer given on the earlier release, after the upgrade').toEqual([]);
  const question = `answering after the upgrade to ${PINNED}? ${randomBytes(4).toString('hex')}`;
  const answer = await chat(question);
  expect(answer.reply).toContain(question);
  const steps = (run.json.steps as Array<{ id: string; durationMs: number }>).filter((s) => s.durationMs >= 500).map((s) => `${s.id} ${seconds(s.durationMs)}`);
  const report = { wallMs: run.wallMs, upgradeSeconds: run.json.upgrade.seconds, backup: run.json.upgrade.backup, pipelineSteps: steps };
  log(`upgrade ${EARLIER_OPENCLAW} -> ${PINNED} (registry): ${JSON.stringify(report)}`);
  return { ...report, reply: answer.reply };
}

/** `service-deploy rollback`: the earlier release and the pre-upgrade state back (the exchange after the upgrade is gone, as documented), answering. */
export async function rollbackByHand(world: World, chat: Chat, earlierReply: string, laterReply: string): Promise<Record<string, unknown>> {
  const r = await world.deploy('rollback --yes --json', { timeoutMs: 10 * 60_000 });
  expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
  expect(r.json).toMatchObject({ ok: true, mode: 'apply', from: PINNED, to: EARLIER_OPENCLAW });
  expect(await installedVersion(world)).toBe(EARLIER_OPENCLAW);
  expect(await installedVersion(world, '/opt/service-deploy/openclaw-previous')).toBeUndefined();
  await healthz(world);
  // The pre-upgrade state: what was said before the upgrade is there, what was said after it is not.
  expect(await answersMissing(world, [earlierReply, laterReply])).toEqual([laterReply]);
  const answer = await chat('answering after the rollback by hand?');
  expect(answer.reply).toContain('answering after the rollback by hand?');
  const report = { wallMs: r.ms, health: r.json.health };
  log(`rollback by hand ${PINNED} -> ${EARLIER_OPENCLAW}: ${JSON.stringify(report)}`);
  return report;
}

/**
 * The pin's version offered as a local package whose gateway exits at start: the
 * upgrade installs it beside the earlier one, switches, migrates, fails to start, and
 * rolls back: the earlier package and state back, /healthz and chat answering, exit 1
 * with the report.
 */
export async function brokenUpgradeRollsBack(world: World, chat: Chat, tarball: string): Promise<Record<string, unknown>> {
  const c = world.container;
  const run = await world.installSh('--catalog --json', { SERVICE_OPENCLAW_SOURCE: tarball, SERVICE_HEALTH_TIMEOUT_MS: '90000' }, 20 * 60_000);
  expect(run.exitCode, `${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`).toBe(1);
  expect(run.json?.upgrade, run.stdout.slice(-3000)).toMatchObject({ from: EARLIER_OPENCLAW, to: PINNED, rolledBack: true });
  expect(['start', 'health']).toContain(run.json.upgrade.failedAt);
  expect(run.json.error).toMatchObject({ code: 'upgrade-failed', exitCode: 1 });
  expect(await installedVersion(world)).toBe(EARLIER_OPENCLAW);
  expect(await c.ok(`grep -c 'e2e broken build' ${PKG}/openclaw.mjs || true`)).toBe('0\n');
  expect(await c.ok('test -e /opt/service-deploy/openclaw-previous && echo kept || echo none')).toBe('none\n');
  await healthz(world);
  const answer = await chat('answering again after the automatic rollback?');
  expect(answer.reply).toContain('answering again after the automatic rollback?');
  const report = { wallMs: run.wallMs, failedAt: run.json.upgrade.failedAt, backup: run.json.upgrade.backup, gatewayLog: (run.json.upgrade.log as string[]).filter((l) => l.includes('e2e broken build')).length };
  log(`broken upgrade rolled back by itself: ${JSON.stringify(report)}`);
  return report;
}
