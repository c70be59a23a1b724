import { execa } from 'execa';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINARY, REPO } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { installSteps } from '../../src/steps/index.js';

// What a person sees of an install: step lines on stderr (one per event when piped, a
// live line on a terminal), then on stdout the recap and what to do next.

const STAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ /;
const ESC = /\u001B/;
const OUTCOME = /: (ok|changed \(.+\)|skipped: .+|failed: .+)$/;
const PROGRESS = ': ... ';
const PTY = path.join(REPO, 'test/fixtures/pty-run.py');

interface JsonStep {
  id: string;
  status: string;
  reason?: string;
}
const TITLES = new Map(installSteps().map((s) => [s.id, s.title]));

/** The steps of a converged re-run (`--json`), each with its title. */
async function rerunSteps(): Promise<Array<JsonStep & { title: string }>> {
  const run = await execa(BINARY, ['install', '--non-interactive', '--json'], { env: sb.env(), extendEnv: false, reject: false });
  expect(run.exitCode, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { steps: JsonStep[] }).steps.map((s) => ({ ...s, title: TITLES.get(s.id)! }));
}

let sb: Sandbox;
afterAll(async () => sb?.close());

/** The step lines of a piped run: every line of stderr, each checked for its timestamp, which is then removed. */
function stepLines(stderr: string): string[] {
  const lines = stderr.split('\n').filter(Boolean);
  for (const line of lines) expect(line, 'every stderr line of a piped install starts with a UTC timestamp').toMatch(STAMP);
  return lines.map((l) => l.replace(STAMP, ''));
}

/**
 * Checks the outcome lines of a run whose steps ended as `steps` (the JSON of a run of
 * the same server): one line per step event, each step's title on exactly one line with
 * its outcome, steps skipped for one reason that end one after the other sharing a line,
 * and each step's line after the lines of the steps it needs (the steps run several at
 * once, so a line comes when its step ends: schedule.ts). `sameStatus` maps a status
 * before comparing (a first install's `changed` against a re-run's `ok`).
 */
function expectStepLines(lines: string[], steps: Array<JsonStep & { title: string }>, sameStatus: (line: string) => string = (l) => l): void {
  const at = new Map<string, number>();
  for (const [index, line] of lines.entries()) {
    expect(line).toMatch(OUTCOME);
    const skipped = / ?: skipped: (.+)$/.exec(line);
    const own = steps.filter((s) => line.startsWith(`${s.title}: `)).sort((a, b) => b.title.length - a.title.length)[0];
    const titles = skipped ? line.slice(0, skipped.index).split('; ') : [own?.title ?? line];
    for (const title of titles) {
      expect(at.has(title), `${title} on two lines`).toBe(false);
      at.set(title, index);
      const step = steps.find((s) => s.title === title);
      expect(step, `a line for an unknown step: ${line}`).toBeDefined();
      if (skipped) expect(`${step!.status}: ${step!.reason}`).toBe(`skipped: ${skipped[1]}`);
      else expect(sameStatus(line)).toBe(`${title}: ${step!.status}`);
    }
  }
  expect([...at.keys()].sort()).toEqual(steps.map((s) => s.title).sort());
  const needs = new Map(installSteps().map((s) => [s.id, s.needs ?? []]));
  for (const step of steps) {
    for (const need of needs.get(step.id) ?? []) {
      const title = TITLES.get(need);
      if (title && at.has(title) && at.get(title)! !== at.get(step.title)) expect(at.get(title)!, `${step.title} printed before ${title}, which it needs`).toBeLessThan(at.get(step.title)!);
    }
  }
}

/**
 * The sandbox's Node release through a loopback proxy that sends the tarball in two
 * halves, the second no sooner than `pauseMs` after the first: a download that takes
 * a while, as on a real server.
 */
async function slowNodeSource(sandbox: Sandbox, pauseMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const env = sandbox.env();
  const caFile = env.SERVICE_DOWNLOAD_CA_FILE!;
  const ca = fs.readFileSync(caFile);
  const upstream = env.SERVICE_NODE_DIST_URL!;
  const fetchUpstream = (url: string) =>
    new Promise<Buffer>((resolve, reject) => {
      https
        .get(`${upstream}${url}`, { ca }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
        })
        .on('error', reject);
    });
  const dir = path.dirname(caFile);
  const server = https.createServer({ key: fs.readFileSync(path.join(dir, 'server.key')), cert: fs.readFileSync(path.join(dir, 'server.pem')) }, (req, res) => {
    void fetchUpstream(req.url ?? '/').then((body) => {
      if (!req.url?.endsWith('.tar.gz')) return void res.writeHead(200).end(body);
      res.writeHead(200, { 'content-length': String(body.length) });
      res.write(body.subarray(0, Math.floor(body.length / 2)));
      setTimeout(() => res.end(body.subarray(Math.floor(body.length / 2))), pauseMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('install output when piped (cloud-init, CI, | tee)', () => {
  beforeAll(async () => {
    sb = await makeSandbox();
  });

  it('a first install: one timestamped line per step, no line twice, no colour; the channel steps share their skip line; the download shows its bytes; stdout ends with what to do next', async () => {
    // The second half of the tarball comes at least 1.2 s after the first: a progress line in bytes is due by then.
    const source = await slowNodeSource(sb, 1200);
    let first;
    try {
      first = await sb.install(FIRST_INSTALL.args, { ...FIRST_INSTALL.env, SERVICE_NODE_DIST_URL: source.url });
    } finally {
      await source.close();
    }
    expect(first.exitCode, String(first.stderr)).toBe(0);
    const stderr = String(first.stderr);
    const stdout = String(first.stdout);
    expect(stderr + stdout).not.toMatch(ESC);
    const lines = stepLines(stderr);
    expect(new Set(lines).size, `a line came twice:\n${lines.join('\n')}`).toBe(lines.length);

    // The outcome lines, one per step in order, as the same run reports them in JSON
    // (a converged re-run: every step ok but the channel's).
    const outcomes = lines.filter((l) => !l.includes(PROGRESS));
    const steps = await rerunSteps();
    expectStepLines(outcomes, steps, (l) => l.replace(/: (ok|changed \(.+\))$/, ': ok'));
    const channel = steps.filter((s) => s.id.startsWith('channel'));
    expect(channel.length).toBeGreaterThanOrEqual(5);
    const skipLines = outcomes.filter((l) => l.includes(': skipped: '));
    for (const line of skipLines) expect(line).toMatch(/: skipped: the channel endpoint is configured only by the catalog deploy/);
    expect(skipLines.join('; ').split('; ')).toHaveLength(channel.length);

    // Long work said what it was doing, sparsely: the Node download in bytes.
    const progress = lines.filter((l) => l.includes(PROGRESS));
    expect(progress.some((l) => /^Node\.js for the agent runtime: \.\.\. downloading node-v[\d.]+-linux-\w+\.tar\.gz: [\d.]+ of [\d.]+ MB \(\d+%\)$/.test(l)), progress.join('\n')).toBe(true);
    expect(progress.some((l) => l.startsWith('Agent runtime (OpenClaw, from the shipped lock): ... npm ci openclaw@'))).toBe(true);
    expect(progress.length).toBeLessThan(lines.length);

    // stdout: the recap, then what a person needs next.
    expect(stdout).toMatch(/^recap: ok=\d+ changed=\d+ skipped=\d+ failed=0 \([\d.]+ s\)$/m);
    expect(stdout).toMatch(/^On the mesh: +https:\/\/openclaw-acme-dental-gmbh\.tail1234\.ts\.net /m);
    expect(stdout).toMatch(/^Pair a device: .*service-deploy devices list.*service-deploy devices approve <request-id>/m);
    expect(stdout).toMatch(/^Health: .*service-deploy doctor/m);
    expect(stdout).toMatch(/^Logs: +\/var\/log\/service-deploy\/install\.log /m);
    expect(stdout.indexOf('recap:')).toBeLessThan(stdout.indexOf('On the mesh:'));
  });

  it('a converged re-run: exactly one line per step event, all ok, nothing else', async () => {
    const again = await sb.install(['--non-interactive']);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    const lines = stepLines(String(again.stderr));
    expectStepLines(lines, await rerunSteps());
    expect(new Set(lines).size).toBe(lines.length);
    expect(String(again.stdout)).toContain('service-deploy doctor');
  });

  it('a failure: the step says why on its line; stderr ends with where it stopped, what to do and where the log is', async () => {
    sb.fail('dpkg-query', 'dpkg: status database is damaged');
    try {
      const failed = await sb.install(['--non-interactive']);
      expect(failed.exitCode).toBe(1);
      const stderr = String(failed.stderr);
      const stamped = stderr.split('\n').filter((l) => STAMP.test(l));
      // Steps running beside it end after it (their lines may follow); none starts after it.
      expect(stamped.map((l) => l.replace(STAMP, '')).filter((l) => / failed: /.test(l))).toEqual([expect.stringMatching(/^System packages: failed: still missing after apt-get install: nginx/)]);
      expect(stamped.some((l) => l.includes('Gateway enforcer'))).toBe(false);
      const after = stderr.slice(stderr.indexOf(stamped.at(-1)!) + stamped.at(-1)!.length).trim().split('\n');
      expect(after[0]).toMatch(/^Stopped at: System packages: still missing after apt-get install: nginx/);
      expect(after[1]).toMatch(/^What to do: /);
      expect(after.join('\n')).toMatch(/run the same command again/);
      expect(after.at(-1)).toMatch(/^Log: \/var\/log\/service-deploy\/install\.log /);
      // No next steps on stdout after a failure: the recap says it failed.
      expect(String(failed.stdout)).toMatch(/^recap: .* failed=1 /m);
      expect(String(failed.stdout)).not.toContain('Pair a device');
    } finally {
      sb.heal('dpkg-query');
    }
  });

  it('--json: no step lines and no next steps, one JSON document on stdout', async () => {
    const run = await execa(BINARY, ['install', '--non-interactive', '--json'], { env: sb.env(), extendEnv: false, reject: false });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout).recap.failed).toBe(0);
  });
});

describe('install output on a terminal', () => {
  const onTerminal = (env: Record<string, string>) =>
    execa('python3', [PTY, '[]', BINARY, 'install', '--non-interactive'], {
      env: { ...sb.env(), TERM: 'xterm-256color', COLUMNS: '100', LINES: '40', ...env },
      extendEnv: false,
      reject: false,
      timeout: budget(120_000),
    });

  it('symbols and colours, no timestamps; NO_COLOR takes the colours away', async () => {
    const colour = await onTerminal({});
    expect(colour.exitCode, colour.stdout).toBe(0);
    expect(colour.stdout).toMatch(/\u001B\[32m✔\u001B\[0m Preflight checks: ok/);
    expect(colour.stdout).toMatch(/↓ (.*; )?Channel secrets \(channel\.env\)(; .*)?: skipped: the channel endpoint/);
    expect(colour.stdout).not.toMatch(STAMP);
    expect(colour.stdout).toMatch(/^Pair a device: /m);

    const plain = await onTerminal({ NO_COLOR: '1' });
    expect(plain.exitCode, plain.stdout).toBe(0);
    expect(plain.stdout).toContain('✔ Preflight checks: ok');
    expect(plain.stdout).not.toMatch(/\u001B\[[\d;]*m/);
  });

  it('TERM=dumb gets the plain lines', async () => {
    const dumb = await onTerminal({ TERM: 'dumb' });
    expect(dumb.exitCode, dumb.stdout).toBe(0);
    expect(dumb.stdout).not.toMatch(ESC);
    expect(dumb.stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ Preflight checks: ok\r?$/m);
  });
});

describe('the catalog deploy (cloud-init): JSON on stdout, the step lines on stderr', () => {
  it('stdout is the one JSON document; stderr has one timestamped line per step and nothing to do next', async () => {
    const catalog = await makeSandbox();
    try {
      const run = await catalog.install(['--catalog', '--customer-name', 'Catalog Co'], FIRST_INSTALL.env);
      expect(run.exitCode, String(run.stderr)).toBe(0);
      const out = JSON.parse(String(run.stdout)) as { steps: JsonStep[] };
      const lines = stepLines(String(run.stderr)).filter((l) => !l.includes(PROGRESS));
      expect(new Set(lines).size).toBe(lines.length);
      // No step is skipped in the catalog deploy: one line each, after the steps it needs.
      expect(out.steps.filter((s) => s.status === 'skipped')).toEqual([]);
      expect(lines).toHaveLength(out.steps.length);
      expectStepLines(lines, out.steps.map((s) => ({ ...s, title: TITLES.get(s.id)! })), (l) => l.replace(/: changed \(.+\)$/, ': changed'));
      expect(String(run.stderr)).not.toContain('Pair a device');
    } finally {
      await catalog.close();
    }
  });
});
