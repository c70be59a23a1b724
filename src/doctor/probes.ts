import type { RunResult } from '../host/exec.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { openclaw } from '../runtime/openclaw.js';

/**
 * The slow read-only commands of doctor's checks (each a process that runs for a while:
 * the OpenClaw CLI, systemd-analyze, nginx -t, journalctl). The checks ask for them
 * through DoctorContext, which runs each at most once per pass and starts them before
 * the checks' own work (DoctorContext.startSlowProbes), so they run while it is done.
 */

export interface GuardRun {
  at: Date;
  message: string;
}

/** The guard's last line in the journal (`journalctl -t service-guard`), if any. */
export async function lastGuardRun(host: Host): Promise<GuardRun | undefined> {
  const result = await host.exec.run('journalctl', ['-t', 'service-guard', '-n', '1', '-o', 'json', '--no-pager', '-q'], { allowFailure: true, timeoutMs: 10_000 });
  const line = result.stdout.trim().split('\n').pop();
  if (result.exitCode !== 0 || !line) return undefined;
  try {
    const entry = JSON.parse(line) as { __REALTIME_TIMESTAMP?: string; MESSAGE?: string };
    const micros = Number(entry.__REALTIME_TIMESTAMP);
    if (!Number.isFinite(micros)) return undefined;
    return { at: new Date(micros / 1000), message: typeof entry.MESSAGE === 'string' ? entry.MESSAGE : '' };
  } catch {
    return undefined;
  }
}

export interface PendingDevice {
  requestId: string;
  name?: string;
}

/** `openclaw devices list --json` ({pending: [...], paired: [...]}), pending requests only. */
export async function pendingDevices(host: Host): Promise<PendingDevice[]> {
  const result = await openclaw(host, ['devices', 'list', '--json'], { timeoutMs: 30_000 });
  const parsed = JSON.parse(result.stdout || '{}') as { pending?: Array<Record<string, unknown>> };
  return (parsed.pending ?? []).map((p) => ({
    requestId: String(p.requestId ?? p.id ?? ''),
    name: typeof p.displayName === 'string' ? p.displayName : typeof p.platform === 'string' ? p.platform : undefined,
  }));
}

/** `openclaw config validate --json`: the runtime's own judgement of openclaw.json. */
export function configValidation(host: Host): Promise<RunResult> {
  return openclaw(host, ['config', 'validate', '--json'], { allowFailure: true, timeoutMs: 60_000 });
}

/** How long `openclaw secrets audit --check` may take (it reads every config and secret source). */
export const SECRETS_AUDIT_TIMEOUT_MS = 90_000;

/** `openclaw secrets audit --check --json`. */
export function secretsAudit(host: Host): Promise<RunResult> {
  return openclaw(host, ['secrets', 'audit', '--check', '--json'], { allowFailure: true, timeoutMs: SECRETS_AUDIT_TIMEOUT_MS });
}

/** `systemd-analyze security` of the gateway unit as root's user manager loaded it. */
export function sandboxRating(host: Host): Promise<RunResult> {
  return host.exec
    .run('systemd-analyze', ['security', '--user', '--no-pager', LAYOUT.gatewayUnit], {
      env: { XDG_RUNTIME_DIR: '/run/user/0', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/0/bus' },
      allowFailure: true,
      timeoutMs: 60_000,
    })
    .catch((error: Error) => ({ command: 'systemd-analyze security', exitCode: 127, stdout: '', stderr: error.message, failed: true, timedOut: false }));
}

/** `nginx -t`. */
export function nginxTest(host: Host): Promise<RunResult> {
  return host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
}
