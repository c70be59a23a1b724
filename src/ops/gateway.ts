import { DeployError, UsageError } from '../errors.js';
import { numberTextProblem, shown } from '../input.js';
import { createHost, type Host } from '../host/index.js';
import { userManagerEnv } from '../host/services.js';
import { LAYOUT } from '../layout.js';
import { printLine } from '../output.js';
import { emitJson, errorBody, gatewayLogsOutput, gatewayRestartOutput, gatewayStatusOutput } from '../json/index.js';
import { HEALTH_VERDICT_TIMEOUT_MS, healthUrl, probeHealth, waitForGateway } from '../steps/health.js';
import { openclaw } from '../runtime/openclaw.js';

export interface OpsOptions {
  json: boolean;
  verbose: boolean;
  /** --lines as typed (text) or a number; checked before journalctl runs. */
  lines?: string | number;
}

const UNIT = LAYOUT.gatewayUnit;

/**
 * `service-deploy gateway status|restart|logs`: the spec's command shapes (1.3) with
 * root's user-manager environment (XDG_RUNTIME_DIR=/run/user/0) set for the caller.
 */
export async function runGatewayAction(action: 'status' | 'restart' | 'logs', options: OpsOptions): Promise<void> {
  const host = createHost({ verbose: options.verbose, quiet: options.json });
  if (action === 'status') return status(host, options);
  if (action === 'restart') return restart(host, options);
  return logs(host, options);
}

async function status(host: Host, options: OpsOptions): Promise<void> {
  const [active, pid, health, runtime] = await Promise.all([
    host.services.isActive('user', UNIT),
    host.services.mainPid('user', UNIT),
    probeHealth(host, HEALTH_VERDICT_TIMEOUT_MS),
    openclaw(host, ['gateway', 'status'], { allowFailure: true, timeoutMs: 30_000, env: userManagerEnv() }),
  ]);
  const runtimeText = host.redactor.redact(`${runtime.stdout}${runtime.stderr}`.trim());
  const ok = active && health.ok;
  if (options.json) {
    const error = ok
      ? undefined
      : {
          code: 'gateway-down',
          message: `${UNIT} is ${active ? 'active' : 'not active'} and ${healthUrl(host)} ${health.ok ? 'answers' : `does not answer (${health.detail})`}`,
          hint: 'see `service-deploy gateway logs` and `service-deploy doctor`',
          exitCode: 1,
        };
    emitJson(gatewayStatusOutput, {
      ok,
      unit: UNIT,
      active,
      pid: pid ?? null,
      health: { url: healthUrl(host), ...health },
      runtime: { exitCode: runtime.exitCode ?? null, output: runtimeText },
      ...(error ? { error } : {}),
    });
  } else {
    printLine(`${UNIT}: ${active ? 'active' : 'NOT active'}${pid ? ` (pid ${pid})` : ''}`);
    printLine(`health: ${healthUrl(host)} ${health.ok ? 'ok' : 'FAILING'} (${health.detail})`);
    if (runtimeText) printLine(`\nopenclaw gateway status:\n${runtimeText}`);
  }
  if (!ok) process.exitCode = 1;
}

async function restart(host: Host, options: OpsOptions): Promise<void> {
  await host.services.daemonReload('user');
  await host.services.restart('user', UNIT);
  const wait = await waitForGateway(host);
  const health = { ok: wait.ok, detail: wait.detail };
  const pid = await host.services.mainPid('user', UNIT);
  const failure = health.ok
    ? undefined
    : new DeployError(`the gateway does not answer ${healthUrl(host)} after the restart: ${health.detail}`, 'see `service-deploy gateway logs` and `service-deploy doctor`');
  if (options.json) emitJson(gatewayRestartOutput, { ok: health.ok, unit: UNIT, restarted: true, pid: pid ?? null, health, ...(failure ? { error: { ...errorBody(failure), code: 'gateway-unhealthy' } } : {}) });
  else printLine(`${UNIT} restarted${pid ? ` (pid ${pid})` : ''}; health ${health.ok ? 'ok' : `FAILING: ${health.detail}`}`);
  if (failure) throw failure;
}

async function logs(host: Host, options: OpsOptions): Promise<void> {
  const given = options.lines === undefined ? '200' : String(options.lines);
  const problem = numberTextProblem(given, { min: 1, max: 100_000, whole: true });
  if (problem) throw new UsageError(`--lines ${shown(given)}: ${problem}`, 'e.g. --lines 50; nothing was run');
  const lines = Number(given);
  // --user-unit, not `--user -u`: see Services.journalTail (a volatile journal has no per-user files).
  const result = await host.exec.run('journalctl', [`--user-unit=${UNIT}`, '-n', String(lines), '--no-pager', ...(options.json ? ['-o', 'json'] : [])], {
    timeoutMs: 60_000,
  });
  // The journal can hold secrets the gateway printed; mask the ones this run knows.
  if (!options.json) return void process.stdout.write(host.redactor.redact(result.stdout));
  const entries = result.stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => journalEntry(line, (text) => host.redactor.redact(text)));
  emitJson(gatewayLogsOutput, { ok: true, unit: UNIT, entries });
}

/** One line of `journalctl -o json`: its time, priority, pid and message (secrets masked). */
export function journalEntry(line: string, redact: (text: string) => string) {
  let fields: Record<string, unknown>;
  try {
    fields = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { time: null, priority: null, pid: null, message: redact(line) };
  }
  const number = (value: unknown) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : null);
  const micros = typeof fields.__REALTIME_TIMESTAMP === 'string' && /^\d+$/.test(fields.__REALTIME_TIMESTAMP) ? Number(fields.__REALTIME_TIMESTAMP) : undefined;
  // MESSAGE is an array of bytes when it is not valid UTF-8.
  const message = Array.isArray(fields.MESSAGE) ? Buffer.from(fields.MESSAGE as number[]).toString('utf8') : typeof fields.MESSAGE === 'string' ? fields.MESSAGE : '';
  return {
    time: micros === undefined ? null : new Date(Math.floor(micros / 1000)).toISOString(),
    priority: number(fields.PRIORITY),
    pid: number(fields._PID),
    message: redact(message),
  };
}
