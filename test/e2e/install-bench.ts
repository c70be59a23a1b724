// npm run bench:install (scripts/install-bench.mjs bundles and runs this): fresh installs
// on the e2e's booted Debian 12 servers, serial (`--serial`: one step at a time, in the
// listed order) against concurrent (the default: steps by their needs), alternated,
// BENCH_ROUNDS of each (default 3), each on a server of its own. A bench, not a test:
// not in CI, on a quiet machine. docs/e2e.md, "Install bench: serial vs concurrent".
//
// Each install is the first install of the e2e's server scenario with a JSON result:
// `curl <setup>/install.sh | bash -s -- --json --channel [--serial]`, the answers from
// the e2e's 0600 files. One e2e stage and one set of stand-ins serve every server (the
// same setup URL, apt repository, keys and answers), so two servers differ only by what
// an install makes for itself. Its wall time runs from the
// binary's start (its process's start time, read from /proc) to its exit (the end of
// the pipe, read from the container's /proc/uptime: the same boot-time clock). Then,
// once systemd has no job left, the server's state is read for the comparison
// (install-bench-report.ts): the install manifest, dpkg's packages, the system's and
// root's user manager's unit files and units, the JSON result without its times.
//
// After each install (BENCH_RERUNS=0: not), the e2e's no-op re-run, model change and
// reset run on the same server with the same mode flag, timed the same way: "no slower
// than before" is each one's concurrent median against its serial one.
//
// Prints the tables and the verdicts; writes install-bench.json, install-bench.txt,
// install-bench-states.json (each server's state as compared) and
// the median runs' timelines (install-bench-concurrent.svg, install-bench-serial.svg)
// to BENCH_OUT (default .cache/e2e of this checkout). Exit 1 when a verdict fails.
import { execFileSync } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installTimeline, type TimedStep } from '../../src/pipeline/timeline.js';
import { installSteps } from '../../src/steps/index.js';
import { REPO } from '../helpers/binary.js';
import { budget, waitUntil } from '../helpers/budget.js';
import { E2E_CACHE } from './artifacts.js';
import type { Container } from './container.js';
import { CUSTOMER, Stage, bootServer, envFile, keepServer, log, parseJson, seconds, shutdownServer, type BootedServer } from './harness.js';
import {
  judgeStates,
  medianRun,
  normalizeResult,
  renderReport,
  summarize,
  type BenchRun,
  type ManifestItem,
  type Mode,
  type Operation,
  type OperationRun,
  type ServerState,
  type StateVerdict,
} from './install-bench-report.js';
import { mask, type Secrets } from './secrets.js';
import { startAiGateway, startMcp, type AiGateway, type McpServer } from './standins.js';

const SUITE = 'bookworm' as const;
/** Its own name: its apt download cache (apt-archives-bookworm-srv-bench) is its own, not the bookworm e2e job's, which may run meanwhile. */
const HOSTNAME = 'srv-bench';
/** The server scenario's first install (docs/quickstart.md: --answers FILE --channel), with its result as JSON. */
const ARGS = '--json --channel';
const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';

function rounds(): number {
  const text = process.env.BENCH_ROUNDS ?? '3';
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 20) throw new Error(`BENCH_ROUNDS=${text}: give a whole number from 1 to 20`);
  return n;
}

const settings = {
  rounds: rounds(),
  out: path.resolve(process.env.BENCH_OUT ?? path.join(REPO, '.cache', 'e2e')),
  serialFlag: serialFlag(),
  /** BENCH_CONCURRENT_FLAG=--serial: both modes serial, an A/A run that checks the bench itself (ratio near 1, servers alike). */
  concurrentFlag: (process.env.BENCH_CONCURRENT_FLAG ?? '').trim(),
  /** BENCH_RERUNS=0: fresh installs only, without the no-op re-run, model change and reset after each. */
  operations: process.env.BENCH_RERUNS !== '0',
};

/**
 * The flag that makes an install serial: BENCH_SERIAL_FLAG when set (empty: none, for a
 * binary from before it), else `--serial` when the served binary's `install --help`
 * names it, else none (both modes then run the default, and the ratio is not judged).
 */
function serialFlag(): string {
  if (process.env.BENCH_SERIAL_FLAG !== undefined) return process.env.BENCH_SERIAL_FLAG.trim();
  const dist = process.env.E2E_DIST ? path.resolve(process.env.E2E_DIST) : path.join(REPO, 'dist');
  const binary = path.join(dist, `service-deploy-linux-${process.arch === 'arm64' ? 'arm64' : 'x64'}`);
  try {
    const help = execFileSync(binary, ['install', '--help'], { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.homedir() } });
    return /(^|\s)--serial\b/m.test(help) ? '--serial' : '';
  } catch (error) {
    throw new Error(`${binary} install --help failed (${(error as Error).message.split('\n')[0]}): build first (npm run build), or set BENCH_SERIAL_FLAG`);
  }
}

function commit(): string {
  try {
    return execFileSync('git', ['-C', REPO, 'describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

// ---- the binary's start: its process, found in our own process tree ----------------

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Seconds since boot (CLOCK_BOOTTIME), the clock of /proc/<pid>/stat's start time, 10 ms steps. */
function uptimeMs(): number {
  return Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;
}

function argvOf(pid: string): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').slice(0, -1);
  } catch {
    return [];
  }
}

/** pid -> [ppid, start time in ms since boot] from /proc/<pid>/stat. */
function statOf(pid: string): { ppid: string; startMs: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: fields[1]!, startMs: (Number(fields[19]) * 1000) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/** Every process under `root` (every command the harness runs in a container is under this process: nsenter's children). */
function descendants(root: number): string[] {
  const out: string[] = [];
  const queue = [String(root)];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    let tasks: string[] = [];
    try {
      tasks = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        for (const child of fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').split(' ')) if (child) queue.push(child);
      } catch {
        // gone meanwhile
      }
    }
  }
  return out;
}

/**
 * Finds the install's service-deploy process (argv: /usr/local/bin/service-deploy and
 * exactly the install's arguments) every 50 ms until it appears, and its start time.
 * On a fresh server install.sh runs it as a child (with libatomic1's library: bash
 * -s is its parent), so the kernel's start time is the binary's own. Had install.sh
 * exec'd it, the process would be install.sh's bash, started before the downloads:
 * then the moment it was first seen as the binary is used instead.
 */
class BinaryStart {
  private timer: NodeJS.Timeout | undefined;
  found: { pid: string; startMs: number; from: 'exact' | 'sampled' } | undefined;

  constructor(private readonly args: string) {}

  start(): void {
    this.timer = setInterval(() => this.scan(), 50);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  scan(): void {
    if (this.found) return this.stop();
    const seenMs = uptimeMs();
    for (const pid of descendants(process.pid)) {
      const argv = argvOf(pid);
      if (!argv[0]?.endsWith('/service-deploy') || argv.slice(1).join(' ') !== this.args) continue;
      const stat = statOf(pid);
      if (!stat) continue;
      const parent = argvOf(stat.ppid);
      const child = parent[0] === 'bash' && parent[1] === '-s';
      this.found = child ? { pid, startMs: stat.startMs, from: 'exact' } : { pid, startMs: seenMs, from: 'sampled' };
      return this.stop();
    }
  }
}

// ---- the servers: one stage for all, a fresh container per install ----------------------

/** What an install reaches from its server: the same for every server of the bench. */
class Bench {
  readonly stage = new Stage(SUITE);
  /** The answers of every install (random per bench, never in argv: the 0600 answers.env). */
  readonly secrets: Secrets;
  ai!: AiGateway;
  mcp!: McpServer;
  private files: Parameters<typeof bootServer>[1]['files'] = [];
  private extraCas = 0;
  notes: string[] = [];

  constructor() {
    const hex = (n: number) => randomBytes(n).toString('hex');
    this.secrets = { apiKey: `pkt_e2e_${hex(16)}`, meshAuthKey: `tskey-auth-e2e${hex(12)}`, mcpToken: `mcp_e2e_${hex(16)}` };
  }

  /**
   * The e2e's stage (setup URL with dist/, Node tarball, stand-in packages, the mesh
   * client's signed apt repository, egress proxy) and one AI gateway and MCP stand-in,
   * shared by every server: the URLs, ports and keys an install writes into its files
   * are then the same on each, and only what an install makes for itself differs.
   */
  async open(): Promise<void> {
    await this.stage.open();
    this.ai = await startAiGateway(() => this.secrets.apiKey!);
    this.mcp = await startMcp(() => this.secrets.mcpToken!);
    const common = this.stage.containerFiles();
    this.extraCas = common.extraCas;
    if (common.nodeExtraCa) this.notes.push(`the machine's extra CA certificates (${common.extraCas} in /usr/local/share/ca-certificates) are trusted in the containers too`);
    const answers = { SERVICE_CUSTOMER_NAME: CUSTOMER, SERVICE_API_KEY: this.secrets.apiKey!, SERVICE_MESH_AUTH_KEY: this.secrets.meshAuthKey!, SERVICE_MCP_TOKEN: this.secrets.mcpToken! };
    this.files = [
      ...common.files,
      { path: '/root/e2e/sources.env', content: envFile(this.stage.sources(this.ai, this.mcp)), mode: 0o600 },
      { path: '/root/e2e/answers.env', content: envFile(answers), mode: 0o600 },
    ];
  }

  /** A fresh server: the cached root unpacked anew, booted, with the stage's files (as World.open). */
  async boot(): Promise<Server> {
    const server = await bootServer(this.stage, {
      suite: SUITE,
      hostname: HOSTNAME,
      files: this.files,
      forwardUrls: [this.stage.setup.url, this.stage.apt.url, this.ai.url, this.mcp.url],
    });
    try {
      if (this.extraCas > 0) await server.container.ok('update-ca-certificates >/dev/null 2>&1', { timeoutMs: 60_000 });
    } catch (error) {
      await shutdownServer(server);
      throw error;
    }
    log(`${HOSTNAME} booted in ${seconds(server.bootMs)} (init pid ${server.container.initPid}, root ${server.container.root}${server.net ? `, ${server.net.netns} ${server.net.address}` : ''})`);
    return new Server(server, (text) => this.masked(text));
  }

  masked(text: string): string {
    let out = text;
    for (const [name, value] of Object.entries(this.secrets)) if (value.length >= 8) out = out.split(value).join(mask(name, value));
    return out;
  }

  async close(): Promise<void> {
    await this.ai?.close().catch(() => undefined);
    await this.mcp?.close().catch(() => undefined);
    await this.stage.close();
    this.notes.push(...this.stage.notes);
  }
}

/** One booted server of the bench. */
class Server {
  private closing: Promise<void> | undefined;

  constructor(
    readonly booted: BootedServer,
    readonly masked: (text: string) => string,
  ) {}

  get container(): Container {
    return this.booted.container;
  }

  get bootMs(): number {
    return this.booted.bootMs;
  }

  /** The server's address as the host reaches it (in the channel's URL and certificate). */
  get address(): string {
    return this.booted.net?.address ?? '127.0.0.1';
  }

  /** The end of the install log, secrets masked. */
  async diagnostics(): Promise<string> {
    const r = await this.container.sh('tail -n 60 /var/log/service-deploy/install.log 2>&1; systemctl --failed --no-legend 2>&1', { timeoutMs: 30_000 });
    return this.masked(`${r.stdout}${r.stderr}`).slice(-8000);
  }

  /** Powers it off and removes it, once (the signal handler and the run may both ask); E2E_KEEP=1 keeps it (harness.ts). */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      if (process.env.E2E_KEEP === '1') {
        await this.booted.forwarder?.close().catch(() => undefined);
        for (const line of keepServer(this.booted)) log(line);
        return;
      }
      await shutdownServer(this.booted);
    })());
  }
}

// ---- one install on a fresh server ------------------------------------------------------

interface Installed {
  run: BenchRun;
  json: any;
  stderr: string;
}

/** One `curl install.sh | bash -s -- ARGS` on a server, timed from the binary's start to its exit. */
interface Timed {
  exitCode: number;
  json: any;
  stderr: string;
  wallMs: number;
  wallFrom: BenchRun['wallFrom'];
  pipeMs: number;
}

async function timedPipe(srv: Server, label: string, args: string, env: Record<string, string> = {}): Promise<Timed> {
  const watch = new BinaryStart(args);
  // As World.installSh, with the boot-time clock read inside before and after the pipe.
  const script = `set -o pipefail; set -a; . /root/e2e/sources.env; . /root/e2e/answers.env; set +a
read -r up0 _ </proc/uptime
curl -fsSL --cacert /root/e2e/ca.pem "$SERVICE_SETUP_URL/install.sh" | bash -s -- ${args}
rc=$?
read -r up1 _ </proc/uptime
echo "install-bench: uptime $up0 $up1" >&2
exit $rc`;
  watch.start();
  let result;
  try {
    result = await srv.container.sh(script, { timeoutMs: budget(30 * 60_000), env });
  } finally {
    watch.stop();
  }
  const times = /install-bench: uptime (\d+(?:\.\d+)?) (\d+(?:\.\d+)?)/.exec(result.stderr);
  const up0 = times ? Number(times[1]) * 1000 : NaN;
  const up1 = times ? Number(times[2]) * 1000 : NaN;
  const pipeMs = times ? up1 - up0 : result.ms;
  let wallMs = pipeMs;
  let wallFrom: BenchRun['wallFrom'] = 'pipe';
  if (watch.found && times && watch.found.startMs >= up0 - 20 && watch.found.startMs <= up1) {
    wallMs = up1 - watch.found.startMs;
    wallFrom = watch.found.from;
  } else {
    notes.push(`${label}: the binary's start was not found (${watch.found ? `start ${watch.found.startMs} outside ${up0}-${up1}` : 'no process seen'}): its wall is the whole curl | bash`);
  }
  return { exitCode: result.exitCode, json: parseJson(result.stdout), stderr: result.stderr, wallMs: Math.round(wallMs), wallFrom, pipeMs: Math.round(pipeMs) };
}

async function timedInstall(srv: Server, index: number, mode: Mode): Promise<Installed> {
  const args = [ARGS, modeFlag(mode)].filter(Boolean).join(' ');
  const load0 = os.loadavg()[0]!;
  log(`#${index} ${mode}: install.sh | bash -s -- ${args}`);
  const result = await timedPipe(srv, `#${index}`, args);
  const { json, wallMs, wallFrom, pipeMs } = result;
  const steps: TimedStep[] = (json?.steps ?? []).map(({ id, status, startMs, endMs, durationMs }: TimedStep) => ({ id, status, startMs, endMs, durationMs }));
  const drawn = installTimeline({ steps }, installSteps(), '');
  const failedStep = (json?.steps ?? []).find((s: { status: string }) => s.status === 'failed') as { id: string; error?: string } | undefined;
  const run: BenchRun = {
    index,
    mode,
    args,
    exitCode: result.exitCode,
    ok: result.exitCode === 0 && json?.ok === true,
    wallMs,
    wallFrom,
    pipeMs,
    pipelineMs: json?.durationMs ?? NaN,
    stepsMs: steps.reduce((sum, s) => sum + (s.durationMs ?? 0), 0),
    criticalPath: drawn.critical,
    steps,
    load: [load0, os.loadavg()[0]!],
    bootMs: srv.bootMs,
    ...(failedStep ? { failed: failedStep.id, error: srv.masked(failedStep.error ?? '') } : result.exitCode !== 0 && !json ? { error: srv.masked(result.stderr.trim().split('\n').slice(-3).join(' | ')) } : {}),
  };
  log(`#${index} ${mode}: exit ${run.exitCode} in ${seconds(run.wallMs)} (binary, ${wallFrom}; curl | bash ${seconds(run.pipeMs)}, steps ${seconds(run.pipelineMs)}), critical path ${seconds(run.criticalPath.ms)}: ${run.criticalPath.ids.join(' -> ')}`);
  return { run, json, stderr: result.stderr };
}

function modeFlag(mode: Mode): string {
  return mode === 'serial' ? settings.serialFlag : settings.concurrentFlag;
}

function slowest(steps: Array<{ id: string; durationMs?: number }>): string[] {
  return [...steps]
    .filter((x) => typeof x.durationMs === 'number')
    .sort((a, b) => b.durationMs! - a.durationMs!)
    .slice(0, 3)
    .map((x) => `${x.id} ${seconds(x.durationMs!)}`);
}

/** The model the model change sets (the e2e's second model; the AI gateway stand-in answers any). */
const NEW_MODEL = 'e2e-model-2';

/**
 * The e2e's re-runs on the installed server, with the fresh install's mode flag: the
 * no-op re-run (step 4: `--catalog`, nothing changes), the model change (step 5:
 * `--catalog` with SERVICE_MODEL; the runtime config changes, the gateway restarts and
 * answers) and `--reset-clean --yes --json` (step 7: backup, then everything removed).
 * Each must do what it is for, else it counts as failed, not as a time.
 */
async function timedOperations(srv: Server, run: BenchRun): Promise<OperationRun[]> {
  const flag = modeFlag(run.mode);
  const plan: Array<{ op: Operation; args: string; env?: Record<string, string>; did: (json: any) => string | undefined }> = [
    { op: 'no-op re-run', args: '--catalog', did: (j) => (j?.recap?.changed === 0 ? undefined : `changed ${j?.recap?.changed} steps: ${(j?.steps ?? []).filter((x: { status: string }) => x.status === 'changed').map((x: { id: string }) => x.id).join(', ')}`) },
    { op: 'model change', args: '--catalog', env: { SERVICE_MODEL: NEW_MODEL }, did: (j) => (j?.steps?.find((x: { id: string }) => x.id === 'runtime-config')?.status === 'changed' ? undefined : 'the runtime config did not change') },
    { op: 'reset', args: '--reset-clean --yes --json', did: (j) => (typeof j?.backup === 'string' ? undefined : 'no backup named in the result') },
  ];
  const out: OperationRun[] = [];
  for (const { op, args: base, env, did } of plan) {
    const args = [base, flag].filter(Boolean).join(' ');
    const r = await timedPipe(srv, `#${run.index} ${op}`, args, env);
    const why = r.exitCode !== 0 ? srv.masked((r.json?.steps ?? []).find((x: { status: string }) => x.status === 'failed')?.error ?? r.stderr.trim().split('\n').slice(-3).join(' | ')) : did(r.json);
    const done: OperationRun = {
      op,
      args,
      exitCode: r.exitCode,
      ok: r.exitCode === 0 && !why,
      wallMs: r.wallMs,
      wallFrom: r.wallFrom,
      pipelineMs: typeof r.json?.durationMs === 'number' ? r.json.durationMs : NaN,
      ...(typeof r.json?.recap?.changed === 'number' ? { changed: r.json.recap.changed } : {}),
      ...(Array.isArray(r.json?.steps) ? { slowest: slowest(r.json.steps) } : {}),
      ...(why ? { error: why } : {}),
    };
    out.push(done);
    log(`#${run.index} ${run.mode} ${op} (${args}): exit ${r.exitCode} in ${seconds(r.wallMs)}${done.slowest ? ` (longest steps: ${done.slowest.join(', ')})` : ''}${why ? `: ${why}` : ''}`);
    if (!done.ok) break;
    // The next re-run starts on a settled server, as the e2e's next step does.
    await settle(srv);
  }
  return out;
}

/** Until neither systemd nor root's user manager has a job queued (units starting after the install). */
async function settle(srv: Server): Promise<void> {
  let last = '';
  await waitUntil(
    "the system's and root's user manager's jobs to end",
    async () => {
      const r = await srv.container.sh(`systemctl list-jobs --no-legend --no-pager 2>&1; ${USER_ENV} systemctl --user list-jobs --no-legend --no-pager 2>&1`, { timeoutMs: 30_000 });
      last = r.stdout.trim();
      return !/^\s*\d+\s/m.test(r.stdout);
    },
    { budgetMs: 180_000, intervalMs: 500, lastSeen: () => last },
  );
}

/** `dpkg-query -W`, the unit files and units of the system and root's user manager, the manifest, the result without times. */
async function serverState(srv: Server, json: unknown): Promise<ServerState> {
  const listFiles = 'list-unit-files --no-legend --plain --no-pager';
  const listUnits = 'list-units --all --no-legend --plain --no-pager --type=service,socket,timer,path,target';
  const out = await srv.container.ok(
    [
      `echo '### packages'; dpkg-query -W -f='\${binary:Package}\\t\${Version}\\t\${db:Status-Abbrev}\\n'`,
      `echo '### system unit-files'; systemctl ${listFiles}`,
      `echo '### system units'; systemctl ${listUnits}`,
      `echo '### user unit-files'; ${USER_ENV} systemctl --user ${listFiles}`,
      `echo '### user units'; ${USER_ENV} systemctl --user ${listUnits}`,
    ].join('\n'),
    { timeoutMs: 60_000 },
  );
  const sections: Record<string, string[]> = {};
  let current = '';
  for (const line of out.split('\n')) {
    const head = /^### (.+)$/.exec(line);
    if (head) sections[(current = head[1]!)] = [];
    else if (current && line.trim()) sections[current]!.push(line.trim());
  }
  const packages: Record<string, string> = {};
  for (const line of sections.packages ?? []) {
    const [name, version, status] = line.split('\t');
    packages[name!] = `${version} ${(status ?? '').trim()}`;
  }
  const unitFiles: Record<string, string> = {};
  const units: Record<string, string> = {};
  for (const scope of ['system', 'user']) {
    for (const line of sections[`${scope} unit-files`] ?? []) {
      const [unit, state] = line.split(/\s+/);
      unitFiles[`${scope} ${unit}`] = state ?? '';
    }
    for (const line of sections[`${scope} units`] ?? []) {
      const fields = line.split(/\s+/);
      if (fields[0] === '●' || fields[0] === '*') fields.shift();
      units[`${scope} ${fields[0]}`] = fields[2] ?? '';
    }
  }
  const manifestText = fs.readFileSync(srv.container.hostPath('/var/lib/service-deploy/manifest.json'), 'utf8');
  const address = { [srv.address]: '<server address>' };
  const manifest: ManifestItem[] = JSON.parse(manifestText).entries.map((e: ManifestItem) => {
    const certificate = e.type === 'file' && !e.secret && /\.(crt|pem)$/.test(e.path) ? certificateShape(srv.container.hostPath(e.path), address) : undefined;
    return {
      path: e.path,
      type: e.type,
      mode: e.mode,
      uid: e.uid,
      gid: e.gid,
      secret: e.secret,
      ...(e.sha256 !== undefined ? { sha256: e.sha256 } : {}),
      ...(e.target !== undefined ? { target: e.target } : {}),
      ...(certificate !== undefined ? { certificate } : {}),
    };
  });
  return { manifest, packages, unitFiles, units, result: normalizeResult(json, address) };
}

/**
 * What a certificate file says, without what is new on each server (its key, serial,
 * dates, signature): subject, issuer, names, CA flag, key type and size, lifetime in
 * days; the server's address replaced by a name. Undefined when the file holds no
 * certificate (it is then compared by its hash).
 */
function certificateShape(file: string, replace: Record<string, string>): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(fs.readFileSync(file));
  } catch {
    return undefined;
  }
  const key = cert.publicKey.asymmetricKeyDetails ?? {};
  const days = Math.round((Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 86_400_000);
  let text = `subject ${cert.subject.replace(/\n/g, ', ')}; issuer ${cert.issuer.replace(/\n/g, ', ')}; names ${cert.subjectAltName ?? '-'}; ca ${cert.ca}; key ${cert.publicKey.asymmetricKeyType} ${key.namedCurve ?? key.modulusLength ?? ''}; ${days} days`;
  for (const [from, to] of Object.entries(replace)) text = text.split(from).join(to);
  return text;
}

// ---- the run -----------------------------------------------------------------------------

const notes: string[] = [];
const runs: BenchRun[] = [];
const states: Array<{ run: BenchRun; state: ServerState }> = [];
const started = Date.now();
const startCommit = commit();
let bench: Bench | undefined;
let server: Server | undefined;
let interrupted = false;

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping; the server in use and the stand-ins are removed`);
    void (async () => {
      await server?.close().catch(() => undefined);
      await bench?.close().catch(() => undefined);
    })().finally(() => process.exit(130));
  });
}

/**
 * The bench's own apt download cache starts from the bookworm e2e job's (hard links to
 * its .deb files) when it has none: a first install that downloads everything would
 * weigh on the first round's serial time. apt writes a .deb under partial/ and renames
 * it, so a listed .deb is whole.
 */
function seedAptCache(): void {
  if (process.env.E2E_DOWNLOAD_CACHE === '0') return;
  const mine = path.join(E2E_CACHE, `apt-archives-${SUITE}-${HOSTNAME}`);
  const theirs = path.join(E2E_CACHE, `apt-archives-${SUITE}-srv-e2e`);
  const debs = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.deb')) : []);
  if (debs(mine).length > 0) return;
  const found = debs(theirs);
  if (found.length === 0) {
    notes.push(`the apt download cache (${path.basename(mine)}) was empty: the first install downloaded its packages`);
    return;
  }
  fs.mkdirSync(mine, { recursive: true });
  for (const f of found) {
    try {
      fs.linkSync(path.join(theirs, f), path.join(mine, f));
    } catch {
      fs.copyFileSync(path.join(theirs, f), path.join(mine, f));
    }
  }
  log(`apt download cache: ${found.length} packages from ${path.basename(theirs)}`);
}

async function main(): Promise<number> {
  log(`install bench: ${settings.rounds} round(s) of a serial and a concurrent fresh install on ${SUITE}, alternated; serial flag: ${settings.serialFlag || '(none: this binary has no serial mode; both run the default)'}${settings.concurrentFlag ? `; concurrent flag: ${settings.concurrentFlag} (BENCH_CONCURRENT_FLAG)` : ''}; commit ${startCommit}; ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(1)}`);
  seedAptCache();
  bench = new Bench();
  try {
    await bench.open();
    const order: Mode[] = Array.from({ length: settings.rounds }, () => ['serial', 'concurrent'] as Mode[]).flat();
    for (const [i, mode] of order.entries()) {
      if (interrupted) break;
      const booted = (server = await bench.boot());
      try {
        const { run, json } = await timedInstall(booted, i + 1, mode);
        runs.push(run);
        if (!run.ok) {
          // The next rounds still run: whether a failure comes back every time is part of the answer.
          log(`#${run.index} ${mode} install failed (exit ${run.exitCode}${run.failed ? ` at ${run.failed}: ${run.error}` : ''}); the install log's end (secrets masked):\n${await booted.diagnostics()}`);
          continue;
        }
        await settle(booted);
        states.push({ run, state: await serverState(booted, json) });
        if (settings.operations) run.operations = await timedOperations(booted, run);
      } finally {
        await booted.close();
        server = undefined;
      }
    }
  } finally {
    await bench.close();
    for (const note of bench.notes) if (!notes.includes(note)) notes.push(note);
  }
  return report();
}

function report(): number {
  const verdict: StateVerdict | undefined = states.some((s) => s.run.mode === 'serial') ? judgeStates(states) : undefined;
  const summary = summarize(runs, verdict, { serialFlag: settings.serialFlag, concurrentFlag: settings.concurrentFlag, rounds: settings.rounds });
  const date = new Date(started).toISOString().slice(0, 10);
  const subtitle = `install bench ${date}, commit ${startCommit}, Debian 12 (${SUITE}) e2e servers, ${os.cpus().length} cores; install.sh | bash -s -- ${ARGS} [serial: ${settings.serialFlag || 'no flag'}; concurrent: ${settings.concurrentFlag || 'no flag'}]; ${settings.rounds} round(s), alternated`;
  const text = renderReport(runs, summary, verdict);
  fs.mkdirSync(settings.out, { recursive: true });
  const svgs: string[] = [];
  for (const mode of ['concurrent', 'serial'] as const) {
    const m = medianRun(runs.filter((r) => r.ok && r.mode === mode));
    if (!m) continue;
    const title = `${mode} install #${m.index}, the median of ${runs.filter((r) => r.ok && r.mode === mode).length}: wall ${seconds(m.wallMs)} (install bench ${date}, ${startCommit}, ${SUITE})`;
    const file = path.join(settings.out, `install-bench-${mode}.svg`);
    fs.writeFileSync(file, installTimeline({ steps: m.steps }, installSteps(), title).svg);
    svgs.push(file);
  }
  const doc = {
    startedAt: new Date(started).toISOString(),
    commit: startCommit,
    suite: SUITE,
    args: ARGS,
    settings,
    machine: { cores: os.cpus().length, loadAtEnd: os.loadavg() },
    summary: { ...summary, medianConcurrent: summary.medianConcurrent?.index },
    runs,
    states: verdict ?? null,
    stateSizes: states.map(({ run, state }) => ({ index: run.index, mode: run.mode, manifest: state.manifest.length, packages: Object.keys(state.packages).length, unitFiles: Object.keys(state.unitFiles).length, units: Object.keys(state.units).length })),
    notes,
    interrupted,
    totalMs: Date.now() - started,
  };
  fs.writeFileSync(path.join(settings.out, 'install-bench.json'), JSON.stringify(doc, null, 1) + '\n');
  fs.writeFileSync(path.join(settings.out, 'install-bench.txt'), `${subtitle}\n\n${text}\n`);
  // Each server's state as compared, to look into a difference afterwards.
  fs.writeFileSync(path.join(settings.out, 'install-bench-states.json'), JSON.stringify(states.map(({ run, state }) => ({ index: run.index, mode: run.mode, ...state })), null, 1) + '\n');
  process.stdout.write(`\n${subtitle}\n\n${text}\n\n`);
  for (const note of notes) process.stdout.write(`note: ${note}\n`);
  process.stdout.write(`written: ${path.join(settings.out, 'install-bench.json')}, install-bench.txt, install-bench-states.json${svgs.length ? `, ${svgs.map((f) => path.basename(f)).join(', ')}` : ''} (the bench took ${seconds(Date.now() - started)})\n`);
  return summary.verdicts.every((v) => v.ok !== false) && !interrupted && runs.length > 0 ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  const text = (error as Error).stack ?? String(error);
  log(`install bench failed: ${bench ? bench.masked(text) : text}`);
  if (runs.length > 0) report();
}
process.exit(code);
