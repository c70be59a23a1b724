import { DeployError, UsageError } from '../errors.js';
import type { RunResult } from '../host/exec.js';
import { createHost, type Host } from '../host/index.js';
import { printLine } from '../output.js';
import { devicesApproveOutput, devicesListOutput, devicesRemoveOutput, emitJson } from '../json/index.js';
import { openclaw } from '../runtime/openclaw.js';
import type { OpsOptions } from './gateway.js';

const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
/** A device id as `devices list` shows it, or its first characters (at least 8). */
const DEVICE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{7,127}$/;

type Entry = Record<string, unknown>;

/**
 * The runtime's RPC timeout for its `devices` commands. Its default (10 s) ran out on a
 * busy gateway in the e2e, right after a browser connected and loaded the UI.
 */
const DEVICES_RPC_TIMEOUT_MS = 30_000;

/** `openclaw devices ...` with a timeout a busy gateway meets; a failure says the runtime's own reason. */
async function runDevices(host: Host, args: string[]): Promise<RunResult> {
  const result = await openclaw(host, ['devices', ...args, '--timeout', String(DEVICES_RPC_TIMEOUT_MS)], { timeoutMs: DEVICES_RPC_TIMEOUT_MS + 30_000, allowFailure: true });
  if (result.exitCode === 0 && !result.timedOut) return result;
  // With --json it prints {ok: false, error: {message}} on stdout; without, its reason on stderr.
  let reason: string | undefined;
  try {
    reason = (JSON.parse(result.stdout) as { error?: { message?: string } }).error?.message;
  } catch {
    reason = undefined;
  }
  reason ??= result.stderr.trim().split('\n').filter((line) => line.trim() !== '' && !line.startsWith('[openclaw] ')).at(-1) ?? (result.timedOut ? 'no answer' : `exit code ${result.exitCode}`);
  throw new DeployError(`openclaw devices ${args[0]} failed: ${host.redactor.redact(reason)}`, 'is the gateway up? `service-deploy gateway status`; then run the same command again');
}

interface DeviceList {
  pending?: Entry[];
  paired?: Entry[];
}

async function readDevices(host: Host): Promise<Required<DeviceList>> {
  const result = await runDevices(host, ['list', '--json']);
  const parsed = JSON.parse(result.stdout || '{}') as DeviceList;
  return { pending: parsed.pending ?? [], paired: parsed.paired ?? [] };
}

/** What names a device for a person: its operator label, its own name, its client; and where it was seen. */
function describeDevice(d: Entry): string {
  const name = [d.operatorLabel ?? d.displayName, d.platform, d.clientId].filter((v) => typeof v === 'string' && v !== '');
  const from = typeof d.remoteIp === 'string' ? [`from ${d.remoteIp}`] : [];
  const seen = typeof d.lastSeenAtMs === 'number' ? [`last seen ${new Date(d.lastSeenAtMs).toISOString().slice(0, 16).replace('T', ' ')} UTC`] : [];
  return [...name, ...from, ...seen].join('  ');
}

/** `service-deploy devices list`: `openclaw devices list --json`, shown as a short table. */
export async function listDevices(options: Omit<OpsOptions, 'lines'>): Promise<void> {
  const host = createHost({ verbose: options.verbose, quiet: options.json });
  const { pending, paired } = await readDevices(host);
  if (options.json) return emitJson(devicesListOutput, { ok: true, pending, paired });
  if (pending.length === 0) printLine('no devices waiting for approval');
  // Where the request comes from (the device's mesh address): the operator approves the device they just opened the UI on.
  for (const p of pending) printLine(`pending  ${String(p.requestId ?? p.id)}  ${describeDevice(p)}`);
  if (pending.length > 0) printLine(`approve one with: service-deploy devices approve ${String(pending[0]!.requestId ?? pending[0]!.id)}`);
  printLine(`${paired.length} paired device(s)`);
  for (const d of paired) printLine(`paired   ${String(d.deviceId)}  ${describeDevice(d)}`);
  if (paired.length > 0) printLine('revoke one with: service-deploy devices remove <device id>');
}

/** `service-deploy devices approve <id>`. The id is checked so it cannot pass as an option. */
export async function approveDevice(id: string, options: Omit<OpsOptions, 'lines'>): Promise<void> {
  if (!REQUEST_ID.test(id)) throw new UsageError(`${JSON.stringify(id)} is not a device request id`, 'copy the id from `service-deploy devices list`');
  const host = createHost({ verbose: options.verbose, quiet: options.json });
  const result = await runDevices(host, ['approve', id]);
  if (options.json) emitJson(devicesApproveOutput, { ok: true, approved: id, output: host.redactor.redact(result.stdout.trim()) });
  else printLine(host.redactor.redact(result.stdout.trim()) || `approved ${id}`);
}

/**
 * `service-deploy devices remove <device id>`: revokes a paired device (OpenClaw's
 * `devices remove`: its pairing entry goes, and with it every device token it holds).
 * The id, or its first 8+ characters, must name exactly one paired device: a typo is
 * refused before anything changes.
 */
export async function removeDevice(id: string, options: Omit<OpsOptions, 'lines'>): Promise<void> {
  const hint = 'copy the id from the `paired` lines of `service-deploy devices list`';
  if (!DEVICE_ID.test(id)) throw new UsageError(`${JSON.stringify(id)} is not a device id (at least its first 8 characters)`, hint);
  const host = createHost({ verbose: options.verbose, quiet: options.json });
  const { paired } = await readDevices(host);
  const matches = paired.filter((d) => typeof d.deviceId === 'string' && d.deviceId.startsWith(id));
  if (matches.length === 0) throw new UsageError(`no paired device has the id ${id} (${paired.length} paired); nothing was changed`, hint);
  if (matches.length > 1) throw new UsageError(`${id} starts the ids of ${matches.length} paired devices; give more of it. Nothing was changed`, hint);
  const device = matches[0]!;
  const deviceId = String(device.deviceId);
  await runDevices(host, ['remove', deviceId, '--json']);
  if (options.json) return emitJson(devicesRemoveOutput, { ok: true, removed: deviceId, device });
  printLine(`removed ${deviceId}  ${describeDevice(device)}`);
  printLine('its device token no longer works; a browser that still holds the service API key can ask to be paired again, which needs `service-deploy devices approve`');
}
