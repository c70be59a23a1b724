// The e2e world: artifacts, loopback stand-ins and a booted container, with helpers the
// scenario (server.e2e.ts) uses. Everything is torn down by close(), also on failure.
// The container has a network of its own (netns.ts): the host's loopback stand-ins are
// forwarded to the same 127.0.0.1 URLs inside (forward.ts), packages come through the
// egress proxy (egress.ts), and the host reaches the container's channel port on the
// container's address.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { makeTestCa, serveDirectory, type StaticServer, type TestCa } from '../helpers/https-server.js';
import { E2E_CACHE, hostPath, meshAptRepo, nodeDist, setupDir, standinPackages } from './artifacts.js';
import { Container, ensureRootfs, hostPortHolders, releaseName, suiteFromEnv, type ContainerFile, type ShResult, type Suite } from './container.js';
import { aptSourceHosts, startEgress, type Egress } from './egress.js';
import { Forwarder } from './forward.js';
import { NetSlot } from './netns.js';
import { ArgvWatch, mask, type Secrets } from './secrets.js';
import { startAiGateway, startMcp, serveHttp, type AiGateway, type McpServer } from './standins.js';
import type { CriticalPath } from '../../src/pipeline/critical-path.js';
import { formatMs, installTimeline, type TimedStep } from '../../src/pipeline/timeline.js';
import { installSteps } from '../../src/steps/index.js';

export const GATEWAY_PORT = 18789;
export const CHANNEL_PORT = 18790;
export const CUSTOMER = 'Acme Dental E2E';
export const GATEWAY_UNIT = 'openclaw-gateway.service';
const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';

export interface InstallRun {
  exitCode: number;
  wallMs: number;
  json: any;
  stdout: string;
  stderr: string;
}

export function log(line: string): void {
  process.stdout.write(`[e2e ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

export interface WorldOptions {
  /** Debian suite of the container (default: E2E_SUITE, else bookworm). */
  suite?: Suite;
  hostname?: string;
  /** Packages apt-get installs on the cached base root (cloud-init, openssh-server). */
  extraPackages?: readonly string[];
  /** Share the host's network instead of a namespace of its own (one run at a time: fixed ports). */
  hostNetwork?: boolean;
  /** Extra files placed before boot. */
  files?: ContainerFile[];
  /** What boot waits for (container.ts). */
  waitFor?: 'running' | 'manager';
  /** Bind the download caches (default: unless E2E_DOWNLOAD_CACHE=0). */
  downloadCaches?: boolean;
  /** A host cgroup folder the container runs in (container.ts): the soak's memory limit. */
  cgroup?: string;
}

/** The non-secret environment of the install in the e2e (sources.env): stand-in URLs, CA files. */
export type Sources = Record<string, string>;

/**
 * Artifacts and stand-ins one or more containers share: the setup URL (install.sh and
 * dist/), the Node tarball, the stand-in npm packages, the signed apt repository of the
 * mesh client, the egress proxy. Per server: the AI gateway and MCP stand-ins.
 */
export class Stage {
  readonly work = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-e2e-work-'));
  ca!: TestCa;
  setup!: StaticServer;
  apt!: { url: string; requests: string[]; close(): Promise<void> };
  egress!: Egress;
  pkgs!: { losslessClaw: string };
  timings: Record<string, number> = {};
  notes: string[] = [];
  private closers: Array<{ name: string; close: () => Promise<void> }> = [];

  constructor(readonly suite: Suite) {}

  async open(): Promise<void> {
    const t = Date.now();
    const node = nodeDist();
    const setup = setupDir(this.work);
    fs.symlinkSync(node, path.join(setup, 'node'));
    this.pkgs = standinPackages(this.work);
    const aptRoot = meshAptRepo(this.work, this.suite);
    this.ca = makeTestCa();
    this.timings.artifactsMs = Date.now() - t;

    this.setup = await serveDirectory(setup, this.ca);
    this.onClose('setup', () => this.setup.close());
    this.apt = await serveHttp(aptRoot);
    this.onClose('apt', () => this.apt.close());
    this.egress = await startEgress([npmRegistryHost()]);
    this.onClose('egress', async () => {
      if (this.egress.refused.length > 0) this.notes.push(`egress proxy refused: ${[...new Set(this.egress.refused)].slice(0, 10).join(', ')}`);
      await this.egress.close();
    });
  }

  onClose(name: string, close: () => Promise<void>): void {
    this.closers.push({ name, close });
  }

  /** The environment file every install of this stage sources (non-secret). */
  sources(ai: AiGateway, mcp: McpServer): Sources {
    return {
      SERVICE_ALLOW_UNSUPPORTED_OS: '1',
      SERVICE_SETUP_URL: this.setup.url,
      SERVICE_CA_BUNDLE: '/root/e2e/ca.pem',
      SERVICE_DOWNLOAD_CA_FILE: '/root/e2e/ca.pem',
      SERVICE_NODE_DIST_URL: `${this.setup.url}/node`,
      SERVICE_LOSSLESS_CLAW_SOURCE: `/root/e2e/pkgs/${path.basename(this.pkgs.losslessClaw)}`,
      SERVICE_MESH_APT_URL: `${this.apt.url}/tailscale/ubuntu`,
      SERVICE_AI_GATEWAY_URL: ai.url,
      SERVICE_MCP_URL: mcp.url,
      // The machine's extra CAs (see containerFiles) for npm, the way Node gets them on this host.
      ...(this.containerFiles().nodeExtraCa ? { NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' } : {}),
    };
  }

  /** Files every container of this stage gets before boot: CA, stand-in packages, proxy settings, the machine's extra CAs. */
  containerFiles(): { files: ContainerFile[]; extraCas: number; nodeExtraCa: boolean } {
    const proxy = this.egress.url;
    const files: ContainerFile[] = [
      { path: '/root/e2e/ca.pem', content: fs.readFileSync(this.ca.caFile), mode: 0o644 },
      { path: `/root/e2e/pkgs/${path.basename(this.pkgs.losslessClaw)}`, content: fs.readFileSync(this.pkgs.losslessClaw), mode: 0o644 },
      // The way out for apt and npm, as behind a corporate proxy (loopback stand-ins direct).
      {
        path: '/etc/apt/apt.conf.d/00e2e-egress-proxy',
        content: `// e2e harness: the container reaches Debian's mirror through the host's egress proxy\nAcquire::http::Proxy "${proxy}/";\nAcquire::https::Proxy "${proxy}/";\nAcquire::http::Proxy::127.0.0.1 "DIRECT";\nAcquire::https::Proxy::127.0.0.1 "DIRECT";\n`,
        mode: 0o644,
      },
      { path: '/root/.npmrc', content: `# e2e harness: npm reaches the registry through the host's egress proxy\nproxy=${proxy}/\nhttps-proxy=${proxy}/\nnoproxy=127.0.0.1,localhost\nregistry=${npmRegistry()}\n`, mode: 0o600 },
    ];
    // The machine's own extra trust anchors (e.g. a TLS-inspecting egress proxy's CA in
    // /usr/local/share/ca-certificates) go into the container too, and Node gets them the
    // way it does on this host (NODE_EXTRA_CA_CERTS), so npm reaches the registry from inside.
    const localCaDir = '/usr/local/share/ca-certificates';
    const localCas = fs.existsSync(localCaDir) ? fs.readdirSync(localCaDir).filter((f) => f.endsWith('.crt')) : [];
    for (const f of localCas) files.push({ path: `${localCaDir}/${f}`, content: fs.readFileSync(path.join(localCaDir, f)), mode: 0o644 });
    return { files, extraCas: localCas.length, nodeExtraCa: localCas.length > 0 && Boolean(process.env.NODE_EXTRA_CA_CERTS) };
  }

  async close(): Promise<void> {
    for (const { name, close } of this.closers.reverse()) await close().catch((error: Error) => log(`teardown of ${name}: ${error.message}`));
    this.closers = [];
    fs.rmSync(this.work, { recursive: true, force: true });
  }
}

/** The npm registry this machine's npm uses (read at run time; never written in the repository). */
export function npmRegistry(): string {
  const out = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', env: { ...process.env, PATH: hostPath() }, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  return out.endsWith('/') ? out : `${out}/`;
}

function npmRegistryHost(): string {
  return new URL(npmRegistry()).hostname;
}

/**
 * One server of the e2e: a booted container with its own network, the forwarders into it,
 * its stand-ins. Made by World (the scenario's one server) and by the fleet.
 */
export interface BootedServer {
  container: Container;
  net?: NetSlot;
  forwarder?: Forwarder;
  bootMs: number;
  rootfsMs: number;
}

export async function bootServer(stage: Stage, options: WorldOptions & { files: ContainerFile[]; forwardUrls: string[] }): Promise<BootedServer> {
  const suite = options.suite ?? stage.suite;
  const rootfs = await ensureRootfs({ suite, extra: options.extraPackages }, log);
  log(rootfs.cached ? `root filesystem from cache: ${path.basename(rootfs.tarball)}` : `root filesystem made in ${seconds(rootfs.ms)} (cached now)`);
  const binds: Array<[string, string]> = [];
  if (options.downloadCaches ?? process.env.E2E_DOWNLOAD_CACHE !== '0') {
    // Download caches shared between runs (a fresh CI machine starts with them empty).
    // apt's archive folder is per suite and server (apt locks it: two containers running at
    // once must not share it); npm's cache is safe to share.
    for (const [name, inside] of [[`apt-archives-${suite}-${options.hostname ?? 'srv-e2e'}`, '/var/cache/apt/archives'], ['npm-cache', '/root/.npm']] as const) {
      const dir = path.join(E2E_CACHE, name);
      fs.mkdirSync(dir, { recursive: true });
      binds.push([dir, inside]);
    }
  }
  const net = options.hostNetwork ? undefined : NetSlot.create();
  const t = Date.now();
  let container: Container | undefined;
  let forwarder: Forwarder | undefined;
  try {
    const rootFiles = [...options.files];
    // The container's apt sources (written by debootstrap) name the mirror the proxy lets through.
    if (net) {
      forwarder = new Forwarder(net.path, path.join(stage.work, `fwd-${net.index}`));
      await forwarder.addUrls(stage.egress.url, ...options.forwardUrls);
    }
    container = await Container.boot({ tarball: rootfs.tarball, hostname: options.hostname ?? 'srv-e2e', binds, net, log, files: rootFiles, waitFor: options.waitFor, cgroup: options.cgroup });
    const sources = [container.hostPath('/etc/apt/sources.list'), ...listDir(container.hostPath('/etc/apt/sources.list.d'))];
    for (const file of sources) for (const host of aptSourceHosts(readOr(file))) stage.egress.allow(host);
    return { container, net, forwarder, bootMs: Date.now() - t, rootfsMs: rootfs.cached ? 0 : rootfs.ms };
  } catch (error) {
    await container?.destroy().catch(() => undefined);
    await forwarder?.close().catch(() => undefined);
    net?.destroy();
    throw error;
  }
}

/**
 * E2E_KEEP=1 for one server: hands its container record and network slot over to its
 * systemd-nspawn (so later runs on this machine leave them alone while it is up) and
 * returns what to print: how to enter it, and the commands (as
 * root) that stop it and remove everything it holds on the host: systemd-nspawn ended
 * with SIGTERM (an orderly poweroff; SIGTERM to the container's init only makes systemd
 * re-execute itself), the loop-mounted root image unmounted and its folder removed, the
 * network namespace and veth pair deleted and the slot freed. The stand-ins (AI gateway,
 * MCP, setup server) end with the harness, so the kept server no longer reaches them.
 */
export function keepServer(server: BootedServer): string[] {
  const c = server.container;
  c.keep();
  server.net?.handOver(c.nspawnPid);
  const commands = [...c.stopCommands(), ...(server.net?.removeCommands() ?? [])];
  return [
    `E2E_KEEP=1: ${c.hostname} stays up (systemd-nspawn pid ${c.nspawnPid}, init pid ${c.initPid}, root ${c.root}${server.net ? `, address ${server.net.address}` : ''})`,
    `  enter it:  nsenter -t ${c.initPid} -a bash`,
    `  stop it and remove what it holds (as root, in this order):`,
    ...commands.map((line) => `    ${line}`),
    `  (later e2e runs leave it alone while it is up; once it is stopped they remove what is left)`,
  ];
}

export async function shutdownServer(server: BootedServer): Promise<void> {
  await server.container.destroy();
  await server.forwarder?.close();
  server.net?.destroy();
}

function listDir(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => path.join(dir, f)) : [];
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Where channelPost() sends its requests: the container of the last World opened. */
let channelTarget: { host: string; client: (n: number) => string } = { host: '127.0.0.1', client: (n) => `127.0.0.${n}` };

export class World {
  readonly suite: Suite;
  secrets: Secrets;
  stage: Stage;
  container!: Container;
  server!: BootedServer;
  ai!: AiGateway;
  mcp!: McpServer;
  argv: ArgvWatch;
  timings: Record<string, number> = {};
  notes: string[] = [];
  private closers: Array<{ name: string; close: () => Promise<void> }> = [];

  constructor(readonly options: WorldOptions = {}) {
    this.suite = options.suite ?? suiteFromEnv();
    this.stage = new Stage(this.suite);
    const hex = (n: number) => randomBytes(n).toString('hex');
    this.secrets = {
      apiKey: `pkt_e2e_${hex(16)}`,
      meshAuthKey: `tskey-auth-e2e${hex(12)}`,
      mcpToken: `mcp_e2e_${hex(16)}`,
    };
    this.argv = new ArgvWatch(
      () => this.secrets,
      () => [process.pid, this.container?.initPid ?? 0],
    );
  }

  /** The run's work folder (removed by close()). */
  get work(): string {
    return this.stage.work;
  }

  get setup(): StaticServer {
    return this.stage.setup;
  }

  get apt(): Stage['apt'] {
    return this.stage.apt;
  }

  /** "Debian 12 (bookworm)" */
  get release(): string {
    return releaseName(this.suite);
  }

  /** Builds and serves the artifacts, starts the stand-ins, boots the container. */
  async open(): Promise<void> {
    if (this.options.hostNetwork) {
      const busy = hostPortHolders([GATEWAY_PORT, CHANNEL_PORT]);
      if (busy.length > 0) throw new Error(`port(s) ${busy.join(', ')} are in use on this machine; the container shares its network, so the e2e needs them free`);
    }
    this.closers.push({ name: 'stage', close: () => this.stage.close() });
    await this.stage.open();
    this.timings.artifactsMs = this.stage.timings.artifactsMs!;

    this.ai = await startAiGateway(() => this.secrets.apiKey!);
    this.closers.push({ name: 'ai', close: () => this.ai.close() });
    this.mcp = await startMcp(() => this.secrets.mcpToken!);
    this.closers.push({ name: 'mcp', close: () => this.mcp.close() });

    const sources = this.stage.sources(this.ai, this.mcp);
    const answers: Record<string, string> = {
      SERVICE_CUSTOMER_NAME: CUSTOMER,
      SERVICE_API_KEY: this.secrets.apiKey!,
      SERVICE_MESH_AUTH_KEY: this.secrets.meshAuthKey!,
      SERVICE_MCP_TOKEN: this.secrets.mcpToken!,
    };
    const common = this.stage.containerFiles();
    if (common.nodeExtraCa) {
      this.notes.push(`the machine's extra CA certificates (${common.extraCas} in /usr/local/share/ca-certificates) are trusted in the container too`);
    }
    const downloadCaches = this.options.downloadCaches ?? process.env.E2E_DOWNLOAD_CACHE !== '0';
    this.notes.push(downloadCaches ? `download caches (apt-archives-${this.suite}-${this.options.hostname ?? 'srv-e2e'}, npm-cache): bound` : 'download caches: off (E2E_DOWNLOAD_CACHE=0)');

    this.server = await bootServer(this.stage, {
      ...this.options,
      suite: this.suite,
      hostname: this.options.hostname ?? 'srv-e2e',
      downloadCaches,
      forwardUrls: [this.setup.url, this.apt.url, this.ai.url, this.mcp.url],
      files: [
        ...common.files,
        { path: '/root/e2e/sources.env', content: envFile(sources), mode: 0o600 },
        { path: '/root/e2e/answers.env', content: envFile(answers), mode: 0o600 },
        ...(this.options.files ?? []),
      ],
    });
    this.container = this.server.container;
    this.closers.push({ name: 'container', close: () => shutdownServer(this.server) });
    if (common.extraCas > 0) await this.container.ok('update-ca-certificates >/dev/null 2>&1', { timeoutMs: 60_000 });
    this.timings.rootfsMs = this.server.rootfsMs;
    this.timings.bootMs = this.server.bootMs;
    const net = this.server.net;
    if (net) channelTarget = { host: net.address, client: (n) => net.clientAddress(n) };
    log(`${this.release} container booted in ${seconds(this.timings.bootMs)} (init pid ${this.container.initPid}, root ${this.container.root}${net ? `, network ${net.netns} ${net.address}` : ''})`);
    this.argv.start();
  }

  /** Makes a host loopback service (a stand-in a module starts) reachable at the same URL inside. */
  async forward(url: string): Promise<void> {
    await this.server.forwarder?.addUrls(url);
  }

  /** The container's address as the host reaches it (127.0.0.1 when it shares the host's network). */
  get address(): string {
    return this.server.net?.address ?? '127.0.0.1';
  }

  /** What this suite stands in for (docs/e2e.md): the versions of the parts the deployment depends on. */
  async platform(): Promise<string> {
    const r = await this.container.sh(
      `. /etc/os-release; printf '%s: ' "$PRETTY_NAME"
printf 'nginx %s, ' "$(nginx -v 2>&1 | sed -n 's|.*nginx/||p' | grep . || echo none)"
printf 'OpenSSL %s, ' "$(openssl version | cut -d' ' -f2)"
printf 'systemd %s, ' "$(systemctl --version | sed -n '1s/^systemd \\([0-9]*\\).*/\\1/p')"
printf 'glibc %s, ' "$(ldd --version | sed -n '1s/.* //p')"
printf 'apt %s, ' "$(apt-get --version | sed -n '1s/^apt \\([^ ]*\\).*/\\1/p')"
printf 'Python %s' "$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null || echo none)"`,
      { timeoutMs: 30_000 },
    );
    return r.stdout.trim();
  }

  async close(): Promise<void> {
    this.argv.stop();
    if (this.container?.initPid) {
      const platform = await this.platform().catch(() => '');
      if (platform) this.notes.push(`platform: ${platform}`);
    }
    const keep = process.env.E2E_KEEP === '1';
    for (const { name, close } of this.closers.reverse()) {
      if (keep && name === 'container') {
        await this.server.forwarder?.close().catch(() => undefined);
        for (const line of keepServer(this.server)) log(line);
        continue;
      }
      await close().catch((error: Error) => log(`teardown of ${name}: ${error.message}`));
    }
    for (const note of this.stage.notes) this.notes.push(note);
    this.closers = [];
  }

  /** Replaces every secret value in text by its masked form (for failure messages). */
  masked(text: string): string {
    let out = text;
    for (const [name, value] of Object.entries(this.secrets)) if (value.length >= 8) out = out.split(value).join(mask(name, value));
    return out;
  }

  /**
   * `curl -fsSL <setup>/install.sh | bash -s -- ARGS`, as root inside the container, the
   * answers sourced from 0600 files (never argv). `extra` adds non-secret variables.
   */
  async installSh(args: string, extra: Record<string, string> = {}, timeoutMs = 15 * 60_000): Promise<InstallRun> {
    const script = `set -o pipefail; set -a; . /root/e2e/sources.env; . /root/e2e/answers.env; set +a
curl -fsSL --cacert /root/e2e/ca.pem "$SERVICE_SETUP_URL/install.sh" | bash -s -- ${args}`;
    const result = await this.container.sh(script, { timeoutMs, env: extra });
    return { exitCode: result.exitCode, wallMs: result.ms, json: parseJson(result.stdout), stdout: result.stdout, stderr: result.stderr };
  }

  /** `service-deploy ARGS` inside the container with the e2e sources in its environment. */
  async deploy(args: string, options: { answers?: boolean; timeoutMs?: number } = {}): Promise<ShResult & { json: any }> {
    const script = `set -a; . /root/e2e/sources.env; ${options.answers ? '. /root/e2e/answers.env; ' : ''}set +a; service-deploy ${args}`;
    const result = await this.container.sh(script, { timeoutMs: options.timeoutMs ?? 5 * 60_000 });
    return { ...result, json: parseJson(result.stdout) };
  }

  async userUnit(property: 'MainPID' | 'ActiveState'): Promise<string> {
    return (await this.container.ok(`${USER_ENV} systemctl --user show --property=${property} --value ${GATEWAY_UNIT}`)).trim();
  }

  /** KEY=value pairs of the container's channel.env (read on the host, never passed as arguments). */
  channelEnv(): Record<string, string> {
    const text = fs.readFileSync(this.container.hostPath('/root/.openclaw/channel.env'), 'utf8');
    const out: Record<string, string> = {};
    for (const line of text.split('\n')) {
      const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
      if (m) out[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1');
    }
    return out;
  }

  runtimeConfig(): any {
    return JSON.parse(fs.readFileSync(this.container.hostPath('/root/.openclaw/openclaw.json'), 'utf8'));
  }

  /** Logs that explain a failure, secrets masked. */
  async diagnostics(): Promise<string> {
    if (!this.container?.initPid) return '';
    return this.masked(await serverDiagnostics(this.container));
  }
}

/**
 * A booted server's logs that explain a failure, raw (callers mask them): the install
 * log's tail, then "--- gateway journal" (test/e2e/steps.ts failureDetail picks it): the
 * gateway's journal with systemd's own lines about it (--user-unit=: a volatile journal
 * keeps no per-user files for `--user`) and its status, then nginx and failed units.
 */
export async function serverDiagnostics(container: Container): Promise<string> {
  const r = await container.sh(
    `tail -n 60 /var/log/service-deploy/install.log 2>&1; echo '--- gateway journal'; journalctl --user-unit=${GATEWAY_UNIT} -n 60 --no-pager 2>&1; ${USER_ENV} systemctl --user status --no-pager -l ${GATEWAY_UNIT} 2>&1 | head -12; echo '--- nginx'; tail -n 20 /var/log/nginx/error.log 2>&1; systemctl --failed --no-legend 2>&1`,
    { timeoutMs: 30_000 },
  );
  return `${r.stdout}${r.stderr}`.slice(-8000);
}

/** KEY='value' lines for `set -a; . FILE` (values single-quoted). */
export function envFile(vars: Record<string, string>): string {
  return Object.entries(vars).map(([k, v]) => `${k}='${v.replace(/'/g, `'\\''`)}'`).join('\n') + '\n';
}

/** The JSON document in a command's stdout (the last top-level object), or undefined. */
export function parseJson(stdout: string): any {
  const text = stdout.trim();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    const start = text.lastIndexOf('\n{');
    if (start >= 0) {
      try {
        return JSON.parse(text.slice(start + 1));
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}

/**
 * The source address for a request from the host: "127.0.0.N" names client N, which is
 * that loopback address when the container shares the host's network, and the N-th
 * client address of the container's veth otherwise (each its own client for nginx).
 */
export function clientAddress(localAddress: string | undefined): string | undefined {
  const m = localAddress === undefined ? undefined : /^127\.0\.0\.(\d+)$/.exec(localAddress);
  return m ? channelTarget.client(Number(m[1])) : localAddress;
}

/**
 * One POST to the channel port from the host, with or without the knock, from a chosen
 * loopback source address (each address is its own client for nginx's limits).
 * Resolves with the status, or with the error when the connection is dropped.
 */
export function channelPost(options: { knock?: string; localAddress?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }): Promise<{ status?: number; body?: string; headers?: Record<string, string | string[] | undefined>; error?: string }> {
  return new Promise((resolve) => {
    const body = options.body ?? '{"message":"hi"}';
    const req = https.request(
      {
        host: channelTarget.host,
        port: CHANNEL_PORT,
        path: '/service-channel/chat',
        method: 'POST',
        rejectUnauthorized: false,
        agent: false,
        localAddress: clientAddress(options.localAddress),
        timeout: options.timeoutMs ?? 15_000,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(options.knock !== undefined ? { 'x-service-gateway': options.knock } : {}),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode, body: text, headers: res.headers }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    req.end(body);
  });
}

export const DOWNLOAD_STEPS = ['system-packages', 'node-runtime', 'agent-runtime', 'memory', 'context-engine', 'browser'];

/** Splits an install's per-step durations into apt/npm downloads and our own work. */
export function timeSplit(run: InstallRun): { downloadsMs: number; oursMs: number; binaryMs: number; bootstrapMs: number; detail: string } {
  const steps: Array<{ id: string; durationMs: number }> = run.json?.steps ?? [];
  const downloads = steps.filter((s) => DOWNLOAD_STEPS.includes(s.id));
  const ours = steps.filter((s) => !DOWNLOAD_STEPS.includes(s.id));
  const sum = (list: typeof steps) => list.reduce((a, s) => a + (s.durationMs ?? 0), 0);
  const binaryMs = run.json?.durationMs ?? sum(steps);
  const downloadsMs = sum(downloads);
  const fmt = (list: typeof steps) => list.filter((s) => s.durationMs >= 50).sort((a, b) => b.durationMs - a.durationMs).map((s) => `${s.id} ${(s.durationMs / 1000).toFixed(1)}`).join(', ');
  return {
    downloadsMs,
    // Whatever of the binary's run is not an apt/npm step is ours (steps + pipeline overhead).
    oursMs: binaryMs - downloadsMs,
    binaryMs,
    // install.sh: fetch the script, SHA256SUMS and the binary, verify, start it.
    bootstrapMs: Math.max(0, run.wallMs - binaryMs),
    detail: `downloads: ${fmt(downloads)} | ours: ${fmt(ours)}`,
  };
}

/**
 * An install's timeline for the report: each step's start, end and duration from its
 * --json result, the critical path (the longest chain of the steps' needs, by these
 * durations), and the Gantt chart written next to the report as
 * E2E_CACHE/install-timeline-<name>.svg (src/pipeline/timeline.ts; docs/install.md,
 * "Where the time goes").
 */
export function recordTimeline(result: { steps?: TimedStep[] }, name: string, title: string): { svg: string; steps: TimedStep[]; criticalPath: CriticalPath } {
  const steps = (result.steps ?? []).map(({ id, status, startMs, endMs, durationMs }) => ({ id, status, startMs, endMs, durationMs }));
  const drawn = installTimeline({ steps }, installSteps(), title);
  fs.mkdirSync(E2E_CACHE, { recursive: true });
  const svg = path.join(E2E_CACHE, `install-timeline-${name}.svg`);
  fs.writeFileSync(svg, drawn.svg);
  log(`timeline: ${svg}; critical path ${formatMs(drawn.critical.ms)}: ${drawn.critical.ids.join(' -> ')}`);
  return { svg, steps, criticalPath: drawn.critical };
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
