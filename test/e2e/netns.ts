// A network of its own for each e2e container, so several containers (three distros, a
// fleet) run at once although the deployment's ports (18789, 18790) are fixed:
//
//   host  sde<N> 198.18.x.1/28 (+ client addresses .2-.13) <-- veth --> host0 198.18.x.14/28  netns sd-e2e-<N>
//
// Addresses come from 198.18.0.0/15 (reserved for network tests, RFC 2544): slot N is
// the N-th /28. Nothing else on the machine changes: no forwarding, no NAT, no firewall
// rule. The host reaches the container on its address (ssh, the channel port); the
// container reaches the host's loopback stand-ins only through forwarders (forward.ts)
// and the internet only through the harness's egress proxy (egress.ts). Slots are
// claimed in /run/service-deploy-e2e/net/ (a file per slot holding the owner's pid),
// machine-wide like the namespaces themselves, so concurrent runs (from any checkout)
// never share one, and a slot whose owner died is cleaned and reused.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Machine-wide (not under the checkout nor E2E_CACHE_DIR): every run on this machine claims its slots here (scripts/e2e.mjs agrees). */
export const SLOTS_DIR = path.join(process.env.E2E_MACHINE_DIR ?? '/run/service-deploy-e2e', 'net');
const BASE = (198 << 24) | (18 << 16); // 198.18.0.0
const SLOT_SIZE = 16;
const MAX_SLOTS = (1 << 17) / SLOT_SIZE; // 198.18.0.0/15 has 131072 addresses
/** Client addresses on the host side (.2 .. .13): each is its own client for nginx's limits. */
export const CLIENT_ADDRESSES = 12;

function ip(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function run(args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function tryRun(args: string[]): void {
  try {
    run(args);
  } catch {
    // already gone
  }
}

export interface SlotRecord {
  index: number;
  pid: number;
  netns: string;
  hostIf: string;
  /** scripts/e2e.mjs's run that started the owner (E2E_RUN_ID). */
  runId?: string;
}

export class NetSlot {
  readonly netns: string;
  /** The host's end of the veth pair. */
  readonly hostIf: string;
  /** The host's address on the veth (the container's peer). */
  readonly hostAddress: string;
  /** The container's address (host0 inside). */
  readonly address: string;

  private constructor(readonly index: number) {
    this.netns = `sd-e2e-${index}`;
    this.hostIf = `sde${index}`;
    const base = BASE + index * SLOT_SIZE;
    this.hostAddress = ip(base + 1);
    this.address = ip(base + 14);
  }

  /** /run/netns path for systemd-nspawn --network-namespace-path and nsenter --net. */
  get path(): string {
    return `/run/netns/${this.netns}`;
  }

  /** Client address n (1 = the host's own address on the veth, 2..CLIENT_ADDRESSES+1 the extra ones). */
  clientAddress(n: number): string {
    if (!Number.isInteger(n) || n < 1 || n > CLIENT_ADDRESSES + 1) throw new Error(`client address ${n} out of range 1..${CLIENT_ADDRESSES + 1}`);
    return ip(BASE + this.index * SLOT_SIZE + n);
  }

  /** Claims a free slot and creates its namespace and veth pair. */
  static create(): NetSlot {
    fs.mkdirSync(SLOTS_DIR, { recursive: true });
    for (let index = 0; index < MAX_SLOTS; index++) {
      const file = path.join(SLOTS_DIR, `slot-${index}.json`);
      let fd: number;
      try {
        fd = fs.openSync(file, 'wx', 0o600);
      } catch {
        if (reclaimIfStale(file)) index--; // retry the same index
        continue;
      }
      const slot = new NetSlot(index);
      fs.writeSync(fd, JSON.stringify({ index, pid: process.pid, netns: slot.netns, hostIf: slot.hostIf, runId: process.env.E2E_RUN_ID } satisfies SlotRecord) + '\n');
      fs.closeSync(fd);
      try {
        slot.setUp();
      } catch (error) {
        slot.destroy();
        throw error;
      }
      return slot;
    }
    throw new Error(`no free network slot in 198.18.0.0/15 (${SLOTS_DIR})`);
  }

  private setUp(): void {
    // Leftovers of an earlier owner of this index (killed before its cleanup).
    removeLinks(this.netns, this.hostIf);
    run(['netns', 'add', this.netns]);
    run(['link', 'add', this.hostIf, 'type', 'veth', 'peer', 'name', 'host0', 'netns', this.netns]);
    run(['addr', 'add', `${this.hostAddress}/28`, 'dev', this.hostIf]);
    for (let n = 2; n <= CLIENT_ADDRESSES + 1; n++) run(['addr', 'add', `${this.clientAddress(n)}/28`, 'dev', this.hostIf]);
    run(['link', 'set', this.hostIf, 'up']);
    run(['-n', this.netns, 'link', 'set', 'lo', 'up']);
    run(['-n', this.netns, 'addr', 'add', `${this.address}/28`, 'dev', 'host0']);
    run(['-n', this.netns, 'link', 'set', 'host0', 'up']);
    // No default route inside: whatever is not the proxy or a forwarded port fails at
    // once (unreachable) instead of waiting for a timeout.
  }

  /**
   * E2E_KEEP=1: the slot passes to `pid` (the kept container's systemd-nspawn), so no
   * later run reclaims it while the container is up (reclaimIfStale, scripts/e2e.mjs).
   */
  handOver(pid: number): void {
    const file = path.join(SLOTS_DIR, `slot-${this.index}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ index: this.index, pid, netns: this.netns, hostIf: this.hostIf } satisfies SlotRecord) + '\n', { mode: 0o600 });
    fs.renameSync(tmp, file);
  }

  /** Shell lines (as root) doing what destroy() does, for a container left up (E2E_KEEP=1). */
  removeCommands(): string[] {
    return [`ip link del ${this.hostIf}; ip netns del ${this.netns}; rm -f ${path.join(SLOTS_DIR, `slot-${this.index}.json`)}`];
  }

  /** Removes the veth pair and the namespace and frees the slot. */
  destroy(): void {
    removeLinks(this.netns, this.hostIf);
    fs.rmSync(path.join(SLOTS_DIR, `slot-${this.index}.json`), { force: true });
  }
}

function removeLinks(netns: string, hostIf: string): void {
  tryRun(['link', 'del', hostIf]); // deletes the peer too
  if (fs.existsSync(`/run/netns/${netns}`)) tryRun(['netns', 'del', netns]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A slot file whose owner is gone: its links are removed and the file deleted. True if reclaimed. */
function reclaimIfStale(file: string): boolean {
  let record: SlotRecord;
  try {
    record = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    // Being written by its creator right now, or garbage: garbage older than a minute goes.
    try {
      if (Date.now() - fs.statSync(file).mtimeMs < 60_000) return false;
    } catch {
      return true;
    }
    fs.rmSync(file, { force: true });
    return true;
  }
  if (alive(record.pid)) return false;
  removeLinks(record.netns, record.hostIf);
  fs.rmSync(file, { force: true });
  return true;
}

/** Cleans every slot whose owner died (scripts/e2e.mjs runs this before and after a run). */
export function reclaimStaleSlots(): number {
  if (!fs.existsSync(SLOTS_DIR)) return 0;
  let n = 0;
  for (const f of fs.readdirSync(SLOTS_DIR)) if (f.startsWith('slot-') && reclaimIfStale(path.join(SLOTS_DIR, f))) n++;
  return n;
}
