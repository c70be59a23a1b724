import type { RunOptions, RunResult } from '../host/exec.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';

/** Environment for the runtime's CLIs: the pinned Node first on PATH, root's OpenClaw home. */
export function runtimeEnv(host: Host, configPath: string = LAYOUT.runtimeConfig): Record<string, string> {
  return {
    PATH: `${host.paths.real(`${LAYOUT.nodePrefix}/bin`)}:${host.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: host.paths.real(LAYOUT.runtimeHome),
    OPENCLAW_STATE_DIR: host.paths.real(LAYOUT.runtimeDir),
    OPENCLAW_CONFIG_PATH: host.paths.real(configPath),
    NO_COLOR: '1',
  };
}

export function openclaw(host: Host, args: string[], options: RunOptions & { configPath?: string } = {}): Promise<RunResult> {
  const { configPath, ...rest } = options;
  return host.exec.run(host.paths.real(LAYOUT.openclawBin), args, {
    timeoutMs: 120_000,
    ...rest,
    env: { ...runtimeEnv(host, configPath), ...rest.env },
  });
}

/** npm of the pinned Node (never the machine's). */
export function npm(host: Host, args: string[], options: RunOptions = {}): Promise<RunResult> {
  return host.exec.run(host.paths.real(`${LAYOUT.nodePrefix}/bin/npm`), args, {
    timeoutMs: 15 * 60_000,
    ...options,
    env: { ...runtimeEnv(host), npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', ...options.env },
  });
}

/** Version of an npm package installed under `nodeModules`, or undefined. */
export async function installedPackageVersion(host: Host, nodeModules: string, name: string): Promise<string | undefined> {
  const text = await host.files.read(`${nodeModules}/${name}/package.json`);
  if (!text) return undefined;
  try {
    return (JSON.parse(text) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

export const GLOBAL_MODULES = `${LAYOUT.nodePrefix}/lib/node_modules`;
export const PLUGIN_PREFIX = '/opt/service-deploy/plugins';
export const OPENCLAW_ENTRY = `${GLOBAL_MODULES}/openclaw/openclaw.mjs`;
