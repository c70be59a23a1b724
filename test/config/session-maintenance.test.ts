import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import { SESSION_DISK_BUDGET_BYTES, SESSION_MAINTENANCE, desiredRuntimeConfig, type ManagedSettings } from '../../src/config/runtime-config.js';
import { loadProfile } from '../../src/profile.js';
import { MIN_FREE_DISK } from '../../src/steps/preflight.js';
import { ensureOpenClaw } from '../helpers/openclaw.js';

const settings: ManagedSettings = { answers: { modelId: 'model-a' }, profile: loadProfile({}), components: loadComponents({}), channel: true };
const DAY = 86_400_000;

describe('session.maintenance as the install writes it', () => {
  it('the managed keys on a fresh config and over a user\'s; the user\'s other keys stay; applying it twice changes nothing', () => {
    const fresh = desiredRuntimeConfig(undefined, settings) as any;
    expect(fresh.session.maintenance).toEqual({ mode: 'enforce', pruneAfter: '3650d', maxDiskBytes: '512mb' });
    const tuned = desiredRuntimeConfig({ session: { maintenance: { mode: 'warn', maxDiskBytes: '10gb', preserveRecent: '7d' }, dmScope: 'per-peer' } }, settings) as any;
    expect(tuned.session.maintenance).toEqual({ mode: 'enforce', pruneAfter: '3650d', maxDiskBytes: '512mb', preserveRecent: '7d' });
    expect(tuned.session.dmScope).toBe('per-peer');
    expect(tuned.session.reset).toEqual({ mode: 'idle', idleMinutes: 7 * 24 * 60 });
    expect(desiredRuntimeConfig(tuned, settings)).toEqual(tuned);
  });

  it('the budget fits the disk preflight asks for (a sixth of it), where the runtime default (10 GB) does not', () => {
    expect(SESSION_MAINTENANCE.maxDiskBytes).toBe(`${SESSION_DISK_BUDGET_BYTES / 1024 ** 2}mb`);
    expect(SESSION_DISK_BUDGET_BYTES * 6).toBeLessThanOrEqual(MIN_FREE_DISK);
    expect(10 * 1024 ** 3).toBeGreaterThan(MIN_FREE_DISK);
  });
});

/**
 * The pinned OpenClaw's own session-maintenance functions (dist/store-maintenance-*.mjs),
 * looked up by the names its bundle exports them under, so a new pin that changes them
 * fails here by name.
 */
interface Maintenance {
  resolveMaintenanceConfigFromInput(input: unknown): { mode: string; pruneAfterMs: number; maxEntries: number; maxDiskBytes: number | null; highWaterBytes: number | null };
  pruneStaleEntries(store: Record<string, Entry>, maxAgeMs: number, opts?: { log?: boolean }): number;
  capEntryCount(store: Record<string, Entry>, maxEntries: number, opts?: { log?: boolean }): number;
  isSessionEntryDiskBudgetEvictable(params: { key: string; entry: Entry }): boolean;
}
interface Entry {
  updatedAt: number;
  lastInteractionAt: number;
  sessionStartedAt: number;
  archivedAt?: number;
  archiveReason?: string;
}

let runtime: Maintenance;
beforeAll(async () => {
  const dist = path.join(path.dirname(await ensureOpenClaw()), 'dist');
  const file = fs.readdirSync(dist).find((f) => /^store-maintenance-[A-Za-z0-9_-]+\.mjs$/.test(f));
  expect(file, `no store-maintenance module in ${dist}`).toBeDefined();
  const text = fs.readFileSync(path.join(dist, file!), 'utf8');
  const exported = new Map([...(/export \{([^}]+)\}/.exec(text)?.[1] ?? '').matchAll(/(\w+) as (\w+)/g)].map((m) => [m[1]!, m[2]!]));
  const mod = (await import(pathToFileURL(path.join(dist, file!)).href)) as Record<string, unknown>;
  const fn = (name: keyof Maintenance) => {
    const key = exported.get(name);
    expect(key, `${file} no longer exports ${name}`).toBeDefined();
    return mod[key!] as never;
  };
  runtime = {
    resolveMaintenanceConfigFromInput: fn('resolveMaintenanceConfigFromInput'),
    pruneStaleEntries: fn('pruneStaleEntries'),
    capEntryCount: fn('capEntryCount'),
    isSessionEntryDiskBudgetEvictable: fn('isSessionEntryDiskBudgetEvictable'),
  };
}, 10 * 60_000);

/** Portal sessions as the channel plugin keys them (agent:main:service-channel:<sessionId>), the oldest idle `days` days. */
function portalSessions(count: number, oldestDays: number): Record<string, Entry> {
  const now = Date.now();
  const store: Record<string, Entry> = {};
  for (let i = 0; i < count; i++) {
    const at = now - ((oldestDays * (count - i)) / count) * DAY;
    store[`agent:main:service-channel:portal-${String(i).padStart(4, '0')}`] = { updatedAt: at, lastInteractionAt: at, sessionStartedAt: at - 60_000 };
  }
  return store;
}

describe('the pinned runtime reads our session.maintenance as meant', () => {
  it('resolves our block: 512 MiB budget cleaned to 80 %, age archiving after 3650 days, 5000 sessions, enforce; its defaults were 10 GB and 30 days', () => {
    const ours = runtime.resolveMaintenanceConfigFromInput(SESSION_MAINTENANCE);
    expect(ours).toMatchObject({ mode: 'enforce', pruneAfterMs: 3650 * DAY, maxEntries: 5000, maxDiskBytes: SESSION_DISK_BUDGET_BYTES, highWaterBytes: Math.floor(SESSION_DISK_BUDGET_BYTES * 0.8) });
    const defaults = runtime.resolveMaintenanceConfigFromInput(undefined);
    expect(defaults).toMatchObject({ mode: 'enforce', pruneAfterMs: 30 * DAY, maxEntries: 5000, maxDiskBytes: 10 * 1024 ** 3 });
  });

  it('with the default pruneAfter, portal sessions idle 30 days are archived for their age, which the disk budget never deletes', () => {
    const store = portalSessions(60, 60);
    runtime.pruneStaleEntries(store, runtime.resolveMaintenanceConfigFromInput(undefined).pruneAfterMs, { log: false });
    const archived = Object.entries(store).filter(([, e]) => e.archivedAt !== undefined);
    expect(archived.length).toBeGreaterThanOrEqual(29);
    expect(new Set(archived.map(([, e]) => e.archiveReason))).toEqual(new Set(['age-retention']));
    expect(archived.some(([key, entry]) => runtime.isSessionEntryDiskBudgetEvictable({ key, entry }))).toBe(false);
  });

  it('with ours, none is archived for its age; past the entry cap the oldest are archived by the cap, and those the disk budget may delete', () => {
    const store = portalSessions(60, 60);
    runtime.pruneStaleEntries(store, runtime.resolveMaintenanceConfigFromInput(SESSION_MAINTENANCE).pruneAfterMs, { log: false });
    expect(Object.values(store).filter((e) => e.archivedAt !== undefined)).toEqual([]);
    // The cap at a small size stands for maxEntries (5000): the same code path.
    runtime.capEntryCount(store, 40, { log: false });
    const archived = Object.entries(store).filter(([, e]) => e.archivedAt !== undefined);
    expect(archived.map(([key]) => key)).toEqual(Object.keys(store).slice(0, 20));
    expect(new Set(archived.map(([, e]) => e.archiveReason))).toEqual(new Set(['active-session-cap']));
    expect(archived.every(([key, entry]) => runtime.isSessionEntryDiskBudgetEvictable({ key, entry }))).toBe(true);
  });
});
