// The multi-server harness (issue 16): N containers booted at once, each in its own
// network namespace (netns.ts), reachable from this machine over SSH (openssh-server
// inside, a throwaway key) on its veth address, driven by Ansible with the role and
// playbooks of examples/ansible as a partner would copy them. Only what the e2e must
// change is changed in the copy: the setup URL and the per-host settings and secrets
// (in Ansible Vault, encrypted with a throwaway password).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { budget } from '../helpers/budget.js';
import { REPO } from '../helpers/binary.js';
import { Stage, bootServer, envFile, log, shutdownServer, type BootedServer } from './harness.js';
import type { Suite } from './container.js';
import { ArgvWatch, mask, type Secrets } from './secrets.js';
import { sleep } from './container.js';
import { startAiGateway, startMcp, type AiGateway, type McpServer } from './standins.js';

export const EXAMPLE = path.join(REPO, 'examples', 'ansible');

export interface FleetHost {
  name: string;
  customer: string;
  server: BootedServer;
  ai: AiGateway;
  mcp: McpServer;
  mcpToken: string;
  hostKeyPub: string;
}

export interface PlayRun {
  exitCode: number;
  stdout: string;
  stderr: string;
  ms: number;
  /** PLAY RECAP per host: ok, changed, unreachable, failed, skipped... */
  recap: Record<string, Record<string, number>>;
}

/**
 * Why a play failed, in one line that fits the run's summary (CI keeps only the tail of
 * the log): each failed host's task and, from our install's JSON in its result, the
 * failed step with its error and hint, or the run's error. The ansible output holds that
 * JSON escaped inside the task's result, so it is read back from the escaped text.
 */
export function playFailure(run: Pick<PlayRun, 'stdout' | 'stderr' | 'exitCode'>): string {
  const out = run.stdout;
  const parts: string[] = [];
  const unescape = (v: string) => v.replace(/\\(["\\])/g, '$1');
  for (const m of out.matchAll(/^(?:fatal|failed): \[([^\]]+)\]/gm)) {
    const from = m.index ?? 0;
    const block = out.slice(from, out.indexOf('\n\n', from) > 0 ? out.indexOf('\n\n', from) : undefined);
    const task = out.slice(0, from).match(/TASK \[([^\]]+)\][^\n]*\n(?![\s\S]*TASK \[)/)?.[1];
    const steps = [...block.matchAll(/\\"id\\": \\"([^"\\]+)\\",(?:\\n|[",\s])*\\"status\\": \\"failed\\"/g)].map((s) => s[1]);
    const errors = [...block.matchAll(/\\"(?:error|message|hint)\\": \\"((?:[^"\\]|\\\\.)*)\\"/g)].map((e) => unescape(e[1]!));
    const stderr = /"stderr": "((?:[^"\\]|\\.)+)"/.exec(block)?.[1];
    const msg = stderr ?? /"msg": "((?:[^"\\]|\\.)*)"/.exec(block)?.[1];
    parts.push(`${m[1]}: ${task ?? 'a task'} failed${steps.length ? `; failed step ${[...new Set(steps)].join(', ')}` : ''}${errors.length ? `: ${[...new Set(errors)].join(' | ')}` : msg ? `: ${msg}` : ''}`);
  }
  if (parts.length === 0) parts.push(`ansible-playbook exit ${run.exitCode}${run.stderr.trim() ? `: ${run.stderr.trim().split('\n').slice(-1)[0]}` : ''}`);
  return parts.join('; ').slice(0, 380);
}

/** Replaces `from` exactly once (so the e2e never drives something else than the example). */
function replaceOnce(text: string, from: string, to: string, file: string): string {
  const parts = text.split(from);
  if (parts.length !== 2) throw new Error(`${file}: expected "${from}" exactly once, found it ${parts.length - 1} times`);
  return parts.join(to);
}

export interface DoctorRow {
  host: string;
  release: string;
  /** Each component's version: plain at the pin, `installed (pin X)` behind it, `-` missing. */
  openclaw: string;
  node: string;
  qmd: string;
  losslessClaw: string;
  result: string;
  failed: string;
  fixes: string;
}

/** The table's header, as doctor-table.j2 names the columns (the cells padded). */
export const DOCTOR_TABLE_HEAD = ['host', 'release', 'openclaw', 'node', 'qmd', 'lossless-claw', 'result', 'failed checks', 'fixes'];

/** The rows of doctor.yml's table (examples/ansible/.../doctor-table.j2), as the debug task prints them. */
export function parseDoctorTable(stdout: string): DoctorRow[] {
  const rows: DoctorRow[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^\s*"((?:[^"\\]|\\.)*)",?$/.exec(line);
    if (!m) continue;
    const cells = m[1]!.split(' | ').map((c) => c.trim());
    if (cells.length !== DOCTOR_TABLE_HEAD.length || cells[0] === 'host') continue;
    const [host, release, openclaw, node, qmd, losslessClaw, result, failed, fixes] = cells as [string, string, string, string, string, string, string, string, string];
    rows.push({ host, release, openclaw, node, qmd, losslessClaw, result, failed, fixes });
  }
  return rows;
}

/** The PLAY RECAP lines of ansible-playbook's default output. */
export function parseRecap(stdout: string): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  const at = stdout.lastIndexOf('PLAY RECAP');
  if (at < 0) return out;
  for (const line of stdout.slice(at).split('\n').slice(1)) {
    const m = /^(\S+)\s+:\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    out[m[1]!] = Object.fromEntries([...m[2]!.matchAll(/(\w+)=(\d+)/g)].map((p) => [p[1]!, Number(p[2])]));
  }
  return out;
}

export class Fleet {
  readonly stage: Stage;
  readonly hosts: FleetHost[] = [];
  readonly secrets: Secrets;
  readonly argv: ArgvWatch;
  /** The control node's copy of examples/ansible. */
  readonly dir: string;
  timings: Record<string, number> = {};
  notes: string[] = [];
  private keyFile = '';
  private closers: Array<{ name: string; close: () => Promise<void> }> = [];

  constructor(
    readonly suite: Suite,
    readonly size: number,
  ) {
    this.stage = new Stage(suite);
    const hex = (n: number) => randomBytes(n).toString('hex');
    this.secrets = { apiKey: `pkt_e2e_${hex(16)}`, meshAuthKey: `tskey-auth-e2e${hex(12)}`, vaultPassword: hex(24) };
    for (let i = 1; i <= size; i++) this.secrets[`mcpToken${i}`] = `mcp_e2e_${hex(16)}`;
    this.argv = new ArgvWatch(
      () => this.secrets,
      () => [process.pid, ...this.hosts.map((h) => h.server.container.initPid)],
    );
    this.dir = path.join(this.stage.work, 'control');
  }

  /** Stand-ins, SSH keys, N containers booted at once, the Ansible project with its inventory and Vault. */
  async open(): Promise<void> {
    this.closers.push({ name: 'stage', close: () => this.stage.close() });
    await this.stage.open();
    this.timings.artifactsMs = this.stage.timings.artifactsMs!;
    const ssh = path.join(this.stage.work, 'ssh');
    fs.mkdirSync(ssh, { mode: 0o700 });
    this.keyFile = path.join(ssh, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'service-deploy e2e control node', '-f', this.keyFile]);
    const clientPub = fs.readFileSync(`${this.keyFile}.pub`, 'utf8');
    const common = this.stage.containerFiles();

    const t = Date.now();
    const boots = Array.from({ length: this.size }, async (_, i) => {
      const n = i + 1;
      const name = `fleet-${n}`;
      const mcpToken = this.secrets[`mcpToken${n}`]!;
      const ai = await startAiGateway(() => this.secrets.apiKey!);
      this.closers.push({ name: `ai-${n}`, close: () => ai.close() });
      const mcp = await startMcp(() => mcpToken);
      this.closers.push({ name: `mcp-${n}`, close: () => mcp.close() });
      const hostKey = path.join(ssh, `${name}_host_ed25519`);
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', hostKey]);
      const server = await bootServer(this.stage, {
        suite: this.suite,
        hostname: name,
        extraPackages: FLEET_PACKAGES,
        downloadCaches: false,
        forwardUrls: [this.stage.setup.url, this.stage.apt.url, ai.url, mcp.url],
        files: [
          ...common.files,
          // The setup server's test CA in the system store: Ansible's get_url checks it like any https source.
          { path: '/usr/local/share/ca-certificates/service-deploy-e2e-setup.crt', content: fs.readFileSync(this.stage.ca.caFile), mode: 0o644 },
          { path: '/etc/ssh/ssh_host_ed25519_key', content: fs.readFileSync(hostKey), mode: 0o600 },
          { path: '/etc/ssh/ssh_host_ed25519_key.pub', content: fs.readFileSync(`${hostKey}.pub`), mode: 0o644 },
          { path: '/root/.ssh/authorized_keys', content: clientPub, mode: 0o600 },
          { path: '/root/e2e/sources.env', content: envFile(this.stage.sources(ai, mcp)), mode: 0o600 },
        ],
      });
      this.closers.push({ name: `container-${n}`, close: () => shutdownServer(server) });
      await server.container.ok('update-ca-certificates >/dev/null 2>&1', { timeoutMs: 120_000 });
      const host: FleetHost = { name, customer: `Fleet Clinic ${n} E2E`, server, ai, mcp, mcpToken, hostKeyPub: fs.readFileSync(`${hostKey}.pub`, 'utf8').trim() };
      this.hosts[i] = host;
      log(`${name} booted: ${server.net!.address} (${server.net!.netns}), init pid ${server.container.initPid}`);
    });
    const settled = await Promise.allSettled(boots);
    const failed = settled.find((s) => s.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) throw failed.reason;
    this.timings.bootMs = Date.now() - t;
    this.timings.rootfsMs = Math.max(...this.hosts.map((h) => h.server.rootfsMs));
    this.argv.start();

    fs.writeFileSync(path.join(ssh, 'known_hosts'), this.hosts.map((h) => `${h.server.net!.address} ${h.hostKeyPub.split(' ').slice(0, 2).join(' ')}`).join('\n') + '\n', { mode: 0o600 });
    this.writeProject();
    await this.waitForSsh();
  }

  /** The example project copied, with the e2e's inventory, settings and Vault. */
  private writeProject(): void {
    fs.cpSync(EXAMPLE, this.dir, { recursive: true, filter: (src) => !/\/(backups|host_vars\/acme-dental)(\/|$)/.test(src) && !src.endsWith('.example.yml') });
    const at = (...p: string[]) => path.join(this.dir, ...p);
    const write = (file: string, text: string, mode = 0o600) => {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fs.writeFileSync(file, text, { mode });
    };
    // ansible.cfg as shipped, pointing at the e2e inventory.
    const cfg = fs.readFileSync(at('ansible.cfg'), 'utf8');
    write(at('ansible.cfg'), replaceOnce(cfg, 'inventory = inventory.example.yml', 'inventory = inventory.yml', 'examples/ansible/ansible.cfg'), 0o644);
    write(
      at('inventory.yml'),
      ['---', 'all:', '  children:', '    customers:', '      hosts:', ...this.hosts.map((h) => `        ${h.name}:\n          ansible_host: ${h.server.net!.address}`), '      vars:', '        ansible_user: root', '        ansible_python_interpreter: /usr/bin/python3', ''].join('\n'),
    );
    // group_vars/all/main.yml as shipped, with the e2e's setup URL.
    const main = fs.readFileSync(at('group_vars/all/main.yml'), 'utf8');
    write(at('group_vars/all/main.yml'), replaceOnce(main, 'service_deploy_setup_url: https://setup.service.example', `service_deploy_setup_url: ${this.stage.setup.url}`, 'examples/ansible/group_vars/all/main.yml'));
    const vaultPass = path.join(this.stage.work, 'ssh', 'vault-pass');
    fs.writeFileSync(vaultPass, `${this.secrets.vaultPassword}\n`, { mode: 0o600 });
    write(at('group_vars/all/vault.yml'), `---\nvault_service_deploy_api_key: ${this.secrets.apiKey}\nvault_service_deploy_mesh_auth_key: ${this.secrets.meshAuthKey}\n`);
    const hostMain = fs.readFileSync(path.join(EXAMPLE, 'host_vars/acme-dental/main.yml'), 'utf8');
    for (const h of this.hosts) {
      write(at('host_vars', h.name, 'main.yml'), replaceOnce(hostMain, 'service_deploy_customer_name: Acme Dental', `service_deploy_customer_name: ${h.customer}`, 'examples/ansible/host_vars/acme-dental/main.yml'));
      write(at('host_vars', h.name, 'vault.yml'), `---\nvault_service_deploy_mcp_token: ${h.mcpToken}\n`);
      this.setEnvironment(h.name);
    }
    // Every secret file encrypted with ansible-vault (the password in a 0600 file, never an argument value).
    const vaults = [at('group_vars/all/vault.yml'), ...this.hosts.map((h) => at('host_vars', h.name, 'vault.yml'))];
    execFileSync('ansible-vault', ['encrypt', ...vaults], { env: this.env(), stdio: 'pipe' }); // the password file: ANSIBLE_VAULT_PASSWORD_FILE
    for (const v of vaults) if (!fs.readFileSync(v, 'utf8').startsWith('$ANSIBLE_VAULT;')) throw new Error(`${v} is not encrypted`);
  }

  /**
   * host_vars/<host>/e2e.yml: what only the e2e needs, the stand-ins' URLs and Debian
   * accepted as the OS, plus `extra` (a release's package source), as the role's
   * non-secret `service_deploy_environment`.
   */
  setEnvironment(host: string, extra: Record<string, string> = {}): void {
    const h = this.host(host);
    const sources = { ...this.stage.sources(h.ai, h.mcp), ...extra };
    delete sources.SERVICE_CA_BUNDLE;
    const file = path.join(this.dir, 'host_vars', host, 'e2e.yml');
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, `---\nservice_deploy_environment:\n${Object.entries(sources).map(([k, v]) => `  ${k}: "${v}"`).join('\n')}\n`, { mode: 0o600 });
  }

  /** Sets a host_vars value in <host>/main.yml (model changes). */
  setHostVar(host: string, key: string, value: string): void {
    const file = path.join(this.dir, 'host_vars', host, 'main.yml');
    const text = fs.readFileSync(file, 'utf8');
    const line = new RegExp(`^${key}:.*$`, 'm');
    if (!line.test(text)) throw new Error(`${key} not in ${file}`);
    fs.writeFileSync(file, text.replace(line, `${key}: ${value}`));
  }

  /** The environment of every ansible command: the copy's config, the throwaway key and known hosts, the Vault password file. */
  env(): Record<string, string> {
    const ssh = path.join(this.stage.work, 'ssh');
    return {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/root',
      LANG: 'C.UTF-8',
      ANSIBLE_CONFIG: path.join(this.dir, 'ansible.cfg'),
      ANSIBLE_PRIVATE_KEY_FILE: this.keyFile,
      ANSIBLE_VAULT_PASSWORD_FILE: path.join(ssh, 'vault-pass'),
      ANSIBLE_SSH_ARGS: `-o ControlMaster=auto -o ControlPersist=120s -o ControlPath=${ssh}/cp-%C -o UserKnownHostsFile=${ssh}/known_hosts -o StrictHostKeyChecking=yes -o HostKeyAlgorithms=ssh-ed25519 -o BatchMode=yes`,
      ANSIBLE_LOCAL_TEMP: path.join(this.stage.work, 'ansible-tmp'),
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_FORCE_COLOR: '0',
      ANSIBLE_DEPRECATION_WARNINGS: '0',
    };
  }

  private async waitForSsh(): Promise<void> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const r = await execa('ansible', ['customers', '-m', 'ansible.builtin.ping', '-o'], { cwd: this.dir, env: this.env(), extendEnv: false, reject: false, timeout: 60_000 });
      if (r.exitCode === 0) return;
      if (Date.now() > deadline) throw new Error(`the fleet did not answer over ssh within 120 s:\n${r.stdout}\n${r.stderr}`);
      await sleep(1000);
    }
  }

  /** ansible-playbook PLAYBOOK ARGS in the control node's copy. */
  async play(playbook: string, args: string[] = [], timeoutMs = budget(20 * 60_000)): Promise<PlayRun> {
    const t = Date.now();
    const r = await execa('ansible-playbook', [playbook, ...args], { cwd: this.dir, env: this.env(), extendEnv: false, reject: false, timeout: timeoutMs, all: false });
    const run = { exitCode: r.exitCode ?? -1, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') + (r.timedOut ? `\n[timed out after ${timeoutMs} ms]` : ''), ms: Date.now() - t, recap: parseRecap(String(r.stdout ?? '')) };
    log(`ansible-playbook ${playbook} ${args.join(' ')}: exit ${run.exitCode} in ${(run.ms / 1000).toFixed(1)} s; ${Object.entries(run.recap).map(([h, c]) => `${h} ok=${c.ok} changed=${c.changed} failed=${c.failed}`).join(', ')}`);
    return run;
  }

  host(name: string): FleetHost {
    const h = this.hosts.find((x) => x.name === name);
    if (!h) throw new Error(`no fleet host ${name}`);
    return h;
  }

  masked(text: string): string {
    let out = text;
    for (const [name, value] of Object.entries(this.secrets)) if (value.length >= 8) out = out.split(value).join(mask(name, value));
    return out;
  }

  async close(): Promise<void> {
    this.argv.stop();
    // The containers at once (each poweroff can take its 20 s), then the rest in reverse order.
    const containers = this.closers.filter((c) => c.name.startsWith('container-'));
    await Promise.all(containers.map(({ name, close }) => close().catch((error: Error) => log(`teardown of ${name}: ${error.message}`))));
    for (const { name, close } of this.closers.filter((c) => !c.name.startsWith('container-')).reverse()) await close().catch((error: Error) => log(`teardown of ${name}: ${error.message}`));
    this.closers = [];
    for (const note of this.stage.notes) this.notes.push(note);
  }
}

/** A server as a partner's fleet has it: sshd, Python and sudo (what Ansible needs; the playbooks use become) on the base. */
export const FLEET_PACKAGES = ['openssh-server', 'python3', 'sudo'];
