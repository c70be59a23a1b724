// Secret scans of the e2e: process arguments during the run, the install log, every
// world-readable file of the container, and every file the gateway itself can read.
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/binary.js';
import type { Container } from './container.js';

export type Secrets = Record<string, string>;

/** Masks a secret for a report: its name and last 4 characters. */
export function mask(name: string, value: string): string {
  return `${name} (****${value.slice(-4)})`;
}

/**
 * Polls the argv of every process (every 100 ms) for the secrets. The container's PID
 * namespace is a child of the host's, so /proc on the host lists every process of the
 * container too (what `ps -eo args` shows inside, and more).
 */
export class ArgvWatch {
  samples = 0;
  processesSeen = 0;
  readonly leaks = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private seen = new Set<string>();

  /**
   * `roots`: when given, only the process trees under these pids are read (this process,
   * which starts every nsenter, ssh and ansible, and each container's init, under which
   * everything inside lives), not the whole machine: several e2e jobs run at once, and
   * each reading every process ten times a second would cost a core.
   */
  constructor(
    private readonly secrets: () => Secrets,
    private readonly roots?: () => number[],
  ) {}

  start(): void {
    this.timer = setInterval(() => this.sample(), 100);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.sample();
  }

  private pids(): string[] {
    if (this.roots && HAS_CHILDREN_FILES) return descendants(this.roots());
    return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  }

  sample(): void {
    this.samples++;
    const secrets = Object.entries(this.secrets()).filter(([, v]) => v.length >= 8);
    for (const pid of this.pids()) {
      let argv: string;
      try {
        argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      } catch {
        continue; // exited meanwhile
      }
      const key = `${pid}:${argv.length}:${argv.slice(0, 40)}`;
      if (!this.seen.has(key)) {
        this.seen.add(key);
        this.processesSeen++;
      }
      for (const [name, value] of secrets) {
        if (argv.includes(value)) {
          const comm = argv.split('\0')[0] ?? '?';
          this.leaks.set(`${name} in the arguments of ${path.basename(comm)} (pid ${pid})`, mask(name, value));
        }
      }
    }
  }
}

/** Every pid under the roots (through /proc/<pid>/task/<tid>/children), or every pid of the machine. */
function descendants(roots: number[]): string[] {
  const out: string[] = [];
  const queue = roots.filter((p) => p > 0).map(String);
  const seen = new Set<string>();
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    out.push(pid);
    let tasks: string[];
    try {
      tasks = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // exited meanwhile
    }
    for (const tid of tasks) {
      try {
        for (const child of fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').split(' ')) if (child) queue.push(child);
      } catch {
        // exited meanwhile
      }
    }
  }
  return out;
}

const HAS_CHILDREN_FILES = fs.existsSync(`/proc/${process.pid}/task/${process.pid}/children`);

/** Writes the secrets as a grep pattern file inside the container (0600, under 0700 /root). */
function writePatterns(container: Container, secrets: Secrets): string {
  const file = '/root/e2e/secret-patterns';
  const real = container.hostPath(file);
  fs.writeFileSync(real, Object.values(secrets).filter((v) => v.length >= 8).join('\n') + '\n', { mode: 0o600 });
  fs.chmodSync(real, 0o600);
  return file;
}

/**
 * Files under /root /etc /var /opt /usr/local /tmp with the "other" read bit set (the
 * mode alone, whatever the folders above allow) that contain a secret; grep reads the
 * patterns from a 0600 file, never argv. Returns the offending paths.
 */
export async function scanWorldReadable(container: Container, secrets: Secrets): Promise<{ files: string[]; scanned: number }> {
  const patterns = writePatterns(container, secrets);
  const script = `
set -u
list=$(mktemp); chmod 600 "$list"
find /root /etc /var /opt /usr/local /tmp -type f -perm -o=r -print0 2>/dev/null >"$list"
echo "scanned $(tr -cd '\\0' <"$list" | wc -c)"
xargs -0 -r grep -l -F -f ${patterns} -- <"$list" 2>/dev/null || true
rm -f "$list"`;
  const out = await container.ok(script, { timeoutMs: 5 * 60_000 });
  const [first, ...rest] = out.split('\n');
  return { scanned: Number(/scanned (\d+)/.exec(first ?? '')?.[1] ?? 0), files: rest.filter(Boolean) };
}

/** The given files (inside the container) that contain a secret. */
export async function filesWithSecrets(container: Container, secrets: Secrets, files: string[]): Promise<string[]> {
  const patterns = writePatterns(container, secrets);
  const out = await container.ok(`for f in ${files.map((f) => `'${f}'`).join(' ')}; do [ -f "$f" ] && grep -l -F -f ${patterns} -- "$f"; done; true`);
  return out.split('\n').filter(Boolean);
}

export interface GatewayScan {
  /** Regular files read, files and folders it could not open, bytes read. */
  files: number;
  unreadable: number;
  bytes: number;
  /** Each readable file holding a secret value, with the secrets' names (compressed: found only unpacked, a .gz). */
  findings: Array<{ path: string; secrets: string[]; compressed?: boolean }>;
  /** Files too large to read (listed, never silently left out). */
  skipped: Array<{ path: string; size: number }>;
  ms: number;
}

const SCANNER = path.join(REPO, 'test', 'e2e', 'scripts', 'scan-as-gateway.mjs');

/**
 * Every file the gateway can read, searched for every secret value: the deployed Node
 * runs scripts/scan-as-gateway.mjs inside the gateway's own mount and UTS namespaces
 * (nsenter into its MainPID: the real unit's sandbox, not a look-alike) with its
 * credentials (setpriv: uid 0 without a single capability, no_new_privs, as
 * CapabilityBoundingSet= gives it). The secrets go in on stdin, never in a file or argv;
 * the script's text is read outside the namespace and passed as its program.
 */
export async function scanAsGateway(container: Container, gatewayPid: number, secrets: Secrets): Promise<GatewayScan> {
  const script = '/root/e2e/scan-as-gateway.mjs';
  fs.copyFileSync(SCANNER, container.hostPath(script));
  const asGateway = `nsenter -t ${gatewayPid} -m -u -- setpriv --reuid=0 --regid=0 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs`;
  const values = Object.fromEntries(Object.entries(secrets).filter(([, v]) => v.length >= 8));
  const r = await container.sh(`${asGateway} /opt/service-deploy/node/bin/node --input-type=module -e "$(cat ${script})"`, { input: JSON.stringify(values), timeoutMs: 10 * 60_000 });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  let report: Omit<GatewayScan, 'ms'>;
  try {
    report = JSON.parse(last);
  } catch {
    throw new Error(`the scan as the gateway gave no report (exit ${r.exitCode}): ${r.stderr.slice(-2000)}`);
  }
  return { ...report, ms: r.ms };
}
