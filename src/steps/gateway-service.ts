import { DeployError } from '../errors.js';
import { LOCKS, type Change, type InstallContext, type Step } from '../pipeline/step.js';
import { GATEWAY_PORT, LAYOUT } from '../layout.js';
import { renderTemplate } from '../render/template.js';
import { ensureFolder, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { desired, type Written, type WrittenFile, type WrittenFolder } from '../pipeline/writes.js';
import { OPENCLAW_ENTRY } from '../runtime/openclaw.js';

const UNIT = LAYOUT.gatewayUnit;

/**
 * The gateway unit's memory bound, relative to the server's memory (systemd takes a
 * percentage of physical memory). docs/components.md ("Memory") has the measurement it
 * is sized from.
 */
export const GATEWAY_MEMORY = { high: '65%', max: '75%' } as const;
/** Root's cache folder (QMD's index): one of the two places the sandboxed gateway may write. */
export const GATEWAY_CACHE_DIR = `${LAYOUT.runtimeHome}/.cache`;

export const GATEWAY_UNIT: WrittenFile = { path: LAYOUT.gatewayUnitFile, type: 'file', mode: 0o644, check: 'sha256', life: 'backup', rewrite: { from: async () => gatewayUnitFile(), effect: 'units' } };
/** Root's cache folder: root's too, made only where it is missing (the sandbox binds it). */
const GATEWAY_CACHE: WrittenFolder = { path: GATEWAY_CACHE_DIR, type: 'folder', mode: 0o700, life: 'shared' };
/** root's systemd user units: ours beside an operator's, so removed by uninstall only when empty. */
export const USER_UNIT_FOLDERS: readonly Written[] = [
  { path: LAYOUT.userUnitDir, type: 'folder', life: 'if-empty' },
  { path: '/root/.config/systemd', type: 'folder', life: 'if-empty' },
];

export function gatewayUnitFile(): DesiredFile {
  return desired(GATEWAY_UNIT, renderTemplate('openclaw-gateway.service', {
      home: LAYOUT.runtimeHome,
      nodeBin: `${LAYOUT.nodePrefix}/bin`,
      openclawEntry: OPENCLAW_ENTRY,
      gatewayPort: GATEWAY_PORT,
      secretsEnv: LAYOUT.runtimeSecretsEnv,
      runtimeDir: LAYOUT.runtimeDir,
      cacheDir: GATEWAY_CACHE_DIR,
      qmdConfigDir: LAYOUT.qmdConfigDir,
      stateDir: LAYOUT.stateDir,
      runtimeSecretsDir: LAYOUT.runtimeSecretsDir,
      channelEnv: LAYOUT.channelEnv,
      runDir: LAYOUT.runDir,
      memoryHigh: GATEWAY_MEMORY.high,
      memoryMax: GATEWAY_MEMORY.max,
    }),
  );
}

/**
 * The highest `systemd-analyze security` exposure the installed unit may have
 * (issue 13: from 9.6 UNSAFE without the sandbox). doctor fails above it.
 */
export const EXPOSURE_TARGET = 4.5;

/** "Overall exposure level for X: 2.1 OK" -> 2.1 (undefined when not found). */
export function parseExposure(output: string): number | undefined {
  const match = /Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(output);
  return match ? Number(match[1]) : undefined;
}

/** A unit file's directives as `Section.Key` -> values in order (comments and blank lines skipped). */
export function unitDirectives(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const key = `${section}.${line.slice(0, eq).trim()}`;
    out.set(key, [...(out.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return out;
}

interface GatewayPlan {
  linger: boolean;
  cacheDir: boolean;
  unit: boolean;
  reload: boolean;
  enable: boolean;
  restart: boolean;
  start: boolean;
}

/**
 * The gateway as root's systemd user service: linger so it runs without a login,
 * our unit file, enabled, and restarted exactly once when something it reads changed
 * (the restart is requested by earlier steps, Ansible-handler style), started if down.
 */
export const gatewayServiceStep: Step = {
  id: 'gateway-service',
  title: 'Gateway user service',
  // Not the browser: OpenClaw finds its executable when it launches it (steps/browser.ts).
  needs: ['node-runtime', 'agent-runtime', 'context-engine', 'channel-env', 'channel-plugin', 'channel-drop-in', 'runtime-secrets', 'runtime-config', LOCKS.userUnits],
  writes: [...USER_UNIT_FOLDERS, GATEWAY_UNIT, GATEWAY_CACHE],
  async check(ctx: InstallContext) {
    const { host, notified } = ctx;
    // Independent questions, asked at once.
    const [unitChange, lingerFile, cacheDirFound, active, enabled] = await Promise.all([
      planFile(host, gatewayUnitFile()),
      host.files.exists(LAYOUT.lingerFile),
      // The sandbox keeps home read-only but QMD's index cache: it must exist to be bound.
      host.files.exists(GATEWAY_CACHE_DIR),
      host.services.isActive('user', UNIT).catch(() => false),
      host.services.isEnabled('user', UNIT).catch(() => false),
    ]);
    const linger = !lingerFile;
    const cacheDir = !cacheDirFound;
    const plan: GatewayPlan = {
      linger,
      cacheDir,
      unit: unitChange !== undefined,
      reload: unitChange !== undefined || notified.has('gateway-reload-units'),
      enable: !enabled,
      restart: active && (unitChange !== undefined || notified.has('gateway-restart') || notified.has('gateway-reload-units')),
      start: !active,
    };
    const changes: Change[] = [];
    if (linger) changes.push({ target: 'loginctl', summary: 'enable linger for root (user services without a login)' });
    if (cacheDir) changes.push({ target: GATEWAY_CACHE_DIR, summary: `create ${GATEWAY_CACHE_DIR} (writable for the gateway's sandbox)` });
    if (unitChange) changes.push(unitChange);
    if (plan.enable) changes.push({ target: UNIT, summary: `enable ${UNIT}` });
    if (plan.restart) changes.push({ target: UNIT, summary: `restart ${UNIT} (its configuration changed)` });
    if (plan.start) changes.push({ target: UNIT, summary: `start ${UNIT}` });
    return { changes, data: plan };
  },
  async apply({ host }, plan) {
    const todo = plan.data as GatewayPlan;
    if (todo.linger) await enableLinger(host);
    if (todo.cacheDir) await ensureFolder(host, GATEWAY_CACHE);
    await waitForUserManager(host);
    if (todo.unit) await writeDesired(host, gatewayUnitFile());
    if (todo.reload) await host.services.daemonReload('user');
    if (todo.enable) await host.services.enable('user', UNIT);
    // One restart covers both: it starts a stopped unit and restarts a running one.
    if (todo.restart || todo.start) await host.services.restart('user', UNIT);
  },
  async verify({ host }) {
    if (!(await host.services.isActive('user', UNIT))) {
      throw new DeployError(`${UNIT} is not active`, `see \`journalctl --user-unit=${UNIT} -n 50\` or run \`service-deploy gateway logs\``);
    }
  },
};

/**
 * `loginctl enable-linger root`, once. logind refuses a caller it cannot place: systemd
 * 257 answers "Protocol driver not attached" (EUNATCH) to a process outside every cgroup
 * the server's systemd knows (seen in the e2e from a shell that entered the server with
 * nsenter, sudo included; cloud-init's deploy on the same systemd was placed), and trying
 * again does not change that.
 */
async function enableLinger(host: InstallContext['host']): Promise<void> {
  const result = await host.exec.run('loginctl', ['enable-linger', 'root'], { allowFailure: true, timeoutMs: 30_000 });
  if (!result.failed) return;
  const said = (result.stderr.trim() || `exit code ${result.exitCode}`).slice(0, 300);
  const outside = /Protocol driver not attached/i.test(said);
  throw new DeployError(
    `loginctl enable-linger root failed: ${said}`,
    outside
      ? "logind could not place the caller: run the install from a login session (ssh, sudo), a service or cloud-init, not from a process that entered the server from outside (nsenter); then run it again"
      : 'check that systemd-logind runs (`systemctl status systemd-logind`) and libpam-systemd is installed, then run the install again',
  );
}

/**
 * After enable-linger, root's user manager needs a moment to come up: a few seconds on an
 * idle server, more on a loaded one. A time limit, not a count of tries, so a slow start
 * is waited for (each try's own time counts).
 */
export const USER_MANAGER_WAIT_MS = 90_000;

async function waitForUserManager(host: InstallContext['host']): Promise<void> {
  const deadline = Date.now() + USER_MANAGER_WAIT_MS;
  for (;;) {
    const result = await host.exec.run('systemctl', ['--user', 'is-system-running'], {
      env: { XDG_RUNTIME_DIR: '/run/user/0', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/0/bus' },
      allowFailure: true,
      timeoutMs: 10_000,
    });
    // running / degraded / starting all mean the manager answers.
    if (result.stdout.trim() && !/Failed to connect/i.test(result.stderr)) return;
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new DeployError(`root's systemd user manager did not answer within ${USER_MANAGER_WAIT_MS / 1000} s`, 'check `loginctl show-user root` (Linger=yes) and that libpam-systemd is installed');
}
