import { DeployError, UsageError } from '../errors.js';
import { createHost, type Host } from '../host/index.js';
import { userManagerEnv } from '../host/services.js';
import { LAYOUT } from '../layout.js';
import { printJson, printLine } from '../output.js';
import { healthUrl, probeHealth } from '../steps/health.js';
import { openclaw } from '../runtime/openclaw.js';

export interface OpsOptions {
  json: boolean;
  verbose: boolean;
  lines?: number;
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
    probeHealth(host),
    openclaw(host, ['gateway', 'status'], { allowFailure: true, timeoutMs: 30_000, env: userManagerEnv() }),
  ]);
  const runtimeText = host.redactor.redact(`${runtime.stdout}${runtime.stderr}`.trim());
  if (options.json) {
    printJson({ unit: UNIT, active, pid: pid ?? null, health: { url: healthUrl(host), ...health }, runtime: { exitCode: runtime.exitCode, output: runtimeText } });
  } else {
    printLine(`${UNIT}: ${active ? 'active' : 'NOT active'}${pid ? ` (pid ${pid})` : ''}`);
    printLine(`health: ${healthUrl(host)} ${health.ok ? 'ok' : 'FAILING'} (${health.detail})`);
    if (runtimeText) printLine(`\nopenclaw gateway status:\n${runtimeText}`);
  }
  if (!active || !health.ok) process.exitCode = 1;
}

async function restart(host: Host, options: OpsOptions): Promise<void> {
  await host.services.daemonReload('user');
  await host.services.restart('user', UNIT);
  const deadline = Date.now() + Number(host.env.SERVICE_HEALTH_TIMEOUT_MS ?? 60_000);
  let health = await probeHealth(host);
  while (!health.ok && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    health = await probeHealth(host);
  }
  const pid = await host.services.mainPid('user', UNIT);
  if (options.json) printJson({ unit: UNIT, restarted: true, pid: pid ?? null, health });
  else printLine(`${UNIT} restarted${pid ? ` (pid ${pid})` : ''}; health ${health.ok ? 'ok' : `FAILING: ${health.detail}`}`);
  if (!health.ok) {
    throw new DeployError(`the gateway does not answer ${healthUrl(host)} after the restart: ${health.detail}`, 'see `service-deploy gateway logs` and `service-deploy doctor`');
  }
}

async function logs(host: Host, options: OpsOptions): Promise<void> {
  const lines = options.lines ?? 200;
  if (!Number.isInteger(lines) || lines <= 0 || lines > 100_000) throw new UsageError(`--lines ${lines}: must be a whole number from 1 to 100000`, 'nothing was run');
  const result = await host.exec.run('journalctl', ['--user', '-u', UNIT, '-n', String(lines), '--no-pager', ...(options.json ? ['-o', 'json'] : [])], {
    env: userManagerEnv(),
    timeoutMs: 60_000,
  });
  // The journal can hold secrets the gateway printed; mask the ones this run knows.
  process.stdout.write(host.redactor.redact(result.stdout));
}
