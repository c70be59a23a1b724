// The e2e world: artifacts, loopback stand-ins and a booted container, with helpers the
// scenario (server.e2e.ts) uses. Everything is torn down by close(), also on failure.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { makeTestCa, serveDirectory, type StaticServer } from '../helpers/https-server.js';
import { E2E_CACHE, meshAptRepo, nodeDist, setupDir, standinPackages } from './artifacts.js';
import { Container, SUITE, ensureRootfs, hostPortHolders, type ShResult } from './container.js';
import { ArgvWatch, mask, type Secrets } from './secrets.js';
import { startAiGateway, startMcp, serveHttp, type AiGateway, type McpServer } from './standins.js';

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

export class World {
  secrets: Secrets;
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-e2e-work-'));
  container!: Container;
  ai!: AiGateway;
  mcp!: McpServer;
  setup!: StaticServer;
  apt!: { url: string; requests: string[]; close(): Promise<void> };
  argv: ArgvWatch;
  timings: Record<string, number> = {};
  notes: string[] = [];
  private closers: Array<{ name: string; close: () => Promise<void> }> = [];

  constructor() {
    const hex = (n: number) => randomBytes(n).toString('hex');
    this.secrets = {
      apiKey: `pkt_e2e_${hex(16)}`,
      meshAuthKey: `tskey-auth-e2e${hex(12)}`,
      mcpToken: `mcp_e2e_${hex(16)}`,
    };
    this.argv = new ArgvWatch(() => this.secrets);
  }

  /** Builds and serves the artifacts, starts the stand-ins, boots the container. */
  async open(): Promise<void> {
    const busy = hostPortHolders([GATEWAY_PORT, CHANNEL_PORT]);
    if (busy.length > 0) throw new Error(`port(s) ${busy.join(', ')} are in use on this machine; the container shares its loopback, so the e2e needs them free`);

    let t = Date.now();
    const rootfs = await ensureRootfs(log);
    this.timings.rootfsMs = rootfs.cached ? 0 : rootfs.ms;
    log(rootfs.cached ? `root filesystem from cache: ${path.basename(rootfs.tarball)}` : `debootstrap took ${(rootfs.ms / 1000).toFixed(1)} s (cached now)`);

    t = Date.now();
    const node = nodeDist();
    const setup = setupDir(this.work);
    fs.symlinkSync(node, path.join(setup, 'node'));
    const pkgs = standinPackages(this.work);
    const aptRoot = meshAptRepo(this.work, SUITE);
    const ca = makeTestCa();
    this.timings.artifactsMs = Date.now() - t;

    this.setup = await serveDirectory(setup, ca);
    this.closers.push({ name: 'setup', close: () => this.setup.close() });
    this.apt = await serveHttp(aptRoot);
    this.closers.push({ name: 'apt', close: () => this.apt.close() });
    this.ai = await startAiGateway(() => this.secrets.apiKey!);
    this.closers.push({ name: 'ai', close: () => this.ai.close() });
    this.mcp = await startMcp(() => this.secrets.mcpToken!);
    this.closers.push({ name: 'mcp', close: () => this.mcp.close() });

    const sources: Record<string, string> = {
      SERVICE_ALLOW_UNSUPPORTED_OS: '1',
      SERVICE_SETUP_URL: this.setup.url,
      SERVICE_CA_BUNDLE: '/root/e2e/ca.pem',
      SERVICE_DOWNLOAD_CA_FILE: '/root/e2e/ca.pem',
      SERVICE_NODE_DIST_URL: `${this.setup.url}/node`,
      SERVICE_LOSSLESS_CLAW_SOURCE: `/root/e2e/pkgs/${path.basename(pkgs.losslessClaw)}`,
      SERVICE_MESH_APT_URL: `${this.apt.url}/tailscale/ubuntu`,
      SERVICE_AI_GATEWAY_URL: this.ai.url,
      SERVICE_MCP_URL: this.mcp.url,
    };
    const answers: Record<string, string> = {
      SERVICE_CUSTOMER_NAME: CUSTOMER,
      SERVICE_API_KEY: this.secrets.apiKey!,
      SERVICE_MESH_AUTH_KEY: this.secrets.meshAuthKey!,
      SERVICE_MCP_TOKEN: this.secrets.mcpToken!,
    };
    // The machine's own extra trust anchors (e.g. a TLS-inspecting egress proxy's CA in
    // /usr/local/share/ca-certificates) go into the container too, and Node gets them the
    // way it does on this host (NODE_EXTRA_CA_CERTS), so npm reaches the registry from inside.
    const localCaDir = '/usr/local/share/ca-certificates';
    const localCas = fs.existsSync(localCaDir) ? fs.readdirSync(localCaDir).filter((f) => f.endsWith('.crt')) : [];
    if (localCas.length > 0 && process.env.NODE_EXTRA_CA_CERTS) {
      sources.NODE_EXTRA_CA_CERTS = '/etc/ssl/certs/ca-certificates.crt';
      this.notes.push(`the machine's extra CA certificates (${localCas.length} in ${localCaDir}) are trusted in the container too`);
    }
    const envFile = (vars: Record<string, string>) => Object.entries(vars).map(([k, v]) => `${k}='${v.replace(/'/g, `'\\''`)}'`).join('\n') + '\n';

    const binds: Array<[string, string]> = [];
    if (process.env.E2E_DOWNLOAD_CACHE !== '0') {
      // Download caches shared between runs (a fresh CI machine starts with them empty).
      for (const [name, inside] of [['apt-archives', '/var/cache/apt/archives'], ['npm-cache', '/root/.npm']] as const) {
        const dir = path.join(E2E_CACHE, name);
        fs.mkdirSync(dir, { recursive: true });
        binds.push([dir, inside]);
      }
      const warm = fs.readdirSync(path.join(E2E_CACHE, 'apt-archives')).some((f) => f.endsWith('.deb'));
      this.notes.push(`download caches (.cache/e2e/apt-archives, npm-cache): ${warm ? 'warm' : 'cold'}`);
    } else this.notes.push('download caches: off (E2E_DOWNLOAD_CACHE=0)');

    t = Date.now();
    this.container = await Container.boot({
      tarball: rootfs.tarball,
      hostname: 'srv-e2e',
      binds,
      log,
      files: [
        { path: '/root/e2e/ca.pem', content: fs.readFileSync(ca.caFile), mode: 0o644 },
        { path: '/root/e2e/sources.env', content: envFile(sources), mode: 0o600 },
        { path: '/root/e2e/answers.env', content: envFile(answers), mode: 0o600 },
        { path: `/root/e2e/pkgs/${path.basename(pkgs.losslessClaw)}`, content: fs.readFileSync(pkgs.losslessClaw), mode: 0o644 },
        ...localCas.map((f) => ({ path: `${localCaDir}/${f}`, content: fs.readFileSync(path.join(localCaDir, f)), mode: 0o644 })),
      ],
    });
    if (localCas.length > 0) await this.container.ok('update-ca-certificates >/dev/null 2>&1', { timeoutMs: 60_000 });
    this.closers.push({ name: 'container', close: () => this.container.destroy() });
    this.timings.bootMs = Date.now() - t;
    log(`container booted in ${(this.timings.bootMs / 1000).toFixed(1)} s (init pid ${this.container.initPid}, root ${this.container.root})`);
    this.argv.start();
  }

  async close(): Promise<void> {
    this.argv.stop();
    const keep = process.env.E2E_KEEP === '1';
    for (const { name, close } of this.closers.reverse()) {
      if (keep && name === 'container') {
        log(`E2E_KEEP=1: the container stays up: nsenter -t ${this.container.initPid} -a bash; stop it with: kill ${this.container.initPid}`);
        continue;
      }
      await close().catch((error: Error) => log(`teardown of ${name}: ${error.message}`));
    }
    this.closers = [];
    fs.rmSync(this.work, { recursive: true, force: true });
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
    const r = await this.container.sh(
      `tail -n 60 /var/log/service-deploy/install.log 2>&1; echo '--- gateway journal'; ${USER_ENV} journalctl --user -u ${GATEWAY_UNIT} -n 60 --no-pager 2>&1; ${USER_ENV} systemctl --user status --no-pager -l ${GATEWAY_UNIT} 2>&1 | head -12; journalctl -n 40 --no-pager _SYSTEMD_USER_UNIT=${GATEWAY_UNIT} 2>&1; echo '--- nginx'; tail -n 20 /var/log/nginx/error.log 2>&1; systemctl --failed --no-legend 2>&1`,
      { timeoutMs: 30_000 },
    );
    return this.masked(`${r.stdout}${r.stderr}`).slice(-8000);
  }
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
 * One POST to the channel port from the host, with or without the knock, from a chosen
 * loopback source address (each address is its own client for nginx's limits).
 * Resolves with the status, or with the error when the connection is dropped.
 */
export function channelPost(options: { knock?: string; localAddress?: string; headers?: Record<string, string>; body?: string }): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    const body = options.body ?? '{"message":"hi"}';
    const req = https.request(
      {
        host: '127.0.0.1',
        port: CHANNEL_PORT,
        path: '/service-channel/chat',
        method: 'POST',
        rejectUnauthorized: false,
        agent: false,
        localAddress: options.localAddress,
        timeout: 15_000,
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
        res.on('end', () => resolve({ status: res.statusCode, body: text }));
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

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
