import os from 'node:os';
import { statfsSync } from 'node:fs';
import { DeployError } from '../errors.js';
import { isSupportedOs, readOs, supportedArch } from '../host/os.js';
import type { Step } from '../pipeline/step.js';
import { CHANNEL_PORT, GATEWAY_PORT } from '../layout.js';
import { mcpTokenVerdict, rejectedTokenMessage } from './mcp.js';

const MIN_FREE_DISK = 3 * 1024 ** 3;
const MIN_MEMORY = 1024 ** 3;
/** Processes allowed to hold our ports: a previous deployment of ours. */
const OUR_LISTENERS = /openclaw|node|nginx/;

/**
 * Refuses to start on a machine the deployment cannot work on, or with an MCP token
 * the service rejects; changes nothing. Its failure is a refusal (exit 2).
 */
export const preflightStep: Step = {
  id: 'preflight',
  title: 'Preflight checks',
  async check({ host, profile, answers }) {
    const problems: string[] = [];
    // The MCP token is checked here, before anything changes, when the server answers
    // (an unreachable server is the mcp step's to report).
    const mcp = mcpTokenVerdict(host, profile, answers.mcpToken);
    if (!host.paths.sandboxed && process.getuid?.() !== 0) problems.push('must run as root (use sudo)');

    const osInfo = await readOs(host.files);
    if (!isSupportedOs(osInfo)) {
      if (host.env.SERVICE_ALLOW_UNSUPPORTED_OS === '1') host.log.warn(`${osInfo.prettyName} is not supported; continuing (SERVICE_ALLOW_UNSUPPORTED_OS=1)`);
      else problems.push(`${osInfo.prettyName || 'this OS'} is not supported: use Ubuntu 22.04 or 24.04 (or set SERVICE_ALLOW_UNSUPPORTED_OS=1)`);
    }
    if (!supportedArch()) problems.push(`CPU architecture ${process.arch} is not supported (x86_64 or aarch64)`);

    const stats = statfsSync(host.paths.real('/'));
    const free = stats.bavail * stats.bsize;
    if (free < MIN_FREE_DISK) problems.push(`only ${gib(free)} GiB free on / (need ${gib(MIN_FREE_DISK)} GiB)`);
    if (os.totalmem() < MIN_MEMORY) problems.push(`only ${gib(os.totalmem())} GiB of memory (need at least 1 GiB; 2 GiB recommended)`);

    const listeners = await tcpListeners(host);
    for (const port of [GATEWAY_PORT, CHANNEL_PORT]) {
      const holder = listeners.get(port);
      if (holder && !OUR_LISTENERS.test(holder)) problems.push(`port ${port} is used by another program (${holder})`);
    }
    const verdict = await mcp;
    if (verdict.status === 'rejected') {
      const { message, hint } = rejectedTokenMessage(verdict, profile);
      problems.push(`${message}: ${hint}`);
    }
    if (problems.length > 0) {
      throw new DeployError(`this server is not ready:\n  - ${problems.join('\n  - ')}`, 'fix the points above and run the install again; nothing was changed');
    }
    return { changes: [] };
  },
  async apply() {},
};

/** Listening TCP ports and the program holding each (from one `ss` call). */
export async function tcpListeners(host: Parameters<Step['check']>[0]['host']): Promise<Map<number, string>> {
  const result = await host.exec.run('ss', ['-Hltnp'], { allowFailure: true });
  const out = new Map<number, string>();
  for (const line of result.stdout.split('\n')) {
    // LISTEN 0 511 0.0.0.0:18790 0.0.0.0:* users:(("nginx",pid=1,fd=6))
    const fields = line.trim().split(/\s+/);
    const port = Number(/:(\d+)$/.exec(fields[3] ?? '')?.[1]);
    if (!port) continue;
    out.set(port, /users:\(\("([^"]+)"/.exec(line)?.[1] ?? 'unknown process');
  }
  return out;
}

function gib(bytes: number): string {
  return (bytes / 1024 ** 3).toFixed(1);
}
