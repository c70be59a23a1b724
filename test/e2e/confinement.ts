// Issue 13 item 5 and issue 19 items 5-6 on the real server: the gateway unit's sandbox
// as root's user manager applies it, and the runtime's own judges (its doctor, config
// validator, secrets and security audits) on the deployed server.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { runExfiltration } from './exfil.js';
import { GATEWAY_UNIT, log, type World } from './harness.js';
import { scanAsGateway } from './secrets.js';

const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';

/** The sandbox properties root's user manager reports for the unit (what it really applies). */
const PROPERTIES = [
  'NoNewPrivileges', 'CapabilityBoundingSet', 'ProtectSystem', 'ProtectHome', 'PrivateTmp', 'PrivateDevices', 'PrivateMounts',
  'ProtectKernelTunables', 'ProtectKernelModules', 'ProtectKernelLogs', 'ProtectControlGroups', 'ProtectClock', 'ProtectHostname',
  'ProtectProc', 'RestrictNamespaces', 'RestrictRealtime', 'RestrictSUIDSGID', 'LockPersonality', 'SystemCallArchitectures',
  'UMask', 'ReadWritePaths', 'InaccessiblePaths', 'TimeoutStopUSec', 'KillMode', 'RestartPreventExitStatus', 'OOMPolicy', 'StartLimitBurst',
];

export interface SandboxReport {
  exposure: number;
  exposureLines: string[];
  properties: Record<string, string>;
  status: Record<string, string>;
  /** path -> what a write from inside the gateway's mount namespace got. */
  writes: Record<string, string>;
  answersVisible: boolean;
  browserProcesses: string[];
  processesInUnit: string[];
  managers: Record<string, string>;
  reportedBrowser?: { pid: number; proc: string; inUnit: boolean };
}

/** systemd-analyze's rating of the installed unit, the process's credentials, and writes from inside its namespace. */
export async function inspectSandbox(world: World, pid: number, browserPid?: number): Promise<SandboxReport> {
  const c = world.container;
  const analyze = await c.sh(`${USER_ENV} systemd-analyze security --user --no-pager ${GATEWAY_UNIT}`, { timeoutMs: 60_000 });
  const exposure = Number(/Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(analyze.stdout)?.[1] ?? NaN);
  const exposureLines = analyze.stdout.split('\n').filter((l) => /^✗|Overall/.test(l.trim())).map((l) => l.replace(/\s+/g, ' ').trim());
  const shown = await c.ok(`${USER_ENV} systemctl --user show ${GATEWAY_UNIT} ${PROPERTIES.map((p) => `-p ${p}`).join(' ')}`);
  const properties = Object.fromEntries(shown.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  const statusText = await c.ok(`grep -E '^(Uid|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/${pid}/status`);
  const status = Object.fromEntries(statusText.trim().split('\n').map((l) => l.split(/:\s+/) as [string, string]));
  // Real root (all capabilities) entering only the gateway's mount namespace: a
  // read-only mount refuses the write whatever the credentials.
  const writes: Record<string, string> = {};
  for (const dir of ['/etc', '/usr', '/usr/local/bin', '/root/.openclaw']) {
    const r = await c.sh(`nsenter -t ${pid} -m sh -c 'touch ${dir}/.e2e-sandbox-probe && rm -f ${dir}/.e2e-sandbox-probe && echo writable' 2>&1`, { timeoutMs: 30_000 });
    writes[dir] = (r.stdout.trim().split('\n').pop() ?? '').replace(/^touch: /, '');
  }
  // /root is ProtectHome=tmpfs's empty tmpfs, documented read-only but mounted writable by
  // systemd up to 257 (systemd issue 34825): what counts is that nothing written there
  // reaches the real /root. So: its file system type inside, and whether a file made
  // there shows outside the namespace.
  const home = await c.sh(
    `fs=$(nsenter -t ${pid} -m stat -f -c %T /root); made=$(nsenter -t ${pid} -m sh -c 'touch /root/.e2e-sandbox-probe 2>&1 && echo writable' | tail -n 1 | sed 's/^touch: //'); ` +
      `if test -e /root/.e2e-sandbox-probe; then outside=visible-outside; rm -f /root/.e2e-sandbox-probe; else outside=not-outside; fi; nsenter -t ${pid} -m rm -f /root/.e2e-sandbox-probe; echo "$fs; $made; $outside"`,
    { timeoutMs: 30_000 },
  );
  writes['/root'] = home.stdout.trim().split('\n').pop() ?? '';
  // The service managers' sockets, as the gateway's mount namespace shows them: the
  // inaccessible node (mode 0) or nothing, never the real socket.
  const managers: Record<string, string> = {};
  for (const p of ['/run/user/0/bus', '/run/user/0/systemd/private', '/run/dbus/system_bus_socket', '/run/systemd/private']) {
    const r = await c.sh(`nsenter -t ${pid} -m stat -c '%a %F' ${p} 2>&1`, { timeoutMs: 30_000 });
    managers[p] = r.stdout.trim().replace(/^stat: /, '');
  }
  const answers = await c.sh(`nsenter -t ${pid} -m cat /var/lib/service-deploy/answers.json 2>&1`, { timeoutMs: 30_000 });
  const cgroup = (await c.ok(`${USER_ENV} systemctl --user show -p ControlGroup --value ${GATEWAY_UNIT}`)).trim();
  const procs = await c.sh(`for p in $(find /sys/fs/cgroup${cgroup} -name cgroup.procs -exec cat {} + 2>/dev/null); do echo "$p $(cat /proc/$p/comm 2>/dev/null) $(grep NoNewPrivs /proc/$p/status 2>/dev/null | tr -s '\\t ' ' ')"; done`, { timeoutMs: 30_000 });
  const listed = procs.stdout.split('\n').filter((l) => l.trim() !== '');
  // The browser the runtime reported starting (its pid from the browser tool's status),
  // judged by its own /proc/<pid>/cgroup: on Debian 13 the tree walk above did not list it.
  let reported: SandboxReport['reportedBrowser'];
  if (browserPid) {
    const r = await c.sh(`cat /proc/${browserPid}/comm /proc/${browserPid}/cgroup 2>&1; readlink /proc/${browserPid}/exe 2>&1`, { timeoutMs: 30_000 });
    reported = { pid: browserPid, proc: r.stdout.trim().replace(/\s+/g, ' '), inUnit: r.stdout.includes(`${cgroup}\n`) || r.stdout.includes(`${cgroup}/`) };
  }
  const browserProcesses = listed.filter((l) => /chrom|headless/i.test(l) || (browserPid !== undefined && l.startsWith(`${browserPid} `)));
  return { exposure, exposureLines, properties, status, writes, answersVisible: answers.stdout.includes('customerName'), browserProcesses, processesInUnit: listed, managers, ...(reported ? { reportedBrowser: reported } : {}) };
}

export interface RuntimeJudges {
  configValidate: { exitCode: number; out: string };
  secretsAudit: { exitCode: number; report: any };
  securityAudit: { summary: any; findings: Array<{ checkId: string; severity: string; title?: string }> };
  doctor: { exitCode: number; lines: string[] };
  doctorLint: { exitCode: number; findings: Array<{ checkId?: string; id?: string; severity?: string; message?: string; title?: string }> };
}

function json(stdout: string): any {
  const start = stdout.indexOf('{');
  try {
    return JSON.parse(stdout.slice(start));
  } catch {
    return undefined;
  }
}

/** The pinned runtime's own tools, run as an operator would on the server. */
export async function runtimeJudges(world: World): Promise<RuntimeJudges> {
  const c = world.container;
  const run = (args: string, timeoutMs = 180_000) => c.sh(`${USER_ENV} openclaw ${args}`, { timeoutMs });
  const validate = await run('config validate --json');
  const secrets = await run('secrets audit --check --json');
  const security = await run('security audit --deep --json', 300_000);
  const securityReport = json(security.stdout) ?? {};
  const doctor = await run('doctor --non-interactive', 300_000);
  const lint = await run('doctor --lint --json --severity-min warning', 300_000);
  const lintReport = json(lint.stdout) ?? {};
  return {
    configValidate: { exitCode: validate.exitCode, out: world.masked(`${validate.stdout}${validate.stderr}`).slice(-600) },
    secretsAudit: { exitCode: secrets.exitCode, report: json(secrets.stdout) ?? world.masked(secrets.stdout + secrets.stderr).slice(-600) },
    securityAudit: { summary: securityReport.summary, findings: securityReport.findings ?? [] },
    doctor: { exitCode: doctor.exitCode, lines: world.masked(`${doctor.stdout}\n${doctor.stderr}`).split('\n').map((l) => l.trimEnd()).filter(Boolean) },
    doctorLint: { exitCode: lint.exitCode, findings: lintReport.findings ?? [] },
  };
}

/**
 * The runtime's doctor lists every directive its own installer does not write as "an
 * unrecognized setting": our sandbox (and the secret source's EnvironmentFile) by
 * design, explained in docs/operations.md. Anything else about the unit is a finding.
 */
export function sandboxKeys(): Set<string> {
  const unit = fs.readFileSync(path.join(REPO, 'templates/openclaw-gateway.service'), 'utf8');
  const sandbox = unit.split('# ---- sandbox')[1]?.split('[Install]')[0] ?? '';
  return new Set([...sandbox.matchAll(/^(\w+)=/gm)].map((m) => m[1]!).concat('EnvironmentFile'));
}

/** The doctor's boxed text as one line per finding sentence (box drawing removed, wraps joined). */
export function doctorText(lines: string[]): string {
  return lines.map((l) => l.replace(/[│├╮╯╭╰─┌└◇]/g, ' ').trim()).join(' ').replace(/\s+/g, ' ');
}

/** What a finding of the runtime's doctor about our unit or config would say (its service audit's own words). */
const OURS = /TimeoutStopSec|KillMode|RestartSec|network-online|StartLimit|RestartPreventExitStatus|differs from the installer value|unrecognized setting|Gateway service PATH|plaintext|gateway\.auth\.token|trusted.?prox|tools\.elevated|workspaceOnly|tools\.exec is configured|allowLegacyAuth|Missing env var/i;

/**
 * The files holding a secret value that the gateway may read (docs/security.md, "What the
 * sandbox leaves readable"), with the secrets each holds: the source its SecretRefs
 * resolve from. The scan must find exactly these: any other is a leak, and this one
 * missing means the scan is blind.
 */
export const GATEWAY_READABLE_SECRETS: Record<string, string[]> = {
  '/var/lib/service-deploy/runtime-secrets/secrets.json': ['apiKey'],
};

/** Issue 27 item 3: the node tools that came in through group:plugins (bundled file-transfer and ollama plugins). */
export const NODE_TOOLS = ['file_fetch', 'file_write', 'dir_list', 'dir_fetch', 'node_inference'];

/** A line from the middle of the channel's TLS key: found in a file, it means the key is there. */
function tlsKeyLine(world: World): string | undefined {
  const file = world.container.hostPath('/etc/service-deploy/tls/channel.key');
  if (!fs.existsSync(file)) return undefined;
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => /^[A-Za-z0-9+/]{64}$/.test(l));
  return lines[Math.floor(lines.length / 2)];
}

/** The e2e step (server.e2e.ts): exfiltration, controls, sandbox, the gateway's view of the disk, the runtime's judges. */
export async function confinementStep(world: World, chat: (message: string) => Promise<{ reply: string }>, report: Record<string, unknown>): Promise<void> {
  const pid = Number(await world.userUnit('MainPID'));
  const exfil = await runExfiltration(world, chat, pid);
  report.exfiltration = exfil;
  log(`exfiltration: ${exfil.attempts.length} attempts, ${exfil.refused} refused; ${exfil.requestsScanned} model requests scanned, secrets in them: ${exfil.secretsInRequests.join(', ') || 'none'}`);
  for (const a of exfil.attempts) log(`  ${a.outcome.padEnd(8)} ${a.kind} [${a.tool}${a.offered ? '' : ', not offered'}]: ${a.result.slice(0, 120)}`);
  log(`  tools offered to a channel turn (${exfil.toolsOffered.length}): ${exfil.toolsOffered.join(', ')}`);
  log(`  controls: workspace read: ${exfil.controls.workspaceRead.slice(0, 80)} | mcp: ${exfil.controls.mcp.slice(0, 80)} | browser: ${exfil.controls.browserStart.slice(0, 160)}`);

  const browserPid = Number(/"pid":\s*(\d+)/.exec(exfil.controls.browserStart)?.[1] ?? NaN);
  const sandbox = await inspectSandbox(world, pid, Number.isFinite(browserPid) ? browserPid : undefined);
  report.sandbox = sandbox;
  log(`systemd-analyze security ${GATEWAY_UNIT}: exposure ${sandbox.exposure} (target <= 4.5)`);
  log(`  process: ${JSON.stringify(sandbox.status)}; writes from its namespace: ${JSON.stringify(sandbox.writes)}; browser processes in the unit: ${sandbox.browserProcesses.length}; the reported browser: ${JSON.stringify(sandbox.reportedBrowser)}; service managers' sockets inside: ${JSON.stringify(sandbox.managers)}`);

  // Issue 27 item 2: as the gateway, every readable file against every secret value
  // (the TLS key by a line of it).
  const keyLine = tlsKeyLine(world);
  if (keyLine) world.secrets.tlsKey = keyLine;
  const scan = await scanAsGateway(world.container, pid, world.secrets);
  report.gatewayScan = scan;
  log(`as the gateway (its namespace, uid 0 without capabilities): ${scan.files} files (${(scan.bytes / 1024 ** 2).toFixed(0)} MiB) read in ${(scan.ms / 1000).toFixed(0)} s, ${scan.unreadable} not readable, ${scan.skipped.length} too large${scan.skipped.length ? ` (${scan.skipped.map((f) => f.path).join(', ')})` : ''}; secrets checked: ${Object.keys(world.secrets).join(', ')}`);
  for (const f of scan.findings) log(`  readable with ${f.secrets.join(', ')}${f.compressed ? ' (inside its gzip)' : ''}: ${f.path}`);

  const judges = await runtimeJudges(world);
  report.runtimeJudges = judges;
  log(`openclaw config validate: exit ${judges.configValidate.exitCode}; secrets audit --check: exit ${judges.secretsAudit.exitCode}; security audit --deep: ${JSON.stringify(judges.securityAudit.summary)} ${judges.securityAudit.findings.map((f) => `${f.severity} ${f.checkId}`).join(', ')}`);
  log(`openclaw doctor --non-interactive: exit ${judges.doctor.exitCode}, ${judges.doctor.lines.length} lines; --lint: ${judges.doctorLint.findings.map((f) => `${f.severity} ${f.checkId ?? f.id}`).join(', ') || 'no findings'}`);

  // Issue 20: nothing leaked, nothing a secret reached the model, and the product still works.
  expect(exfil.attempts.filter((a) => a.outcome === 'LEAKED'), JSON.stringify(exfil.attempts, null, 1)).toEqual([]);
  expect(exfil.attempts.filter((a) => a.outcome === 'no tool result' && a.offered), JSON.stringify(exfil.attempts, null, 1)).toEqual([]);
  expect(exfil.secretsInRequests).toEqual([]);
  expect(exfil.toolsOffered).not.toContain('exec');
  // Issue 27 item 3: none of the node tools is offered. QMD's tools are (its MCP server
  // runs under the gateway, reading its config and index through the sandbox's binds).
  expect(exfil.toolsOffered.filter((t) => NODE_TOOLS.includes(t)), exfil.toolsOffered.join(', ')).toEqual([]);
  expect(exfil.toolsOffered.some((t) => /^qmd/.test(t)), exfil.toolsOffered.join(', ')).toBe(true);
  expect(exfil.controls.workspaceRead).toContain('E2E-WORKSPACE-NOTE 4711');
  expect(exfil.controls.mcp).toContain('no contacts (e2e stand-in)');
  expect(world.mcp.calls.length).toBeGreaterThan(0);
  expect(world.mcp.calls.every((call) => call.authorized)).toBe(true);
  // Issue 13: the sandbox as applied; the browser runs inside it; /etc and /usr stay read-only.
  expect(sandbox.exposure).toBeLessThanOrEqual(4.5);
  expect(sandbox.status.NoNewPrivs).toBe('1');
  expect(sandbox.status.Seccomp).toBe('2');
  expect(sandbox.status.CapEff).toMatch(/^0+$/);
  for (const dir of ['/etc', '/usr', '/usr/local/bin']) expect(sandbox.writes[dir], dir).toMatch(/Read-only file system/);
  // An empty tmpfs of the unit's own: read-only, or (systemd <= 257) writable but nothing reaches the real /root.
  expect(sandbox.writes['/root'], '/root').toMatch(/^tmpfs; (.*Read-only file system|writable); not-outside$/);
  expect(sandbox.writes['/root/.openclaw']).toBe('writable');
  expect(sandbox.answersVisible).toBe(false);
  // Issue 27 item 2: the gateway reads a secret only where it must.
  expect(Object.fromEntries(scan.findings.map((f) => [f.path, f.secrets])), 'readable secret files as the gateway').toEqual(GATEWAY_READABLE_SECRETS);
  expect(scan.skipped).toEqual([]);
  for (const [p, seen] of Object.entries(sandbox.managers)) expect(seen, `${p} inside the gateway's namespace`).toMatch(/^0 |No such file or directory|Permission denied/);
  const browserInUnit = sandbox.browserProcesses.length > 0 || sandbox.reportedBrowser?.inUnit === true;
  expect(browserInUnit, `${exfil.controls.browserStart}\nreported: ${JSON.stringify(sandbox.reportedBrowser)}\nin the unit: ${sandbox.processesInUnit.join(' | ')}`).toBe(true);
  // The runtime's own judges.
  expect(judges.configValidate.exitCode, judges.configValidate.out).toBe(0);
  expect(judges.secretsAudit.exitCode, JSON.stringify(judges.secretsAudit.report)).toBe(0);
  expect(judges.securityAudit.summary, 'security audit --deep --json gave no report').toBeDefined();
  expect(judges.securityAudit.findings.filter((f) => f.severity === 'critical')).toEqual([]);
  const keys = sandboxKeys();
  const doctor = doctorText(judges.doctor.lines);
  const unrecognized = [...doctor.matchAll(/Systemd Service\.(\w+) contains an unrecognized setting\./g)].map((m) => m[1]!);
  report.runtimeDoctorUnrecognized = unrecognized;
  expect(unrecognized.filter((k) => !keys.has(k)), 'unit settings the runtime does not know that are not our sandbox').toEqual([]);
  const rest = doctor.replace(/Systemd Service\.\w+ contains an unrecognized setting\./g, '');
  const ours = rest.split(/(?<=\.) /).filter((sentence) => OURS.test(sentence));
  expect(ours, judges.doctor.lines.join('\n')).toEqual([]);
}
