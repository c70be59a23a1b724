/**
 * The gateway unit's journal as steps/health.ts startRefusal reads it: systemd's line
 * for the start, then what the pinned OpenClaw prints before it exits 78. The busy-start
 * lines are the release's own (stop 36's CI journal; test/runtime/gateway-refusal.test.ts
 * makes the release print them).
 */
export const SYSTEMD_STARTED = 'Started openclaw-gateway.service - OpenClaw gateway (private AI agent).';

/** Its state lease worker missed the 5 s startup limit: a start again is the fix. */
export const BUSY_START_LINES = [
  '- Agent database maintenance deferred: agent database maintenance lease core:agent-database-maintenance/global was lost | state lease heartbeat did not become ready (phase=startup, trigger=timeout, status=starting, elapsedMs=5045, timeoutMs=5000, onlineObserved=false, startupPhase=entry-not-observed)',
  'Gateway failed to start: OpenClaw startup migrations did not complete cleanly; refusing to report the gateway ready.',
];
export const BUSY_START_JOURNAL = [SYSTEMD_STARTED, ...BUSY_START_LINES];

/** A config it refuses: a start alone stops again. */
export const CONFIG_ERROR_JOURNAL = [SYSTEMD_STARTED, 'Gateway failed to start: Invalid config at /root/.openclaw/openclaw.json'];
