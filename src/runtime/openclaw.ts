import { NETWORK_ENV, type RunOptions, type RunResult } from '../host/exec.js';
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

/**
 * npm of the pinned Node (never the machine's). With `progress`, npm logs its HTTP
 * requests (loglevel http) and each one moves the count: `57 packages resolved, 12
 * downloaded`.
 */
export function npm(host: Host, args: string[], options: RunOptions & { progress?: (text: string) => void } = {}): Promise<RunResult> {
  const { progress, ...rest } = options;
  const counts = progress && npmProgress(progress);
  return host.exec.run(host.paths.real(`${LAYOUT.nodePrefix}/bin/npm`), args, {
    timeoutMs: 15 * 60_000,
    // npm downloads: the machine's proxy and CA settings, and its own npm_config_* (a mirror, its token).
    inherit: [...NETWORK_ENV, ...Object.keys(host.env).filter((name) => /^npm_config_/i.test(name))],
    ...(counts && { onOutputLine: counts }),
    ...rest,
    env: {
      ...runtimeEnv(host),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      ...(counts && { npm_config_loglevel: 'http' }),
      ...rest.env,
    },
  });
}

/**
 * Reads npm's `http fetch GET 200 <url>` lines (loglevel http): a package document is a
 * package resolved, a tarball (`/-/name-1.2.3.tgz`) one downloaded. Calls `report` with
 * the counts after each.
 */
export function npmProgress(report: (text: string) => void): (line: string) => void {
  let resolved = 0;
  let downloaded = 0;
  return (line) => {
    const match = /\bhttp fetch GET 200 (\S+)/.exec(line);
    if (!match) return;
    if (/\/-\/[^/]+\.tgz(\?|$)/.test(match[1]!)) downloaded++;
    else resolved++;
    report(`${resolved} packages resolved, ${downloaded} downloaded`);
  };
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

export const PLUGIN_PREFIX = '/opt/service-deploy/plugins';
/** What the unit and the wrapper run: the entry of the package that runs, through its link (runtime/openclaw-place.ts). */
export const OPENCLAW_ENTRY = LAYOUT.openclawBin;

/**
 * The files of each installed program that must be there (the rest of a package is
 * npm's business): recorded in the install manifest after npm wrote them, checked by
 * the install (reinstall when one is missing or changed) and by doctor.
 */
export interface ProgramFiles {
  /** The folder the program is installed in (its npm prefix): a link among its files that points inside it is followed. */
  tree: string;
  /** Must exist for the program to run. */
  required: string[];
  /** Recorded when present (a package may not ship them). */
  optional: string[];
}

/** OpenClaw's project (its lock and the package npm ci put in it). */
export function openclawFiles(packageName = 'openclaw'): ProgramFiles {
  const dir = `${LAYOUT.openclawProject}/node_modules/${packageName}`;
  return { tree: LAYOUT.openclawProject, required: [`${LAYOUT.openclawProject}/package-lock.json`, `${dir}/package.json`, `${dir}/openclaw.mjs`], optional: [] };
}

export function qmdFiles(packageName: string): ProgramFiles {
  return { tree: LAYOUT.qmdPrefix, required: [`${LAYOUT.qmdPrefix}/package-lock.json`, `${LAYOUT.qmdPrefix}/node_modules/${packageName}/package.json`, LAYOUT.qmdBin], optional: [] };
}

export function losslessClawFiles(packageName: string): ProgramFiles {
  const dir = `${PLUGIN_PREFIX}/node_modules/${packageName}`;
  return { tree: PLUGIN_PREFIX, required: [`${dir}/package.json`], optional: [`${dir}/openclaw.plugin.json`] };
}

export function nodeFiles(): ProgramFiles {
  return { tree: LAYOUT.nodePrefix, required: [`${LAYOUT.nodePrefix}/bin/node`], optional: [] };
}
