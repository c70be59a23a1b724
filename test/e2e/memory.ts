// The e2e's memory and heartbeat part (issue 18 items 1-3, 5): the real QMD 2.8.3 from
// the registry (CPU build only), a memory file found through `qmd mcp` (tools/call), the
// refresh timer, the display name, a heartbeat run with status ok, and the guard script
// run the way SPEC 1.3 shows it. Hooked into server.e2e.ts as two steps.
import { expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/binary.js';
import { requestParts } from '../helpers/chat-completion.js';
import { MAX_HEARTBEAT_REQUEST_BYTES } from '../helpers/heartbeat.js';
import { CUSTOMER, log, type World } from './harness.js';

const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';
const NODE = '/opt/service-deploy/node/bin/node';
const QMD = '/opt/service-deploy/qmd/node_modules/.bin/qmd';
const OPENCLAW = '/usr/local/bin/openclaw';

/**
 * An MCP client over stdio for `qmd mcp`, run inside the container with the deployed
 * Node: initialize, tools/list, tools/call `query` (lex, BM25: no model needed). It waits
 * for each answer within a budget and prints the tools and the call's result as JSON.
 */
const MCP_CLIENT = String.raw`
import { spawn } from 'node:child_process';
import path from 'node:path';
const [word, qmd] = process.argv.slice(2);
// As the gateway starts it: HOME=/root and the pinned Node first on PATH (qmd is a node script).
const child = spawn(qmd, ['mcp'], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, HOME: '/root', PATH: path.dirname(process.execPath) + ':' + process.env.PATH } });
const failers = new Map();
child.on('exit', (code) => { for (const fail of failers.values()) fail(new Error('qmd mcp exited (' + code + ') before answering')); });
let buffer = '';
const waiting = new Map();
child.stdout.on('data', (chunk) => {
  buffer += chunk;
  for (let i; (i = buffer.indexOf('\n')) >= 0; ) {
    const line = buffer.slice(0, i); buffer = buffer.slice(i + 1);
    if (!line.trim()) continue;
    const message = JSON.parse(line);
    waiting.get(message.id)?.(message); waiting.delete(message.id);
  }
});
const call = (id, method, params) => new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('no answer to ' + method + ' within 120 s')), 120000);
  failers.set(id, (error) => { clearTimeout(timer); reject(error); });
  waiting.set(id, (m) => { clearTimeout(timer); failers.delete(id); resolve(m); });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
});
const init = await call(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } });
child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
const tools = await call(2, 'tools/list', {});
const found = await call(3, 'tools/call', { name: 'query', arguments: { searches: [{ type: 'lex', query: word }], rerank: false, collections: ['memory'] } });
child.stdin.end();
console.log(JSON.stringify({ server: init.result?.serverInfo, tools: tools.result?.tools?.map((t) => t.name), result: found.result ?? found.error }));
process.exit(0);
`;

async function mcpQuery(world: World, word: string): Promise<{ server: { name: string; version: string }; tools: string[]; result: any }> {
  const c = world.container;
  await c.ok(`cat >/root/e2e/mcp-query.mjs`, { input: MCP_CLIENT });
  const out = await c.ok(`${NODE} /root/e2e/mcp-query.mjs ${word} ${QMD}`, { timeoutMs: 180_000 });
  return JSON.parse(out.trim().split('\n').pop()!);
}

/** Runs qmd-refresh.service now (oneshot: returns when it finished) and reads its result. */
async function refreshNow(world: World): Promise<void> {
  const c = world.container;
  const run = await c.sh(`${USER_ENV} systemctl --user start qmd-refresh.service`, { timeoutMs: 15 * 60_000 });
  const journal = await c.sh(`${USER_ENV} journalctl --user -u qmd-refresh.service -n 30 --no-pager`);
  expect(run.exitCode, `qmd-refresh.service failed: ${run.stderr}\n${journal.stdout}`).toBe(0);
  expect((await c.ok(`${USER_ENV} systemctl --user show --property=Result --value qmd-refresh.service`)).trim()).toBe('success');
}

/** After the fresh install: real QMD as memory, the display name, the heartbeat, the guard script. */
export async function memoryAndHeartbeat(world: World): Promise<Record<string, unknown>> {
  const c = world.container;
  const report: Record<string, unknown> = {};

  // The real QMD, CPU build only.
  expect(JSON.parse(await c.ok('cat /opt/service-deploy/qmd/node_modules/@tobilu/qmd/package.json')).version).toBe('2.8.3');
  const natives = (await c.ok('ls /opt/service-deploy/qmd/node_modules/@node-llama-cpp/')).trim().split('\n');
  expect(natives).toEqual([process.arch === 'arm64' ? 'linux-arm64' : 'linux-x64']);
  report.qmdInstallSize = (await c.ok('du -sh /opt/service-deploy/qmd | cut -f1')).trim();

  // The collection and the timer the install made.
  const collections = await c.ok(`HOME=/root PATH=/opt/service-deploy/node/bin:$PATH ${QMD} collection list`);
  expect(collections).toMatch(/memory \(qmd:\/\/memory\/\)[\s\S]*Pattern:\s+MEMORY\.md,memory\/\*\.md/);
  expect((await c.ok(`${USER_ENV} systemctl --user is-active qmd-refresh.timer`)).trim()).toBe('active');
  expect(await c.ok(`${USER_ENV} systemctl --user list-timers --all --no-legend qmd-refresh.timer`)).toContain('qmd-refresh.service');

  // The agent writes a memory file; the timer's refresh indexes it; qmd mcp finds it.
  const word = `zebrafish${Date.now().toString(36)}`;
  await c.ok(`mkdir -p /root/.openclaw/workspace/memory && printf '# Visit notes\\nThe customer asked about the ${word} aquarium in the waiting room.\\n' >/root/.openclaw/workspace/memory/e2e-visit.md`);
  const stampBefore = (await c.sh('stat -c %Y /root/.cache/qmd/last-refresh')).stdout.trim();
  await refreshNow(world);
  expect(Number((await c.ok('stat -c %Y /root/.cache/qmd/last-refresh')).trim())).toBeGreaterThanOrEqual(Number(stampBefore || 0));
  const t = Date.now();
  const answer = await mcpQuery(world, word);
  report.mcpQueryMs = Date.now() - t;
  expect(answer.server).toMatchObject({ name: 'qmd', version: '2.8.3' });
  expect(answer.tools).toEqual(expect.arrayContaining(['query', 'get']));
  expect(JSON.stringify(answer.result)).toContain('e2e-visit.md');
  expect(answer.result.structuredContent.results[0].snippet).toContain(word);

  // Private: folders 0700, files 0600 (QMD's own default is 0644).
  const modes = (await c.ok('find /root/.cache/qmd /root/.config/qmd -printf "%m %y %p\\n"')).trim().split('\n');
  const open = modes.filter((line) => (line.includes(' d ') ? !line.startsWith('700 ') : !line.startsWith('600 ')));
  expect(open, modes.join('\n')).toEqual([]);

  // doctor's memory and agent-settings checks pass.
  const doctor = await world.deploy('doctor memory agent-settings --json');
  expect(doctor.exitCode, doctor.stdout).toBe(0);
  expect(doctor.json.checks.map((check: { id: string; status: string }) => `${check.id} ${check.status}`)).toEqual(['agent-settings pass', 'memory pass']);

  // Prompt 1 is the display name the UI shows.
  const config = world.runtimeConfig();
  expect(config.agents.entries.main.identity.name).toBe(CUSTOMER);

  // The heartbeat runs (internal-only, light, isolated): a manual run of its job is ok.
  const jobs = JSON.parse(await c.ok(`${OPENCLAW} cron list --all --json`, { timeoutMs: 120_000 })).jobs as Array<{ id: string; declarationKey?: string }>;
  const heartbeat = jobs.find((job) => job.declarationKey === 'heartbeat:main');
  expect(heartbeat, JSON.stringify(jobs)).toBeDefined();
  const before = world.ai.requests.length;
  const run = await c.sh(`${OPENCLAW} cron run ${heartbeat!.id} --wait --wait-timeout 8m`, { timeoutMs: 10 * 60_000 });
  expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({ status: 'ok', completionStatus: 'succeeded' });
  const runs = JSON.parse(await c.ok(`${OPENCLAW} cron runs ${heartbeat!.id} --json`)).entries as Array<{ status: string; summary?: string }>;
  expect(runs[0]).toMatchObject({ status: 'ok', summary: 'heartbeat completed' });
  const calls = world.ai.requests.slice(before);
  expect(calls.length).toBeGreaterThan(0);
  expect(calls.every((r) => r.authorized)).toBe(true);
  const heartbeatReport: Record<string, unknown> & { models: string[]; parts: unknown[] } = { modelCalls: calls.length, requestBytes: calls.map((r) => r.bytes), tools: calls.map((r) => r.tools), models: calls.map((r) => r.model), parts: calls.map((r) => requestParts(r.body)) };
  report.heartbeat = heartbeatReport;
  log(`heartbeat requests on ${heartbeatReport.models.join(', ')}: ${JSON.stringify(heartbeatReport.parts)}`);
  // On the profile's heartbeat model with its one tool: the MCP servers' tools (the
  // service's tool server, QMD) stay with the chat (issue 26 item 6).
  const heartbeatModelId = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/service-profile.json'), 'utf8')).heartbeatModelId;
  expect(calls.map((r) => [r.model, r.tools.join(' ')])).toEqual([[heartbeatModelId, 'session_status']]);
  expect(calls[0]!.bytes).toBeLessThanOrEqual(MAX_HEARTBEAT_REQUEST_BYTES);
  // An AI gateway without the heartbeat model: the runtime falls back to the chat model
  // (with the chat's tools, MCP ones included), and the check still runs. That request is
  // also what every heartbeat cost before it had a model of its own.
  world.ai.script = (request) => (request.model === heartbeatModelId ? { error: { status: 404, message: `The model ${request.model} does not exist`, code: 'model_not_found' } } : undefined);
  const beforeFallback = world.ai.requests.length;
  try {
    const fallback = await c.sh(`${OPENCLAW} cron run ${heartbeat!.id} --wait --wait-timeout 8m`, { timeoutMs: 10 * 60_000 });
    expect(fallback.exitCode, `${fallback.stdout}\n${fallback.stderr}`).toBe(0);
    expect(JSON.parse(fallback.stdout)).toMatchObject({ status: 'ok', completionStatus: 'succeeded' });
  } finally {
    world.ai.script = undefined;
  }
  const fallbackCalls = world.ai.requests.slice(beforeFallback);
  heartbeatReport.onChatModel = { models: fallbackCalls.map((r) => r.model), parts: fallbackCalls.map((r) => requestParts(r.body)) };
  log(`heartbeat on the chat model (fallback): ${JSON.stringify(heartbeatReport.onChatModel)}`);
  expect(fallbackCalls.map((r) => r.model)).toEqual([heartbeatModelId, expect.not.stringMatching(heartbeatModelId)]);

  // SPEC 1.3: "Run enforcer manually: bash /usr/local/bin/service-guard.sh".
  const guard = await c.sh('bash /usr/local/bin/service-guard.sh', { timeoutMs: 180_000 });
  expect(guard.exitCode, `${guard.stdout}\n${guard.stderr}`).toBe(0);
  expect(guard.stdout).toContain('nothing to restore');
  return report;
}

/** After --reset-clean and restore: the index was in the backup and finds the memory file again. */
export async function memoryAfterRestore(world: World): Promise<void> {
  const c = world.container;
  const archive = (await c.ok('ls -t /tmp/openclaw-backup-*.tar.gz | head -n 1')).trim();
  const entries = (await c.ok(`tar -tzf ${archive}`)).split('\n');
  expect(entries).toEqual(expect.arrayContaining(['root/.cache/qmd/index.sqlite', 'root/.config/qmd/index.yml']));
  expect((await c.ok(`${USER_ENV} systemctl --user is-active qmd-refresh.timer`)).trim()).toBe('active');
  const answer = await mcpQuery(world, 'aquarium');
  expect(JSON.stringify(answer.result)).toContain('e2e-visit.md');
}
