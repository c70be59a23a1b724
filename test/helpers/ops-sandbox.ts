import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { createHost, type Host } from '../../src/host/index.js';
import { LAYOUT } from '../../src/layout.js';
import { readManifest, restampRecorded } from '../../src/pipeline/manifest.js';
import { REPO } from './binary.js';
import { budget, waitUntil } from './budget.js';
import { FIRST_INSTALL, makeSandbox, SECRETS, serviceStandins, type Sandbox } from './sandbox.js';
import { tempDir } from './tmp.js';

export const OPS_ANSWERS = {
  customerName: 'Acme Dental GmbH',
  apiKey: SECRETS.apiKey,
  modelId: 'test-model-1',
  meshHostname: 'openclaw-acme-dental-gmbh',
  mcpToken: SECRETS.mcpToken,
};
/** The portal's channel secrets the healthy server was installed with (the edge secret is the install's own). */
export const CHANNEL = {
  token: 'chan_tok_Zq8v3Xy7Lm2Np5Rs9Tu4Wv6Xy',
  knock: 'knock_Hj3Kl5Mn7Pq9Rs2Tu4Vw6Xy8Z',
};

export interface OpsSandbox extends Sandbox {
  host: Host;
  env(extra?: Record<string, string>): Record<string, string>;
  write(p: string, content: string, mode?: number): void;
  /** Runs a stand-in command the way our code would (user manager env set). */
  systemctl(...args: string[]): Promise<void>;
  gatewayPid(): number;
  run(args: string[], extraEnv?: Record<string, string>): ReturnType<typeof execa>;
}

interface Template {
  root: string;
  state: string;
}

/** Where a run keeps its healthy servers, and the service stand-ins they were installed against (their URLs are in them). */
export interface HealthyServers {
  dir: string;
  mcpUrl: string;
  aiGatewayUrl: string;
}

/** A run's folder and service stand-ins: test/global-setup.ts makes them for a test run, a script (the bench) for itself. */
export async function startHealthyServers(): Promise<{ servers: HealthyServers; close(): Promise<void> }> {
  const dir = tempDir('sd-healthy-');
  const services = await serviceStandins();
  return {
    servers: { dir, mcpUrl: services.mcp.url, aiGatewayUrl: services.aiGateway.url },
    close: async () => {
      await services.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The test run's (test/global-setup.ts), unless given. */
async function runServers(given: HealthyServers | undefined): Promise<HealthyServers> {
  return given ?? (await import('vitest')).inject('healthyServers');
}

/** Bigger than this, a file of the template is linked into a copy, not copied (our 100 MB binary; no test changes it in place). */
const LINK_ABOVE = 8 * 1024 * 1024;
/** Stand-in state a copy starts without: what the template's own run left (calls, environments, its gateway process). */
const FRESH_STATE = new Set(['calls.log', 'environ', 'user-openclaw-gateway.service.pid', 'user-openclaw-gateway.service.realpid']);

/**
 * The healthy server of this test run, with the channel or without: made by the
 * install itself (`install --channel` with the stand-ins) the first time a test asks
 * for it, in the run's folder (test/global-setup.ts), by whichever worker comes first
 * (the others wait for it), then kept as it is for every copy.
 */
async function template(channel: boolean, servers: HealthyServers): Promise<Template> {
  const { dir } = servers;
  const done = path.join(dir, channel ? 'channel' : 'plain');
  const failed = `${done}.failed`;
  try {
    fs.mkdirSync(`${done}.lock`);
  } catch {
    await waitUntil(`the healthy server ${done}`, () => fs.existsSync(done) || fs.existsSync(failed), { budgetMs: 600_000, intervalMs: 200 });
    if (fs.existsSync(failed)) throw new Error(fs.readFileSync(failed, 'utf8'));
    return { root: path.join(done, 'root'), state: path.join(done, 'state') };
  }
  try {
    const built = await install(channel, servers);
    const staging = `${done}.building`;
    fs.mkdirSync(staging);
    fs.renameSync(built.root, path.join(staging, 'root'));
    fs.renameSync(built.state, path.join(staging, 'state'));
    fs.renameSync(staging, done);
    const made = { root: path.join(done, 'root'), state: path.join(done, 'state') };
    relocate(built.root, made.root);
    return made;
  } catch (error) {
    fs.writeFileSync(failed, String((error as Error).stack ?? error));
    throw error;
  }
}

/** The install on a fresh sandbox, against the run's service stand-ins; what a live server adds (listeners) set after. */
async function install(channel: boolean, { mcpUrl, aiGatewayUrl }: HealthyServers): Promise<Template> {
  const sb = await makeSandbox();
  try {
    // A running nginx listens on the channel port (the stand-in systemctl then says so to ss).
    fs.writeFileSync(path.join(sb.state, 'nginx-listens'), '');
    const args = [...FIRST_INSTALL.args, '--model', OPS_ANSWERS.modelId, ...(channel ? ['--channel'] : [])];
    const run = await sb.install(args, {
      ...FIRST_INSTALL.env,
      SERVICE_MCP_URL: mcpUrl,
      SERVICE_AI_GATEWAY_URL: aiGatewayUrl,
      SERVICE_CHANNEL_TOKEN: CHANNEL.token,
      SERVICE_CHANNEL_KNOCK: CHANNEL.knock,
    });
    if (run.exitCode !== 0) throw new Error(`the healthy server's install failed (exit ${run.exitCode}):\n${String(run.stderr).slice(-3000)}`);
    // The gateway listens on loopback (the stand-in gateway is a sleep: ss is told).
    const ss = path.join(sb.state, 'ss-output');
    const listeners = fs.existsSync(ss) ? fs.readFileSync(ss, 'utf8') : '';
    fs.writeFileSync(ss, `LISTEN 0 511 127.0.0.1:18789 0.0.0.0:* users:(("openclaw-gatewa",pid=4242,fd=22))\n${listeners}`);
    return { root: sb.root, state: sb.state };
  } finally {
    await sb.close();
  }
}

/** QMD's collection names the workspace by its real path: the one of the root it is in now. */
function relocate(from: string, to: string): void {
  const collections = path.join(to, LAYOUT.qmdCollectionsFile);
  fs.writeFileSync(collections, fs.readFileSync(collections, 'utf8').replaceAll(from, to));
}

/** Copies a template folder into `to`: files copied (big ones linked), links as they are, modes and times kept. */
function copyTree(from: string, to: string, skip: (name: string) => boolean = () => false): void {
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (skip(entry.name)) continue;
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    const info = fs.lstatSync(source);
    fs.rmSync(target, { recursive: true, force: true });
    if (entry.isDirectory()) {
      fs.mkdirSync(target);
      copyTree(source, target);
    } else if (entry.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(source), target);
    else if (info.size > LINK_ABOVE) fs.linkSync(source, target);
    else fs.copyFileSync(source, target);
    if (!entry.isSymbolicLink()) {
      fs.chmodSync(target, info.mode & 0o7777);
      fs.utimesSync(target, info.atime, info.mtime);
    }
  }
}

/**
 * A deployed, healthy server in a sandbox: a copy of the one the install made for this
 * test run (see template), with stand-ins of its own: Node + OpenClaw at the pinned
 * versions, the gateway unit and a real gateway process started with its drop-in's
 * variables, the guard and its cron, the channel (channel.env, drop-in, TLS, nginx site,
 * connection limits) unless `channel: false`, the mesh up and serving, QMD's index and
 * services, listeners on 18789 (loopback) and 18790, and a recent guard run in syslog.
 */
export async function makeHealthySandbox(options: { channel?: boolean; servers?: HealthyServers } = {}): Promise<OpsSandbox> {
  const servers = await runServers(options.servers);
  const made = await template(options.channel ?? true, servers);
  const { mcpUrl, aiGatewayUrl } = servers;
  const sb = await makeSandbox();
  copyTree(made.root, sb.root);
  copyTree(made.state, sb.state, (name) => FRESH_STATE.has(name));
  fs.mkdirSync(path.join(sb.state, 'environ'), { recursive: true });
  relocate(made.root, sb.root);

  const baseEnv = sb.env;
  // The service URLs the install recorded (answers.json, openclaw.json): the run's stand-ins.
  const env = (extra: Record<string, string> = {}) => baseEnv({ SERVICE_HEALTH_TIMEOUT_MS: '2000', SERVICE_MCP_URL: mcpUrl, SERVICE_AI_GATEWAY_URL: aiGatewayUrl, ...extra });
  const write = (p: string, content: string, mode = 0o644) => {
    const real = path.join(sb.root, p);
    fs.mkdirSync(path.dirname(real), { recursive: true });
    fs.writeFileSync(real, content);
    fs.chmodSync(real, mode);
  };
  const state = (name: string, content = '') => fs.writeFileSync(path.join(sb.state, name), content);
  // A live server: its gateway a real process, the guard's last run ten minutes ago, the
  // memory index refreshed by its timer just now (however long ago the template was made).
  state('gateway-process');
  state('syslog', `${Date.now() * 1000 - 600_000_000}\x1fservice-guard\x1fok: nothing to restore\n`);
  const now = new Date();
  fs.utimesSync(path.join(sb.root, LAYOUT.qmdRefreshStamp), now, now);

  const userEnv = { XDG_RUNTIME_DIR: '/run/user/0' };
  const ops: OpsSandbox = Object.assign(sb, {
    host: createHost({ env: env(), quiet: true }),
    env,
    write,
    systemctl: async (...args: string[]) => {
      await execa('systemctl', args, { env: { ...env(), ...userEnv }, extendEnv: false });
    },
    gatewayPid: () => Number(fs.readFileSync(path.join(sb.state, 'user-openclaw-gateway.service.pid'), 'utf8')),
    run: (args: string[], extraEnv: Record<string, string> = {}) =>
      execa(path.join(REPO, 'dist/service-deploy'), args, { env: env(extraEnv), extendEnv: false, reject: false, timeout: budget(120_000) }),
  });
  // Copied files are new inodes: the manifest's fingerprints are taken again (as after a
  // chmod of verified files), so doctor does not re-read a big file it would not on the server.
  const { entries } = await readManifest(ops.host);
  await restampRecorded(ops.host, [...(entries?.keys() ?? [])]);
  await ops.systemctl('--user', 'daemon-reload');
  await ops.systemctl('--user', 'restart', LAYOUT.gatewayUnit);
  sb.clearCalls();
  const close = sb.close;
  ops.close = async () => {
    const real = path.join(sb.state, 'user-openclaw-gateway.service.realpid');
    if (fs.existsSync(real)) {
      try {
        process.kill(Number(fs.readFileSync(real, 'utf8')));
      } catch {
        // already gone
      }
    }
    await close();
    // Each copy is as big as a server: gone with its test, not at the end of the file.
    for (const dir of [sb.root, sb.state]) fs.rmSync(dir, { recursive: true, force: true });
  };
  return ops;
}
