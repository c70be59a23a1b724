import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { execa } from 'execa';

/**
 * Two network namespaces of our own joined by a veth pair, so firewall rules, address
 * limits and floods are tested without touching this machine's network: nothing is
 * ever added to or changed in the namespace the tests run in (the veth pair is made
 * inside the server namespace, its peer moved straight into the client namespace).
 *
 *   server namespace: <prefix>.1 on vS (nginx, nftables)
 *   client namespace: <prefix>.2, .3, ... on vC (as many client addresses as asked)
 *
 * Addresses come from 198.18.0.0/15 (RFC 2544 benchmarking), a random /24 per lab.
 */
export interface NetnsLab {
  server: string;
  client: string;
  serverAddress: string;
  clientAddresses: string[];
  /** Runs a command inside a namespace (ip netns exec) and waits for it. */
  run(ns: string, command: string, args: string[], options?: { input?: string; timeoutMs?: number; reject?: boolean }): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  /** Starts a command inside a namespace; the caller stops it (close() kills what is left). */
  start(ns: string, command: string, args: string[], options?: { env?: Record<string, string> }): ChildProcess;
  close(): Promise<void>;
}

/** Why this machine cannot make namespaces (not root, no `ip`, no permission), or undefined. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const probe = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return `ip netns does not work here: ${probe.error?.message ?? probe.stderr}`;
  return undefined;
}

const live = new Set<NetnsLab>();
process.once('exit', () => {
  // Last resort after a crash: delete what is left, synchronously.
  for (const lab of live) for (const ns of [lab.server, lab.client]) spawnSync('ip', ['netns', 'del', ns]);
});

export async function netnsLab(clients = 2): Promise<NetnsLab> {
  const id = `${process.pid % 100_000}${randomInt(1000)}`;
  const server = `sdt-s${id}`;
  const client = `sdt-c${id}`;
  const net = `198.${18 + randomInt(2)}.${randomInt(256)}`;
  const children = new Set<ChildProcess>();
  const ip = (args: string[]) => execa('ip', args, { reject: true, timeout: 30_000 });
  await ip(['netns', 'add', server]);
  await ip(['netns', 'add', client]);
  const lab: NetnsLab = {
    server,
    client,
    serverAddress: `${net}.1`,
    clientAddresses: Array.from({ length: clients }, (_, i) => `${net}.${i + 2}`),
    async run(ns, command, args, options = {}) {
      const result = await execa('ip', ['netns', 'exec', ns, command, ...args], { input: options.input, timeout: options.timeoutMs ?? 60_000, reject: false, stripFinalNewline: false });
      const out = { exitCode: result.exitCode ?? -1, stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? '') };
      if (options.reject !== false && out.exitCode !== 0) throw new Error(`in ${ns}: ${command} ${args.join(' ')}: exit ${out.exitCode}\n${out.stderr}${out.stdout}`);
      return out;
    },
    start(ns, command, args, options = {}) {
      const child = spawn('ip', ['netns', 'exec', ns, command, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
      children.add(child);
      child.once('exit', () => children.delete(child));
      return child;
    },
    async close() {
      for (const child of children) child.kill('SIGKILL');
      // Every process still inside the namespaces (nginx workers started by a master we killed...).
      for (const ns of [server, client]) {
        const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout.split(/\s+/).filter(Boolean);
        for (const pid of pids) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone already
          }
        }
      }
      for (const ns of [server, client]) await execa('ip', ['netns', 'del', ns], { reject: false });
      live.delete(lab);
    },
  };
  live.add(lab);
  try {
    // The pair is born inside the server namespace; its peer goes straight to the client's.
    await ip(['-n', server, 'link', 'add', 'vS', 'type', 'veth', 'peer', 'name', 'vC', 'netns', client]);
    await ip(['-n', server, 'addr', 'add', `${lab.serverAddress}/24`, 'dev', 'vS']);
    for (const address of lab.clientAddresses) await ip(['-n', client, 'addr', 'add', `${address}/24`, 'dev', 'vC']);
    for (const [ns, dev] of [[server, 'vS'], [client, 'vC']] as const) {
      await ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      await ip(['-n', ns, 'link', 'set', dev, 'up']);
    }
  } catch (error) {
    await lab.close();
    throw error;
  }
  return lab;
}
