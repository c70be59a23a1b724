// The e2e's memory and heartbeat part (issue 18 items 1-3, 5; issue 26 items 1 and 3):
// the real QMD 2.8.3 from the registry (CPU build only) as ONE resident MCP service, a
// memory file found through it by the MCP client the gateway uses and by the agent's own
// tool call, the refresh timer, the display name, a heartbeat run with status ok, the
// guard script run the way SPEC 1.3 shows it; then dozens of chats in distinct sessions
// that must not add a process, and the memory bound with the facts it depends on.
// Hooked into server.e2e.ts as steps.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { signRequest } from '../../src/channel/protocol.js';
import { REPO } from '../helpers/binary.js';
import { requestParts } from '../helpers/chat-completion.js';
import { MAX_HEARTBEAT_REQUEST_BYTES } from '../helpers/heartbeat.js';
import { CUSTOMER, GATEWAY_UNIT, channelPost, log, type World } from './harness.js';

const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';
const NODE = '/opt/service-deploy/node/bin/node';
const QMD = '/opt/service-deploy/qmd/node_modules/.bin/qmd';
const OPENCLAW = '/usr/local/bin/openclaw';
const QMD_UNIT = 'qmd-mcp.service';
const QMD_URL = 'http://127.0.0.1:18788/mcp';
/** The MCP client OpenClaw itself uses (its bundled SDK), as installed on the server. */
const SDK = '/opt/service-deploy/openclaw/node_modules/@modelcontextprotocol/sdk/dist/esm';

/**
 * The gateway's own MCP client (OpenClaw's bundled SDK, streamable HTTP) against the
 * resident QMD service, run inside the container with the deployed Node: the tools,
 * `status`, and `query` (lex, BM25: no model needed); prints them as JSON.
 */
const MCP_CLIENT = String.raw`
import { Client } from '${SDK}/client/index.js';
import { StreamableHTTPClientTransport } from '${SDK}/client/streamableHttp.js';
const [word] = process.argv.slice(2);
const client = new Client({ name: 'e2e', version: '1' });
await client.connect(new StreamableHTTPClientTransport(new URL('${QMD_URL}')));
const tools = (await client.listTools()).tools.map((t) => t.name);
const status = await client.callTool({ name: 'status', arguments: {} });
const found = await client.callTool({ name: 'query', arguments: { searches: [{ type: 'lex', query: word }], rerank: false, collections: ['memory'] } });
await client.close();
console.log(JSON.stringify({ server: client.getServerVersion(), tools, status: status.structuredContent, result: found }));
process.exit(0);
`;

export async function mcpQuery(world: World, word: string): Promise<{ server: { name: string; version: string }; tools: string[]; status: any; result: any }> {
  const c = world.container;
  await c.ok(`mkdir -p /root/e2e && cat >/root/e2e/mcp-query.mjs`, { input: MCP_CLIENT });
  const out = await c.ok(`${NODE} /root/e2e/mcp-query.mjs ${word}`, { timeoutMs: 180_000 });
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

  // QMD runs as one resident service on loopback, and the gateway is pointed at it.
  expect((await c.ok(`${USER_ENV} systemctl --user is-active ${QMD_UNIT}`)).trim()).toBe('active');
  expect(await c.ok('ss -Hltn')).toMatch(/127\.0\.0\.1:18788\s/);
  expect(world.runtimeConfig().mcp.servers.qmd).toEqual({ url: QMD_URL, transport: 'streamable-http', requestTimeoutMs: 60000 });

  // The agent writes a memory file; the timer's refresh indexes it; the service finds it.
  const word = `zebrafish${Date.now().toString(36)}`;
  report.memoryWord = word;
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
  expect(answer.status.collections.map((col: { name: string }) => col.name)).toEqual(['memory']);
  // What the gateway's own probe of its configured server lists (openclaw mcp probe).
  const probe = JSON.parse(await c.ok(`${OPENCLAW} mcp probe qmd --json`, { timeoutMs: 180_000 }));
  expect(probe.servers.qmd).toMatchObject({ launch: QMD_URL, tools: 4 });
  expect(probe.tools).toEqual(expect.arrayContaining(['qmd__query', 'qmd__get', 'qmd__multi_get', 'qmd__status']));

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
  expect((await c.ok(`${USER_ENV} systemctl --user is-active qmd-refresh.timer ${QMD_UNIT}`)).trim().split('\n')).toEqual(['active', 'active']);
  // The service was stopped with the writers and started on the restored index (not the one it had open).
  const answer = await mcpQuery(world, 'aquarium');
  expect(JSON.stringify(answer.result)).toContain('e2e-visit.md');
}

// ---- issue 26: no process per chat, and the memory the deployment needs -------------

/**
 * Reads /proc inside the container (the deployed Node): for each root pid given, its
 * tree (the pid and every descendant) with the memory of each process from
 * smaps_rollup; and every QMD process on the server with the tree it belongs to.
 */
const FOOTPRINT = String.raw`
import fs from 'node:fs';
const roots = process.argv.slice(2).map(Number);
const read = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch { return undefined; } };
const parent = new Map();
for (const name of fs.readdirSync('/proc')) {
  if (!/^\d+$/.test(name)) continue;
  const stat = read('/proc/' + name + '/stat');
  if (stat) parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
}
const treeOf = (root) => {
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parent) if (ppid === out[i]) out.push(pid);
  return out;
};
const kib = (text, key) => Number(new RegExp('^' + key + ':\\s+(\\d+) kB', 'm').exec(text ?? '')?.[1] ?? 0);
const trees = {};
for (const root of roots) {
  const pids = root > 0 ? treeOf(root) : [];
  const processes = pids.map((pid) => {
    const smaps = read('/proc/' + pid + '/smaps_rollup');
    return { pid, comm: (read('/proc/' + pid + '/comm') ?? '?').trim(), rssKiB: kib(smaps, 'Rss'), pssKiB: kib(smaps, 'Pss'), pssAnonKiB: kib(smaps, 'Pss_Anon'), anonKiB: kib(smaps, 'Anonymous') };
  });
  const sum = (k) => processes.reduce((a, p) => a + p[k], 0);
  trees[root] = { processes: processes.length, comms: processes.map((p) => p.comm), rssKiB: sum('rssKiB'), pssKiB: sum('pssKiB'), pssAnonKiB: sum('pssAnonKiB'), anonKiB: sum('anonKiB') };
}
const qmd = [];
for (const pid of parent.keys()) {
  const cmd = (read('/proc/' + pid + '/cmdline') ?? '').split('\0').join(' ');
  if (!/@tobilu\/qmd|\.bin\/qmd/.test(cmd) || pid === process.pid) continue;
  const owner = roots.find((root) => root > 0 && treeOf(root).includes(pid));
  qmd.push({ pid, owner: owner ?? null, cmd: cmd.slice(0, 160) });
}
console.log(JSON.stringify({ trees, qmd }));
`;

export interface Tree {
  processes: number;
  comms: string[];
  rssKiB: number;
  pssKiB: number;
  pssAnonKiB: number;
  anonKiB: number;
}

export interface Footprint {
  gateway: Tree;
  qmdService: Tree;
  /** Every QMD process on the server and the unit tree it is in (`gateway`, `qmd-mcp`, or neither: a refresh). */
  qmdProcesses: Array<{ pid: number; in: 'gateway' | 'qmd-mcp' | 'other'; cmd: string }>;
  /** The server's memory as the kernel counts it (MemTotal, MemAvailable), KiB. */
  server: { totalKiB: number; availableKiB: number };
}

const mainPid = async (world: World, unit: string) => Number((await world.container.ok(`${USER_ENV} systemctl --user show -p MainPID --value ${unit}`)).trim());

/** The gateway's and QMD's process trees with their memory (PSS, anonymous), and where every QMD process is. */
export async function footprint(world: World): Promise<Footprint> {
  const c = world.container;
  const [gateway, qmd] = [await mainPid(world, GATEWAY_UNIT), await mainPid(world, QMD_UNIT)];
  await c.ok('mkdir -p /root/e2e && cat >/root/e2e/footprint.mjs', { input: FOOTPRINT });
  const out = JSON.parse((await c.ok(`${NODE} /root/e2e/footprint.mjs ${gateway} ${qmd}`, { timeoutMs: 60_000 })).trim());
  const meminfo = await c.ok('cat /proc/meminfo');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(meminfo)?.[1] ?? 0);
  return {
    gateway: out.trees[gateway],
    qmdService: out.trees[qmd],
    qmdProcesses: out.qmd.map((p: { pid: number; owner: number | null; cmd: string }) => ({ pid: p.pid, in: p.owner === gateway ? 'gateway' : p.owner === qmd ? 'qmd-mcp' : 'other', cmd: p.cmd })),
    server: { totalKiB: kib('MemTotal'), availableKiB: kib('MemAvailable') },
  };
}

export function describeFootprint(f: Footprint): string {
  const mib = (k: number) => `${(k / 1024).toFixed(0)} MiB`;
  return `gateway tree ${f.gateway.processes} processes, PSS ${mib(f.gateway.pssKiB)} (anon ${mib(f.gateway.pssAnonKiB)}); ${QMD_UNIT} ${f.qmdService.processes} process(es), PSS ${mib(f.qmdService.pssKiB)} (anon ${mib(f.qmdService.pssAnonKiB)}); QMD processes ${f.qmdProcesses.map((p) => p.in).join(',') || 'none'}`;
}

type ChatFn = (message: string) => Promise<{ reply: string }>;

/**
 * Issue 26 item 1 on the real server: `chats` signed chats through nginx, each a new
 * portal session, from four client addresses (each under the channel's 10 a minute);
 * then the process count has not grown with them (no QMD process under the gateway,
 * one in its own service), every turn was offered the QMD tools, no MCP runtime was
 * refused admission, and the agent's own `qmd__query` call finds the memory file
 * through the gateway.
 */
export async function noProcessPerChat(world: World, chat: ChatFn, token: string, knock: string, memoryWord: string, chats = 36): Promise<Record<string, unknown>> {
  const c = world.container;
  const before = await footprint(world);
  log(`before ${chats} chats: ${describeFootprint(before)}`);
  const firstRequest = world.ai.requests.length;
  const tag = randomBytes(3).toString('hex');
  const addresses = ['127.0.0.5', '127.0.0.6', '127.0.0.7', '127.0.0.8'];
  const perAddress = Math.ceil(chats / addresses.length);
  const started = Date.now();
  const results = await Promise.all(
    addresses.map(async (address, a) => {
      const out: Array<{ status?: number; sessionId?: string; ms: number; error?: string }> = [];
      for (let i = 0; i < perAddress && a * perAddress + i < chats; i++) {
        const body = JSON.stringify({ message: `session probe ${tag} ${a}-${i}` });
        const t = Date.now();
        const r = await channelPost({ knock, localAddress: address, headers: signRequest({ token, body }), body, timeoutMs: 180_000 });
        let sessionId: string | undefined;
        try {
          sessionId = JSON.parse(r.body ?? '').sessionId;
        } catch {
          sessionId = undefined;
        }
        out.push({ status: r.status, sessionId, ms: Date.now() - t, error: r.status === 200 ? undefined : (r.error ?? r.body?.slice(0, 200)) });
      }
      return out;
    }),
  );
  const all = results.flat();
  expect(all.filter((r) => r.status !== 200), JSON.stringify(all.filter((r) => r.status !== 200).slice(0, 3))).toEqual([]);
  const sessions = new Set(all.map((r) => r.sessionId));
  expect(sessions.size).toBe(chats);
  const wallMs = Date.now() - started;

  const after = await footprint(world);
  log(`after ${chats} chats in ${chats} sessions (${(wallMs / 1000).toFixed(0)} s): ${describeFootprint(after)}`);
  // No process per chat: the only QMD process is the service's, before and after; the
  // gateway's tree did not grow with the sessions (over stdio: 4 processes a chat).
  for (const f of [before, after]) expect(f.qmdProcesses.filter((p) => p.in !== 'other').map((p) => p.in)).toEqual(['qmd-mcp']);
  expect(after.qmdService.processes).toBe(1);
  expect(after.gateway.processes - before.gateway.processes, `${before.gateway.comms.join(',')} -> ${after.gateway.comms.join(',')}`).toBeLessThanOrEqual(2);

  // Every turn had the QMD tools (the 256-runtime cap was not hit), and the log says no admission failed.
  const turns = world.ai.requests.slice(firstRequest);
  expect(turns.length).toBeGreaterThanOrEqual(chats);
  const without = turns.filter((r) => !r.tools.includes('qmd__query') || !r.tools.includes('qmd__get'));
  // Which requests lacked them, and what they carried: a chat turn whose MCP listing
  // failed, or a request of another kind (no tools at all)?
  const lacking = without.slice(0, 3).map((r) => ({ model: r.model, tools: r.tools, asked: /session probe [^"\\]*/.exec(r.body)?.[0] ?? r.body.slice(0, 160) }));
  expect(without.length, `${without.length} of ${turns.length} model requests without the QMD tools: ${JSON.stringify(lacking)}`).toBe(0);
  const refused = await c.sh(`${USER_ENV} journalctl --user -u ${GATEWAY_UNIT} --no-pager | grep -c 'live runtime limit' || true`);
  expect(Number(refused.stdout.trim() || 0)).toBe(0);

  // The agent calls qmd__query itself (a scripted model turn): the gateway reaches the resident QMD.
  const marker = `QMD-TOOL-${tag}`;
  let toolResult: string | undefined;
  world.ai.script = (request) => {
    const messages = request.messages as Array<{ role: string; content: unknown }>;
    const text = (m: { content: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
    const start = messages.map((m, i) => (m.role === 'user' && text(m).includes(marker) ? i : -1)).filter((i) => i >= 0).pop();
    if (start === undefined) return undefined;
    const tool = messages.slice(start + 1).find((m) => m.role === 'tool');
    if (tool) {
      toolResult = text(tool);
      return { text: `${marker} DONE` };
    }
    return { toolCalls: [{ id: `call-${tag}`, name: 'qmd__query', arguments: { searches: [{ type: 'lex', query: memoryWord }], rerank: false } }] };
  };
  try {
    const answer = await chat(`${marker}: what do you remember about the aquarium?`);
    expect(answer.reply).toContain(`${marker} DONE`);
  } finally {
    world.ai.script = undefined;
  }
  expect(toolResult, 'no tool result reached the model').toBeDefined();
  expect(toolResult).toContain('e2e-visit.md');

  const latency = all.map((r) => r.ms).sort((x, y) => x - y);
  return {
    chats,
    sessions: sessions.size,
    wallMs,
    latencyMs: { p50: latency[Math.floor(latency.length / 2)], max: latency.at(-1) },
    before,
    after,
    gatewayAnonGrowthPerSessionKiB: Math.round((after.gateway.pssAnonKiB - before.gateway.pssAnonKiB) / chats),
    qmdToolResult: toolResult!.slice(0, 200),
  };
}

/**
 * Issue 26 item 3: the facts the gateway's memory bound depends on (systemd's version,
 * the cgroup hierarchy, what user@.service delegates and what root's user manager holds,
 * the limit the gateway's cgroup carries), and doctor's gateway-memory verdict, which
 * must agree with them: pass where the kernel holds the bound, warn (never fail) where not.
 */
export async function memoryBoundFacts(world: World): Promise<Record<string, string>> {
  const c = world.container;
  const cg = (await c.ok(`${USER_ENV} systemctl --user show -p ControlGroup --value ${GATEWAY_UNIT}`)).trim();
  const facts = await c.ok(`printf 'systemd=%s\n' "$(systemctl --version | sed -n '1s/^systemd \\([0-9]*\\).*/\\1/p')"
printf 'cgroupFs=%s\n' "$(stat -fc %T /sys/fs/cgroup)"
printf 'userUnitDelegate=%s\n' "$(grep -h '^Delegate=' /lib/systemd/system/user@.service /usr/lib/systemd/system/user@.service 2>/dev/null | head -n 1)"
printf 'user0DelegateControllers=%s\n' "$(systemctl show -p DelegateControllers --value user@0.service)"
printf 'userManagerControllers=%s\n' "$(cat /sys/fs/cgroup/user.slice/user-0.slice/user@0.service/cgroup.controllers 2>/dev/null || echo '(none: no such file)')"
printf 'gatewayMemoryMaxProperty=%s\n' "$(${USER_ENV} systemctl --user show -p MemoryMax --value ${GATEWAY_UNIT})"
printf 'gatewayMemoryMaxFile=%s\n' "$(cat /sys/fs/cgroup${cg}/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory${cg}/memory.limit_in_bytes 2>/dev/null || echo '(none)')"
printf 'qmdMemoryMaxProperty=%s\n' "$(${USER_ENV} systemctl --user show -p MemoryMax --value ${QMD_UNIT})"`);
  const out: Record<string, string> = Object.fromEntries(facts.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  out.gatewayCgroup = cg;
  const doctor = await world.deploy('doctor gateway-memory --json');
  const check = doctor.json.checks[0] as { status: string; message: string };
  out.doctor = `${check.status}: ${check.message}`;
  expect(/^\d+$/.test(out.gatewayMemoryMaxProperty!), `MemoryMax=${out.gatewayMemoryMaxProperty}: systemd has the unit's bound`).toBe(true);
  const held = out.gatewayMemoryMaxFile === out.gatewayMemoryMaxProperty || (Number(out.gatewayMemoryMaxFile) <= Number(out.gatewayMemoryMaxProperty) && Number(out.gatewayMemoryMaxProperty) - Number(out.gatewayMemoryMaxFile) < 65536);
  expect(check.status, out.doctor).toBe(held ? 'pass' : 'warn');
  log(`memory bound: ${JSON.stringify(out)}`);
  return out;
}
