// service-channel plugin: what lies behind a portal session id, and when it ends.
//
// The portal keeps one `sessionId` per conversation and sends it back to continue
// (docs/channel-protocol.md). Behind it is the runtime's session row
// `agent:main:service-channel:<sessionId>`, which holds an internal session id: the
// transcript, and the session-scoped MCP runtimes, belong to that internal id. A
// conversation idle for longer than `session.reset.idleMinutes` (spec: 7 days) starts
// fresh on its next message: the row gets a new internal id (a new, empty transcript),
// while the portal's `sessionId` stays the same.
//
// Why the plugin does this itself: the pinned runtime applies the reset policy only on
// the gateway's own reply path. api.runtime.agent.runEmbeddedAgent, which the plugin
// must use (docs/channel-protocol.md), never resets, and it records no
// `lastInteractionAt` either, so the runtime's own freshness check would measure idle
// time from the session's start instead of its last message. The documented
// api.runtime.agent.session.patchSessionEntry does both here, in one atomic write per
// message: it stamps `lastInteractionAt` (the runtime's own field for "the last
// interaction that should extend idle lifetime") and, when the conversation was idle
// too long, rotates the internal id (the store links the new id to the previous one).
// No second store: the runtime's session row is the state.
import { randomUUID } from "node:crypto";

// Fields a new internal session must not inherit from the previous one (counters of the
// previous transcript), as the gateway's own session reset sets them.
const FRESH_SESSION = {
  systemSent: false,
  abortedLastRun: false,
  compactionCount: 0,
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  totalTokensFresh: true,
};

// A row the runtime archived (session.maintenance: `pruneAfter`, or the `maxEntries`
// cap) that gets a message again is a live conversation again: archived rows do not
// count towards the cap and the disk budget may evict them with their history.
const UNARCHIVED = { archivedAt: undefined, archivedBy: undefined, archiveReason: undefined };

// The idle limit in ms from the runtime's own config (session.reset), or undefined when
// sessions do not expire (no reset block, mode "none", no positive idleMinutes: the
// runtime's own rules). A daily reset (mode "daily", atHour) is not applied here.
export function idleLimitMs(config) {
  const reset = config?.session?.reset;
  if (!reset || typeof reset !== "object" || reset.mode === "none") return undefined;
  const minutes = Math.floor(Number(reset.idleMinutes));
  return Number.isFinite(minutes) && minutes > 0 ? minutes * 60000 : undefined;
}

// When the session last had a message: the stamp this module writes, else (a row written
// before it, or by the runtime alone) the row's last update, which a turn refreshes.
export function lastMessageAt(entry) {
  const stamped = entry?.lastInteractionAt;
  if (typeof stamped === "number" && Number.isFinite(stamped)) return stamped;
  const updated = entry?.updatedAt;
  return typeof updated === "number" && Number.isFinite(updated) ? updated : undefined;
}

// Records one portal message in the session row and returns the internal session id
// the turn runs in: { sessionId, previousSessionId?, idleMs? } (the last two when this
// message started a fresh session). Creates the row for a new conversation (a random
// internal id, never the portal's: a new row must not meet an old transcript).
export async function admitMessage(api, { agentId, sessionKey, nowMs, idleLimit, newSessionId = randomUUID }) {
  let fresh;
  const entry = await api.runtime.agent.session.patchSessionEntry({
    agentId,
    sessionKey,
    fallbackEntry: { sessionId: newSessionId(), updatedAt: nowMs, sessionStartedAt: nowMs },
    // Decided inside the store's write, on the row as it is now: two messages after the
    // same idle spell rotate once, the second continues the new session.
    update: (current, context) => {
      fresh = undefined;
      if (!context?.existingEntry) return { lastInteractionAt: nowMs };
      const last = lastMessageAt(current);
      const idleMs = last === undefined ? undefined : Math.max(0, nowMs - last);
      const archived = current.archivedAt !== undefined || current.archiveReason !== undefined;
      if (idleLimit === undefined || idleMs === undefined || idleMs <= idleLimit) {
        return { lastInteractionAt: nowMs, ...(archived ? UNARCHIVED : {}) };
      }
      fresh = { previousSessionId: current.sessionId, idleMs };
      return { ...FRESH_SESSION, ...UNARCHIVED, sessionId: newSessionId(), sessionStartedAt: nowMs, lastInteractionAt: nowMs };
    },
  });
  if (!entry || typeof entry.sessionId !== "string" || entry.sessionId === "") throw new Error(`the runtime returned no session for ${sessionKey}`);
  return { sessionId: entry.sessionId, ...fresh };
}
