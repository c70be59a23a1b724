import { UsageError } from '../errors.js';
import { createHost } from '../host/index.js';
import { printLine } from '../output.js';
import { devicesApproveOutput, devicesListOutput, emitJson } from '../json/index.js';
import { openclaw } from '../runtime/openclaw.js';
import type { OpsOptions } from './gateway.js';

const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

interface DeviceList {
  pending?: Array<Record<string, unknown>>;
  paired?: Array<Record<string, unknown>>;
}

/** `service-deploy devices list`: `openclaw devices list --json`, shown as a short table. */
export async function listDevices(options: Omit<OpsOptions, 'lines'>): Promise<void> {
  const host = createHost({ verbose: options.verbose, quiet: options.json });
  const result = await openclaw(host, ['devices', 'list', '--json'], { timeoutMs: 30_000 });
  const parsed = JSON.parse(result.stdout || '{}') as DeviceList;
  if (options.json) return emitJson(devicesListOutput, { ok: true, pending: parsed.pending ?? [], paired: parsed.paired ?? [] });
  const pending = parsed.pending ?? [];
  if (pending.length === 0) printLine('no devices waiting for approval');
  for (const p of pending) {
    // Where the request comes from (the device's mesh address): the operator approves the device they just opened the UI on.
    const from = typeof p.remoteIp === 'string' ? [`from ${p.remoteIp}`] : [];
    printLine(`pending  ${String(p.requestId ?? p.id)}  ${[p.displayName, p.platform, p.clientId].filter((v) => typeof v === 'string').concat(from).join('  ')}`);
  }
  if (pending.length > 0) printLine(`approve one with: service-deploy devices approve ${String(pending[0]!.requestId ?? pending[0]!.id)}`);
  printLine(`${(parsed.paired ?? []).length} paired device(s)`);
}

/** `service-deploy devices approve <id>`. The id is checked so it cannot pass as an option. */
export async function approveDevice(id: string, options: Omit<OpsOptions, 'lines'>): Promise<void> {
  if (!REQUEST_ID.test(id)) throw new UsageError(`${JSON.stringify(id)} is not a device request id`, 'copy the id from `service-deploy devices list`');
  const host = createHost({ verbose: options.verbose, quiet: options.json });
  const result = await openclaw(host, ['devices', 'approve', id], { timeoutMs: 30_000 });
  if (options.json) emitJson(devicesApproveOutput, { ok: true, approved: id, output: host.redactor.redact(result.stdout.trim()) });
  else printLine(host.redactor.redact(result.stdout.trim()) || `approved ${id}`);
}
