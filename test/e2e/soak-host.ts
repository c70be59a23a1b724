// The soak's probes, read from the host: the server's memory limit (a cgroup of the
// host), the gateway unit's and the whole server's processes and memory (the
// container's cgroups and /proc), and, from inside, the stores' sizes and the gateway's
// log. Reading from the host adds no process to the server between samples.
import fs from 'node:fs';
import path from 'node:path';
import { EXEC_CGROUP, cgroupsOf, foreignProcesses, mounts, pidNamespace } from './cgroups.js';
import type { Container } from './container.js';
import { GATEWAY_UNIT } from './harness.js';

const readNumber = (file: string) => Number(fs.readFileSync(file, 'utf8').trim());
function statFile(file: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined) out[key] = Number(value);
  }
  return out;
}

export interface MemcgStats {
  usageBytes: number;
  anonBytes: number;
  cacheBytes: number;
  /**
   * What the server's processes hold that the kernel cannot take back without killing
   * one: usage less the page cache not recently used (inactive_file), the "working set"
   * as the kernel's own memory-pressure tools and container runtimes define it. Anonymous
   * memory, shared memory (tmpfs) and the page cache in use (mapped programs, hot files).
   */
  workingSetBytes: number;
  /** Shared memory (tmpfs such as the gateway's PrivateTmp): page cache by the kernel's books, but not reclaimable without swap. */
  shmemBytes: number;
  limitBytes: number;
  oomKills: number;
}

/**
 * A memory limit for the whole server, as a small server's RAM: a cgroup of the host that
 * systemd-nspawn starts in (container.ts), so every process of the container is in it.
 * Not `systemd-nspawn --property=MemoryMax=`: with `--keep-unit` (which the harness
 * passes: no systemd on the host to register with) nspawn ignores it, and this machine's
 * PID 1 is not systemd. cgroup v1's memory controller (memory.limit_in_bytes, as on this
 * machine, whose cgroups are hybrid) or v2's (memory.max) when this process's cgroup
 * lets it enable the controller for a child. No swap in either.
 */
export class MemoryLimit {
  private constructor(
    readonly dir: string,
    readonly version: 1 | 2,
  ) {}

  static create(bytes: number, name: string): MemoryLimit {
    const all = mounts();
    const own = cgroupsOf('self');
    const v1 = all.find((m) => m.type === 'cgroup' && m.options.includes('memory'));
    const v1Path = own.find((c) => c.controllers.includes('memory'))?.path;
    if (v1 && v1Path !== undefined) {
      const dir = path.join(v1.point, v1Path, name);
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(bytes));
      // memsw (memory + swap) must be set after the memory limit it may not be below.
      if (fs.existsSync(path.join(dir, 'memory.memsw.limit_in_bytes'))) fs.writeFileSync(path.join(dir, 'memory.memsw.limit_in_bytes'), String(bytes));
      return new MemoryLimit(dir, 1);
    }
    const v2 = all.find((m) => m.type === 'cgroup2');
    const v2Path = own.find((c) => c.controllers.length === 0)?.path;
    if (!v2 || v2Path === undefined) throw new Error('no cgroup memory controller on this machine (neither a cgroup v1 memory hierarchy nor cgroup v2): run unlimited with SOAK_MEMORY_MAX=0');
    const parent = path.join(v2.point, v2Path);
    if (!fs.readFileSync(path.join(parent, 'cgroup.subtree_control'), 'utf8').includes('memory')) {
      try {
        fs.writeFileSync(path.join(parent, 'cgroup.subtree_control'), '+memory');
      } catch (error) {
        throw new Error(`cannot enable cgroup v2's memory controller below ${parent} (${(error as Error).message}: it holds processes, or the controller is not delegated): run from a cgroup that can, or unlimited with SOAK_MEMORY_MAX=0`);
      }
    }
    const dir = path.join(parent, name);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'memory.max'), String(bytes));
    if (fs.existsSync(path.join(dir, 'memory.swap.max'))) fs.writeFileSync(path.join(dir, 'memory.swap.max'), '0');
    return new MemoryLimit(dir, 2);
  }

  stats(): MemcgStats {
    if (this.version === 1) {
      const stat = statFile(path.join(this.dir, 'memory.stat'));
      const usageBytes = readNumber(path.join(this.dir, 'memory.usage_in_bytes'));
      return {
        usageBytes,
        anonBytes: stat.total_rss ?? 0,
        cacheBytes: stat.total_cache ?? 0,
        workingSetBytes: Math.max(0, usageBytes - (stat.total_inactive_file ?? 0)),
        shmemBytes: stat.total_shmem ?? 0,
        limitBytes: readNumber(path.join(this.dir, 'memory.limit_in_bytes')),
        oomKills: statFile(path.join(this.dir, 'memory.oom_control')).oom_kill ?? 0,
      };
    }
    const stat = statFile(path.join(this.dir, 'memory.stat'));
    const usageBytes = readNumber(path.join(this.dir, 'memory.current'));
    return {
      usageBytes,
      anonBytes: stat.anon ?? 0,
      cacheBytes: stat.file ?? 0,
      workingSetBytes: Math.max(0, usageBytes - (stat.inactive_file ?? 0)),
      shmemBytes: stat.shmem ?? 0,
      limitBytes: readNumber(path.join(this.dir, 'memory.max')),
      oomKills: statFile(path.join(this.dir, 'memory.events')).oom_kill ?? 0,
    };
  }

  /** Removes the cgroup once the container is gone (a few tries: the last processes may still be exiting). */
  async remove(): Promise<void> {
    for (let i = 0; i < 20; i++) {
      try {
        fs.rmdirSync(this.dir);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }
}

/** One process of a sample: what the bench keeps to say which processes came and went (soak.json). */
export interface ProcessDetail {
  pid: number;
  ppid: number;
  name: string;
  anonBytes: number;
  /** Seconds since the process started (its /proc stat start time against the host's uptime). */
  ageS: number;
}

export interface ProcessFigures {
  pids: number[];
  anonBytes: number;
  pssBytes: number;
  fds: number;
  byName: Record<string, number>;
  detail: ProcessDetail[];
}

const CLOCK_TICKS = 100; // USER_HZ on Linux
function statOf(pid: number): { ppid: number; ageS: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const uptimeS = Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return { ppid: Number(fields[1]), ageS: Math.max(0, Math.round(uptimeS - Number(fields[19]) / CLOCK_TICKS)) };
}

/**
 * What a process is, from its command line: the script a Node process runs (OpenClaw's
 * MCP children are all "MainThread" by name: service-child-relay.js, the group anchor,
 * qmd's launcher, qmd.js), else the program (the gateway names itself openclaw-gateway).
 */
export function processKind(pid: number): string {
  const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const base = (p: string | undefined) => (p ?? '?').split('/').pop()!;
  if (argv.length === 0) return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  // A generic script name (the runtime's spawn broker and several others are worker.js) with its folder.
  const script = (p: string) => (/^(worker|index|main)\.m?js$/.test(base(p)) ? p.split('/').slice(-2).join('/') : base(p));
  if (base(argv[0]) === 'node' && argv[1]) return [script(argv[1]), ...(argv[2] && !argv[2].startsWith('-') ? [argv[2]] : [])].join(' ');
  return base(argv[0]).split(' ')[0]!;
}

function processFigures(pids: number[]): ProcessFigures {
  const out: ProcessFigures = { pids: [], anonBytes: 0, pssBytes: 0, fds: 0, byName: {}, detail: [] };
  for (const pid of pids) {
    try {
      const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0) * 1024;
      const name = processKind(pid);
      const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
      const { ppid, ageS } = statOf(pid);
      out.fds += fds;
      out.anonBytes += kb('Anonymous');
      out.pssBytes += kb('Pss');
      out.byName[name] = (out.byName[name] ?? 0) + 1;
      out.detail.push({ pid, ppid, name, anonBytes: kb('Anonymous'), ageS });
      out.pids.push(pid);
    } catch {
      // gone meanwhile (or a kernel thread without smaps): not counted
    }
  }
  return out;
}

/**
 * The server's processes as the host sees them: the container's cgroup tree (systemd
 * inside keeps one cgroup per unit; on a hybrid host in the unified hierarchy, where the
 * memory controller is not available to it), and the gateway unit's part of it.
 */
export class ServerProbe {
  private readonly root: string;
  private unitDir: string | undefined;
  private readonly namespace: string;

  constructor(initPid: number, private readonly unit = GATEWAY_UNIT) {
    this.namespace = pidNamespace(initPid) ?? '';
    const all = mounts();
    const groups = cgroupsOf(initPid);
    const unified = all.find((m) => m.type === 'cgroup2');
    const unifiedPath = groups.find((c) => c.controllers.length === 0 && c.path !== '/')?.path;
    const named = all.find((m) => m.type === 'cgroup' && m.options.includes('name=systemd'));
    const namedPath = groups.find((c) => c.controllers.includes('name=systemd'))?.path;
    // The init lives in <container>/init.scope: the container's tree is its parent.
    if (unified && unifiedPath) this.root = path.join(unified.point, path.dirname(unifiedPath));
    else if (named && namedPath) this.root = path.join(named.point, path.dirname(namedPath));
    else throw new Error(`cannot find the container's cgroup (init pid ${initPid})`);
  }

  /** The cgroup folder of the gateway unit, found by name under the container's tree. */
  private findUnit(): string | undefined {
    if (this.unitDir && fs.existsSync(this.unitDir)) return this.unitDir;
    const visit = (dir: string, depth: number): string | undefined => {
      if (path.basename(dir) === this.unit) return dir;
      if (depth > 8) return undefined;
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        const found = visit(path.join(dir, entry.name), depth + 1);
        if (found) return found;
      }
      return undefined;
    };
    this.unitDir = visit(this.root, 0);
    return this.unitDir;
  }

  private pidsUnder(dir: string): number[] {
    const out: number[] = [];
    const visit = (d: string) => {
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(d, { withFileTypes: true });
        for (const pid of fs.readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n')) if (pid) out.push(Number(pid));
      } catch {
        return; // removed meanwhile (a unit stopping)
      }
      // The harness's own commands (cgroups.ts, EXEC_CGROUP) are not the server's processes.
      for (const e of entries) if (e.isDirectory() && e.name !== EXEC_CGROUP) visit(path.join(d, e.name));
    };
    visit(dir);
    // Another container's processes here would be counted as this server's (cgroups.ts).
    const foreign = foreignProcesses(out, this.namespace);
    if (foreign.length > 0) throw new Error(`${dir} holds ${foreign.length} processes of another container (host pids ${foreign.slice(0, 10).join(', ')}): its cgroups are shared, and no count of them is this server's`);
    return out;
  }

  /** The gateway unit's processes, memory and fds; `mainPid` is its process systemd started (0: none running). */
  unitFigures(): ProcessFigures & { mainPid: number; cgroupAnonBytes?: number } {
    const dir = this.findUnit();
    if (!dir) return { pids: [], anonBytes: 0, pssBytes: 0, fds: 0, byName: {}, detail: [], mainPid: 0 };
    const figures = processFigures(this.pidsUnder(dir));
    const inUnit = new Set(figures.pids);
    const parentOf = (pid: number) => {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      } catch {
        return 0;
      }
    };
    const mainPid = figures.pids.filter((pid) => !inUnit.has(parentOf(pid))).sort((a, b) => a - b)[0] ?? 0;
    // A host whose cgroup v2 gives the container the memory controller: the unit's own count.
    const memoryStat = path.join(dir, 'memory.stat');
    const cgroupAnonBytes = fs.existsSync(memoryStat) ? statFile(memoryStat).anon : undefined;
    return { ...figures, mainPid, ...(cgroupAnonBytes !== undefined ? { cgroupAnonBytes } : {}) };
  }

  /** Every process of the server. */
  serverFigures(): ProcessFigures {
    return processFigures(this.pidsUnder(this.root));
  }
}

/**
 * The stores of a deployment that grow with use, as `du` paths inside the server
 * (globs allowed). What bounds each is docs/operations.md's (the stores section).
 */
export const STORES: Record<string, string[]> = {
  'state database': ['/root/.openclaw/state'],
  'agent database (transcripts)': ['/root/.openclaw/agents'],
  'channel nonce store': ['/root/.openclaw/service-channel', '/root/.openclaw/plugins/service-channel'],
  workspace: ['/root/.openclaw/workspace'],
  'QMD index': ['/root/.cache/qmd'],
  'gateway file log (/tmp)': ['/tmp/systemd-private-*-openclaw-gateway.service-*/tmp/openclaw', '/tmp/openclaw'],
  'nginx access log': ['/var/log/nginx/service-channel.access.log'],
  'nginx error logs': ['/var/log/nginx/error.log', '/var/log/nginx/service-channel.error.log'],
  journal: ['/var/log/journal', '/run/log/journal'],
  'service-deploy logs': ['/var/log/service-deploy'],
  backups: ['/var/backups/service-deploy', '/tmp/openclaw-backup-*'],
  'all of /root/.openclaw': ['/root/.openclaw'],
};

/** Bytes on disk per store (du), and the lines of the gateway's log since `sinceEpochS` that match each pattern, in one call into the server. */
export async function insideFigures(container: Container, sinceEpochS: number, patterns: Record<string, string>): Promise<{ disk: Record<string, number>; logMatches: Record<string, number> }> {
  const names = Object.keys(STORES);
  // /dev/null (0 bytes) keeps du from measuring the current folder when no path exists.
  const du = names.map((name) => `du -s -B1 -c /dev/null ${STORES[name]!.join(' ')} 2>/dev/null | tail -n 1 | cut -f1`).join('\n');
  const greps = Object.values(patterns).map((p) => `grep -c -F -- '${p.replace(/'/g, `'\\''`)}' "$log" || true`).join('\n');
  const script = `shopt -s nullglob
${du}
log=$(mktemp); journalctl --no-pager -o cat _SYSTEMD_USER_UNIT=${GATEWAY_UNIT} --since=@${Math.floor(sinceEpochS)} >"$log" 2>/dev/null
${greps}
rm -f "$log"`;
  const r = await container.sh(script, { timeoutMs: 120_000 });
  const lines = r.stdout.trim().split('\n');
  const disk: Record<string, number> = {};
  names.forEach((name, i) => (disk[name] = Number(lines[i] ?? 0) || 0));
  const logMatches: Record<string, number> = {};
  Object.keys(patterns).forEach((name, i) => (logMatches[name] = Number(lines[names.length + i] ?? 0) || 0));
  return { disk, logMatches };
}
