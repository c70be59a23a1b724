import os from 'node:os';
import fs from 'node:fs/promises';
import { DeployError } from '../errors.js';
import { isSupportedOs, readOs, supportedArch } from '../host/os.js';
import type { Step } from '../install/step.js';
import { CHANNEL_PORT, GATEWAY_PORT } from '../layout.js';

const MIN_FREE_DISK = 3 * 1024 ** 3;
const MIN_MEMORY = 1024 ** 3;
/** Processes allowed to hold our ports: a previous deployment of ours. */
const OUR_LISTENERS = /openclaw|node|nginx/;

/** Refuses to start on a machine the deployment cannot work on; changes nothing. */
export const preflightStep: Step = {
  id: 'preflight',
  title: 'Preflight checks',
  async check({ host }) {
    const problems: string[] = [];
    if (!host.paths.sandboxed && process.getuid?.() !== 0) problems.push('must run as root (use sudo)');

    const osInfo = await readOs(host.files);
    if (!isSupportedOs(osInfo)) {
      if (host.env.SERVICE_ALLOW_UNSUPPORTED_OS === '1') host.log.warn(`${osInfo.prettyName} is not supported; continuing (SERVICE_ALLOW_UNSUPPORTED_OS=1)`);
      else problems.push(`${osInfo.prettyName || 'this OS'} is not supported: use Ubuntu 22.04 or 24.04 (or set SERVICE_ALLOW_UNSUPPORTED_OS=1)`);
    }
    if (!supportedArch()) problems.push(`CPU architecture ${process.arch} is not supported (x86_64 or aarch64)`);

    const stats = await fs.statfs(host.paths.real('/'));
    const free = stats.bavail * stats.bsize;
    if (free < MIN_FREE_DISK) problems.push(`only ${gib(free)} GiB free on / (need ${gib(MIN_FREE_DISK)} GiB)`);
    if (os.totalmem() < MIN_MEMORY) problems.push(`only ${gib(os.totalmem())} GiB of memory (need at least 1 GiB; 2 GiB recommended)`);

    for (const port of [GATEWAY_PORT, CHANNEL_PORT]) {
      const holder = await portHolder(host, port);
      if (holder && !OUR_LISTENERS.test(holder)) problems.push(`port ${port} is used by another program (${holder})`);
    }
    if (problems.length > 0) {
      throw new DeployError(`this server is not ready:\n  - ${problems.join('\n  - ')}`, 'fix the points above and run the install again; nothing was changed');
    }
    return { changes: [] };
  },
  async apply() {},
};

/** The program listening on a TCP port (from `ss`), or undefined if the port is free. */
async function portHolder(host: Parameters<Step['check']>[0]['host'], port: number): Promise<string | undefined> {
  const result = await host.exec.run('ss', ['-Hltnp', `sport = :${port}`], { allowFailure: true });
  const line = result.stdout.split('\n').find((l) => l.trim());
  if (!line) return undefined;
  return /users:\(\("([^"]+)"/.exec(line)?.[1] ?? 'unknown process';
}

function gib(bytes: number): string {
  return (bytes / 1024 ** 3).toFixed(1);
}
