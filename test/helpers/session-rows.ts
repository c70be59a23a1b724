/**
 * An in-memory stand-in for the session rows of OpenClaw's plugin runtime
 * (`api.runtime.agent.session.patchSessionEntry`), for unit tests of the
 * service-channel plugin with a scripted runtime. It follows what the pinned release
 * does (the real one: test/channel/sessions-gateway.test.ts): a
 * missing row is created from `fallbackEntry`, `update` sees the row and
 * `{ existingEntry }` (undefined for a new row), a key set to undefined is removed, and
 * `updatedAt` moves to now unless `preserveActivity`.
 */
export type SessionRow = Record<string, unknown> & { sessionId: string; updatedAt?: number };

export interface SessionRows {
  rows: Map<string, SessionRow>;
  /** Every patch, in order: the key and what the plugin returned from `update`. */
  patches: Array<{ sessionKey: string; patch: Record<string, unknown> | null }>;
  api: {
    patchSessionEntry(params: {
      agentId?: string;
      sessionKey: string;
      fallbackEntry?: SessionRow;
      preserveActivity?: boolean;
      update: (entry: SessionRow, context: { existingEntry?: SessionRow }) => Record<string, unknown> | null | Promise<Record<string, unknown> | null>;
    }): Promise<SessionRow | null>;
  };
}

export function sessionRows(now: () => number = () => Date.now()): SessionRows {
  const rows = new Map<string, SessionRow>();
  const patches: SessionRows['patches'] = [];
  // One write at a time, as the runtime's store serializes them.
  let queue: Promise<unknown> = Promise.resolve();
  return {
    rows,
    patches,
    api: {
      patchSessionEntry(params) {
        const run = queue.then(async () => {
          const existing = rows.get(params.sessionKey);
          const base = existing ?? params.fallbackEntry;
          if (!base) return null;
          const patch = await params.update(structuredClone(base), { existingEntry: existing ? structuredClone(existing) : undefined });
          patches.push({ sessionKey: params.sessionKey, patch: patch ? { ...patch } : null });
          if (!patch) return existing ? structuredClone(existing) : null;
          const next: SessionRow = { ...base };
          for (const [k, v] of Object.entries(patch)) {
            if (v === undefined) delete next[k];
            else next[k] = v;
          }
          if (!params.preserveActivity) next.updatedAt = now();
          rows.set(params.sessionKey, next);
          return structuredClone(next);
        });
        queue = run.catch(() => undefined);
        return run;
      },
    },
  };
}
