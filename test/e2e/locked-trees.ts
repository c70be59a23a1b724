import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Container } from './container.js';
import { GATEWAY_UNIT, log, seconds, type World } from './harness.js';
import { EARLIER_LAYOUT, GLOBAL_PACKAGE, PINNED_OPENCLAW, answersMissing, healthzOn, installedOpenclaw } from './lifecycle.js';
import { mcpQuery } from './memory.js';

/**
 * Issue 29 on a real server: the installed OpenClaw and QMD trees are the shipped locks
 * (doctor's runtime-trees, which reads every package folder against the lock: 0
 * differences), a package changed by hand is named, and a server of the earlier layout
 * (OpenClaw global in the Node prefix, as the releases before the locks installed it)
 * converges on a re-run with its sessions and memory intact.
 */

type Chat = (message: string) => Promise<{ reply: string }>;
const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';
const NPM_ENV = 'set -a; . /root/e2e/sources.env; set +a; export PATH=/opt/service-deploy/node/bin:$PATH';
/** A package of OpenClaw's tree (a top-level one of its lock). */
const CHANGED = '/opt/service-deploy/openclaw/node_modules/@anthropic-ai/sdk/package.json';
/** The files of the agent's own a migration must leave as they are: the memory file 5b wrote (and a pairing store or identity folder, where the release keeps one as files). */
const KEPT = 'find /root/.openclaw/devices /root/.openclaw/identity /root/.openclaw/workspace/memory -type f -exec sha256sum {} + 2>/dev/null | sort';

async function doctorChecks(world: World, ...ids: string[]): Promise<Array<{ id: string; status: string; message?: string; detail?: string }>> {
  const run = await world.deploy(`doctor --json ${ids.join(' ')}`);
  expect(run.json?.checks, `${run.stdout.slice(-2000)}\n${run.stderr.slice(-2000)}`).toBeDefined();
  return run.json.checks;
}

export async function lockedTreesOnServer(world: World, chat: Chat): Promise<Record<string, unknown>> {
  const c = world.container;
  const report: Record<string, unknown> = {};

  // 1. The trees as installed are the locks.
  const clean = await doctorChecks(world, 'agent-runtime', 'runtime-trees');
  expect(clean.map((r) => [r.id, r.status]), JSON.stringify(clean)).toEqual([['agent-runtime', 'pass'], ['runtime-trees', 'pass']]);
  report.trees = clean[1]!.detail ?? clean[1]!.message;
  report.packageFolders = Number((await c.ok('find /opt/service-deploy/openclaw/node_modules /opt/service-deploy/qmd/node_modules -name package.json -path "*/node_modules/*/package.json" -not -path "*/node_modules/*/node_modules/*/*/package.json" | wc -l')).trim());

  // 2. One installed package changed: doctor names it; put back, the tree is the lock's again.
  await c.ok(`cp -a ${CHANGED} /root/e2e/changed-package.json && sed -i 's/"version": *"[^"]*"/"version": "0.0.1-e2e-changed"/' ${CHANGED}`);
  const changed = await doctorChecks(world, 'runtime-trees');
  expect(changed[0]!.status).toBe('fail');
  expect(JSON.stringify(changed[0])).toMatch(/differs from the shipped lock in 1 package: @anthropic-ai\/sdk is 0\.0\.1-e2e-changed, the lock has \d/);
  report.changedFinding = changed[0]!.message;
  await c.ok(`cp -a /root/e2e/changed-package.json ${CHANGED}`);
  expect((await doctorChecks(world, 'runtime-trees'))[0]!.status).toBe('pass');

  // 3. The earlier layout, the pinned release installed globally as the releases before the locks did.
  const t = Date.now();
  await toEarlierLayout(c);
  const question = `answering on the global install? ${randomBytes(4).toString('hex')}`;
  const before = await chat(question);
  expect(before.reply).toContain(question);
  const kept = await c.ok(KEPT);
  const earlier = await doctorChecks(world, 'agent-runtime');
  expect(JSON.stringify(earlier[0])).toContain(`runs from the global install of an earlier release (${GLOBAL_PACKAGE})`);

  // 4. The re-run converges it.
  const run = await world.installSh('--catalog');
  expect(run.exitCode, `${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`).toBe(0);
  const agentRuntime = (run.json.steps as Array<{ id: string; status: string }>).find((s) => s.id === 'agent-runtime');
  expect(agentRuntime?.status).toBe('changed');
  expect((await c.ok('readlink /opt/service-deploy/openclaw-current')).trim()).toBe('openclaw/node_modules/openclaw');
  expect(await c.ok(`test -e ${GLOBAL_PACKAGE} && echo left || echo gone`)).toBe('gone\n');
  expect(await c.ok(`grep -c '${GLOBAL_PACKAGE}' /root/.config/systemd/user/${GATEWAY_UNIT} /usr/local/bin/openclaw || true`)).toMatch(/:0\n.*:0\n$/s);
  expect(await installedOpenclaw(c)).toBe(PINNED_OPENCLAW);
  await healthzOn(c);
  const after = await doctorChecks(world, 'agent-runtime', 'runtime-trees');
  expect(after.map((r) => [r.id, r.status]), JSON.stringify(after)).toEqual([['agent-runtime', 'pass'], ['runtime-trees', 'pass']]);
  // Sessions and memory as they were.
  expect(await answersMissing(world, [before.reply]), 'the answer given on the global install, after the migration').toEqual([]);
  expect(await c.ok(KEPT)).toBe(kept);
  const memory = await mcpQuery(world, 'aquarium');
  expect(JSON.stringify(memory.result)).toContain('e2e-visit.md');
  const again = await chat('answering from the locked tree?');
  expect(again.reply).toContain('answering from the locked tree?');
  report.migration = { wallMs: Date.now() - t, installMs: run.wallMs, agentRuntimeMs: (agentRuntime as { durationMs?: number } | undefined)?.durationMs, keptFiles: kept.split('\n').filter(Boolean).length };
  log(`locked trees: ${JSON.stringify(report)}; migration in ${seconds(run.wallMs)}`);
  return report;
}

/** The pinned release installed globally into the Node prefix, the project and link gone, the unit on the global entry; its state kept. */
async function toEarlierLayout(c: Container): Promise<void> {
  await c.ok(`set -e; ${NPM_ENV}; ${USER_ENV} systemctl --user stop ${GATEWAY_UNIT}
npm install --global --prefix /opt/service-deploy/node --no-audit --no-fund --allow-scripts=openclaw openclaw@${PINNED_OPENCLAW} >/dev/null
${EARLIER_LAYOUT}
${USER_ENV} systemctl --user start ${GATEWAY_UNIT}`, { timeoutMs: 10 * 60_000 });
  expect(await installedOpenclaw(c)).toBe(PINNED_OPENCLAW);
  expect((await c.ok(`${USER_ENV} systemctl --user show -p ExecStart --value ${GATEWAY_UNIT}`))).toContain(`${GLOBAL_PACKAGE}/openclaw.mjs`);
  await healthzOn(c);
}
