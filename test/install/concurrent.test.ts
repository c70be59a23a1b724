import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

/**
 * Issue 31: the install runs independent steps at once; `--serial` runs them one after
 * the other. Both must leave the same server: the same manifest (as a set), the same
 * packages and units asked of apt and systemd, the same JSON result but for the times.
 * (The container bench, docs/e2e.md, compares the two on a booted server.)
 */

interface Entry {
  path: string;
  type: string;
  mode: string;
  uid: number;
  gid: number;
  check: string;
  secret: boolean;
  sha256?: string;
  target?: string;
}
interface StepJson {
  id: string;
  status: string;
  startMs?: number;
  endMs?: number;
  durationMs: number;
}

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

/** Files every install makes afresh (new random key material in a public file): their content differs between any two installs. */
const FRESH_EACH_INSTALL = new Set<string>([LAYOUT.tlsCert]);

const entriesOf = (sb: Sandbox) => (JSON.parse(sb.read(LAYOUT.manifestFile)!) as { entries: Entry[] }).entries;

/** The manifest as a set; content is compared apart (contentOf), as a sandbox's own folders appear in some files. */
function manifestSet(sb: Sandbox): string[] {
  return entriesOf(sb)
    .map(({ path, type, mode, uid, gid, check, secret, target }) => JSON.stringify({ path, type, mode, uid, gid, check, secret, target }))
    .sort();
}

/** Each recorded file's content that is the same on any server: not a secret, not made afresh, the sandbox's own folders replaced. */
function contentOf(sb: Sandbox): Map<string, string> {
  const own = [sb.root, sb.state, ...sb.env().PATH!.split(':').filter((dir) => dir.startsWith('/tmp/') || dir.startsWith(sb.state))].sort((a, b) => b.length - a.length);
  const out = new Map<string, string>();
  for (const entry of entriesOf(sb)) {
    if (entry.type !== 'file' || entry.check !== 'sha256' || entry.secret || FRESH_EACH_INSTALL.has(entry.path)) continue;
    let text = sb.read(entry.path.slice(1)) ?? '(missing)';
    for (const dir of own) text = text.replaceAll(dir, '<sandbox>');
    out.set(entry.path, createHash('sha256').update(text).digest('hex'));
  }
  return out;
}

/** What apt and systemd were asked to do, as a set (the order of independent steps' calls may differ). */
function packagesAndUnits(sb: Sandbox): string[] {
  const asked = [...sb.calls('apt-get'), ...sb.calls('systemctl')].filter((c) => ['install', 'enable', 'restart', 'start', 'daemon-reload'].some((verb) => c.args.includes(verb)));
  return [...new Set(asked.map((c) => `${c.command} ${c.args.join(' ')}`))].sort();
}

/** The result without its times, and without the channel certificate's pin (its key is made afresh by every install). */
function withoutTimes(result: Record<string, unknown>): unknown {
  return JSON.parse(JSON.stringify(result, (key, value: unknown) => (['durationMs', 'startMs', 'endMs', 'elapsedMs', 'seconds', 'pin'].includes(key) ? undefined : value)));
}

async function install(serial: boolean) {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  const run = await sb.install([...FIRST_INSTALL.args, '--channel', '--json', ...(serial ? ['--serial'] : [])], FIRST_INSTALL.env);
  expect(run.exitCode, String(run.stderr)).toBe(0);
  const result = JSON.parse(String(run.stdout)) as Record<string, unknown> & { steps: StepJson[] };
  return { sb, result };
}

/** Pairs of steps that ran at the same time (one started before the other ended). */
function overlaps(steps: StepJson[]): string[] {
  const ran = steps.filter((s) => s.startMs !== undefined && s.endMs !== undefined && s.endMs > s.startMs);
  const out: string[] = [];
  for (const [i, a] of ran.entries()) for (const b of ran.slice(i + 1)) if (b.startMs! < a.endMs! && a.startMs! < b.endMs!) out.push(`${a.id}+${b.id}`);
  return out;
}

describe('install: steps at once and --serial leave the same server', () => {
  it('the same manifest, packages, units and JSON result but for the times; only the default overlaps steps', async () => {
    const serial = await install(true);
    const concurrent = await install(false);

    expect(manifestSet(concurrent.sb)).toEqual(manifestSet(serial.sb));
    expect(contentOf(concurrent.sb)).toEqual(contentOf(serial.sb));
    expect(packagesAndUnits(concurrent.sb)).toEqual(packagesAndUnits(serial.sb));
    expect(withoutTimes(concurrent.result)).toEqual(withoutTimes(serial.result));

    expect(overlaps(serial.result.steps)).toEqual([]);
    expect(overlaps(concurrent.result.steps).length).toBeGreaterThan(0);
    // Whatever order they ended in, the steps are reported in the listed order.
    expect(concurrent.result.steps.map((s) => s.id)).toEqual(serial.result.steps.map((s) => s.id));
  });
});
