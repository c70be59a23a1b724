import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/host/index.js';
import { GATEWAY_REFUSAL_EXIT, LEASE_STARTUP_TIMEOUT, startRefusal } from '../../src/steps/health.js';
import { REPO } from '../helpers/binary.js';
import { budget, waitUntil } from '../helpers/budget.js';
import { freePort } from '../helpers/nginx.js';
import { ensureOpenClaw, pinnedNodePath } from '../helpers/openclaw.js';
import { tempDir } from '../helpers/tmp.js';
import { SYSTEMD_STARTED } from '../helpers/gateway-journal.js';

/**
 * The busy-server refusal the health wait and the guard start again (steps/health.ts),
 * against the pinned OpenClaw itself: a copy of the release whose state lease worker gets
 * 1 ms instead of 5 s to be ready (what a loaded server's cold start amounts to) must exit
 * 78 with the line LEASE_STARTUP_TIMEOUT matches, and the unchanged release started on the
 * same state afterwards must answer /healthz: the refusal leaves nothing a plain start
 * cannot get past (no `openclaw doctor --fix` needed, whatever its message suggests).
 */
const LIMIT_LINE = 'const LEASE_HEARTBEAT_START_TIMEOUT_MS = 5e3;';
const copies: string[] = [];
afterAll(() => {
  for (const dir of copies) fs.rmSync(dir, { recursive: true, force: true });
});

/** The release's files that hold the limit (the main thread's and the worker's copy). */
function filesWithLimit(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.(m?js)$/.test(entry.name)) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (fs.readFileSync(file, 'utf8').includes(LIMIT_LINE)) found.push(file);
  }
  return found;
}

/** A copy of the release (hard links, the patched files replaced, not edited in place). */
async function releaseWithLimit(entry: string, limit: string): Promise<string> {
  const original = path.dirname(entry);
  // Beside the cached release: hard links need the same file system.
  const copy = path.join(REPO, '.cache', `openclaw-refusal-${process.pid}`);
  fs.rmSync(copy, { recursive: true, force: true });
  copies.push(copy);
  await execa('cp', ['-al', original, copy]).catch(() => execa('cp', ['-a', original, copy]));
  const files = filesWithLimit(path.join(copy, 'dist'));
  expect(files.length, 'the pinned release states its lease worker limit (5e3) in its main thread and its worker').toBeGreaterThanOrEqual(2);
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8').replace(LIMIT_LINE, `const LEASE_HEARTBEAT_START_TIMEOUT_MS = ${limit};`);
    fs.rmSync(file);
    fs.writeFileSync(file, text);
  }
  return path.join(copy, path.basename(entry));
}

describe('the pinned OpenClaw, its state lease worker too slow at the start (steps/health.ts)', () => {
  it('exits 78 with the line the wait recognizes; a plain start afterwards answers /healthz', { timeout: budget(600_000) }, async () => {
    const entry = await ensureOpenClaw();
    const slow = await releaseWithLimit(entry, '1');
    const stateDir = tempDir('sd-refusal-');
    const port = await freePort();
    const configPath = path.join(stateDir, 'openclaw.json');
    const config = {
      gateway: { mode: 'local', port, bind: 'loopback', auth: { mode: 'token', token: 'pkt_gateway_token_for_tests_0123456789' } },
      models: { mode: 'replace', providers: { service: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-stand-in', api: 'openai-completions', models: [{ id: 'm', name: 'm', contextWindow: 128000, maxTokens: 4096 }] } } },
      agents: { defaults: { model: { primary: 'service/m' }, heartbeat: { every: '0m' } } },
    };
    fs.mkdirSync(path.join(stateDir, 'home'));
    fs.writeFileSync(configPath, JSON.stringify(config, null, 2), { mode: 0o600 });
    const env = { PATH: pinnedNodePath(), HOME: path.join(stateDir, 'home'), OPENCLAW_STATE_DIR: stateDir, OPENCLAW_CONFIG_PATH: configPath, NODE_ENV: 'production' };

    const refused = await execa('node', [slow, 'gateway', 'run'], { env, extendEnv: false, reject: false, all: true, timeout: budget(300_000) });
    const lines = String(refused.all).split('\n');
    expect(refused.exitCode, String(refused.all).slice(-3000)).toBe(Number(GATEWAY_REFUSAL_EXIT.split(' ').pop()));
    expect(lines.some((line) => LEASE_STARTUP_TIMEOUT.test(line)), String(refused.all).slice(-3000)).toBe(true);

    // What the wait and the guard read from the journal: the systemd line, then the gateway's.
    const journal = [SYSTEMD_STARTED, ...lines];
    const host = { services: { journalTail: async () => journal }, redactor: { redact: (text: string) => text } } as unknown as Host;
    const refusal = await startRefusal(host, { activeState: 'failed', subState: 'failed', result: 'exit-code', lastExit: GATEWAY_REFUSAL_EXIT });
    expect(refusal).toEqual({ transient: true, reason: expect.stringMatching(/^Gateway failed to start: /) });

    const gateway = spawn('node', [entry, 'gateway', 'run'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let log = '';
    gateway.stdout.on('data', (chunk) => (log += chunk));
    gateway.stderr.on('data', (chunk) => (log += chunk));
    try {
      await waitUntil(
        `the unchanged release on the same state to answer GET http://127.0.0.1:${port}/healthz`,
        async () => {
          if (gateway.exitCode !== null) throw new Error(`the gateway exited (${gateway.exitCode}):\n${log.slice(-3000)}`);
          return fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5000) }).then((r) => r.ok, () => false);
        },
        { budgetMs: 180_000, intervalMs: 500, lastSeen: () => log.slice(-2000) },
      );
      expect(log).not.toMatch(LEASE_STARTUP_TIMEOUT);
    } finally {
      if (gateway.exitCode === null) process.kill(-gateway.pid!, 'SIGKILL');
    }
  });
});
