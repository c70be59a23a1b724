import { statfsSync } from 'node:fs';
import { DeployError } from '../errors.js';
import { glibcVersion, isSupportedOs, memoryTotal, readOs, supportedArch, versionBelow } from '../host/os.js';
import type { Step } from '../pipeline/step.js';
import { CHANNEL_PORT, GATEWAY_PORT } from '../layout.js';
import { apiKeyVerdict, rejectedApiKeyMessage, unconfirmedApiKeyMessage } from './api-key.js';
import { mcpTokenVerdict, rejectedTokenMessage } from './mcp.js';

/** Free disk preflight asks for; the session store's budget (config/runtime-config.ts) is sized from it. */
export const MIN_FREE_DISK = 3 * 1024 ** 3;
/**
 * A 2 GiB server. The soak (docs/operations.md) holds the deployment at about 1.0 GiB at
 * rest and 1.3 GiB at peak (the server's cgroup, working set) under portal traffic; on
 * 1 GiB the gateway alone (0.8-1.0 GiB anonymous) would not fit, let alone its bound
 * (MemoryMax 75%). A 2 GiB server reports about 1.9 GiB (MemTotal: what the firmware and
 * kernel keep is not in it), so the floor leaves that room.
 */
export const MIN_MEMORY = 1.75 * 1024 ** 3;
/**
 * The oldest glibc the pinned components load on: QMD's SQLite is better-sqlite3 13,
 * whose only Linux builds are the prebuilt modules in its package, linked against
 * GLIBC_2.34 (Node 26 itself needs 2.28). Ubuntu 22.04 has 2.35; Debian 11 has 2.31,
 * where the install otherwise failed half-way, at the memory index (docs/e2e.md).
 */
export const GLIBC_FLOOR = '2.34';
/** Processes allowed to hold our ports: a previous deployment of ours. */
const OUR_LISTENERS = /openclaw|node|nginx/;

/**
 * Refuses to start on a machine the deployment cannot work on, or with a service API key
 * or an MCP token the service rejects; changes nothing. Its failure is a refusal (exit 2).
 */
export const preflightStep: Step = {
  id: 'preflight',
  title: 'Preflight checks',
  barrier: true,
  async check({ host, profile, answers, components }) {
    const problems: string[] = [];
    // The questions go out together (getconf, ss, the MCP server): one wait, not three.
    // The MCP token is checked here, before anything changes, when the server answers
    // (an unreachable server is the mcp step's to report).
    const [verdict, keyVerdict, osInfo, glibc, listeners, memory] = await Promise.all([
      mcpTokenVerdict(host, profile, answers.mcpToken),
      apiKeyVerdict(host, profile, answers.apiKey),
      readOs(host.files),
      glibcVersion(host.exec),
      tcpListeners(host),
      memoryTotal(host.files),
    ]);
    if (!host.paths.sandboxed && process.getuid?.() !== 0) problems.push('must run as root (use sudo)');

    if (!isSupportedOs(osInfo)) {
      if (host.env.SERVICE_ALLOW_UNSUPPORTED_OS === '1') host.log.warn(`${osInfo.prettyName} is not supported; continuing (SERVICE_ALLOW_UNSUPPORTED_OS=1)`);
      else problems.push(`${osInfo.prettyName || 'this OS'} is not supported: use Ubuntu 22.04 or 24.04 (or set SERVICE_ALLOW_UNSUPPORTED_OS=1)`);
    }
    if (!supportedArch()) problems.push(`CPU architecture ${process.arch} is not supported (x86_64 or aarch64)`);
    // Even with SERVICE_ALLOW_UNSUPPORTED_OS=1: the memory component cannot run there.
    if (glibc && versionBelow(glibc, GLIBC_FLOOR)) {
      problems.push(`glibc ${glibc} is older than ${GLIBC_FLOOR}, which QMD ${components.qmd.version}'s SQLite module (better-sqlite3, prebuilt) needs: use Ubuntu 22.04 or 24.04`);
    }

    const stats = statfsSync(host.paths.real('/'));
    const free = stats.bavail * stats.bsize;
    if (free < MIN_FREE_DISK) problems.push(`only ${gib(free)} GiB free on / (need ${gib(MIN_FREE_DISK)} GiB)`);
    if (memory < MIN_MEMORY) problems.push(`only ${gib(memory)} GiB of memory: the deployment needs a server with 2 GiB`);

    for (const port of [GATEWAY_PORT, CHANNEL_PORT]) {
      const holder = listeners.get(port);
      if (holder && !OUR_LISTENERS.test(holder)) problems.push(`port ${port} is used by another program (${holder})`);
    }
    if (verdict.status === 'rejected') {
      const { message, hint } = rejectedTokenMessage(verdict, profile);
      problems.push(`${message}: ${hint}`);
    }
    if (keyVerdict.status === 'rejected') problems.push(rejectedApiKeyMessage(keyVerdict, profile));
    else if (keyVerdict.status === 'unconfirmed') host.log.warn(unconfirmedApiKeyMessage(keyVerdict));
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
