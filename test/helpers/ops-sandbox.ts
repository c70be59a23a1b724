import { execa, execaSync } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { PRODUCTION_SITE, renderNginxSite } from '../../src/channel/nginx.js';
import { loadComponents } from '../../src/components.js';
import { desiredRuntimeConfig, serializeRuntimeConfig } from '../../src/config/runtime-config.js';
import { runtimeSecretFiles } from '../../src/steps/runtime-secrets.js';
import { createHost, type Host } from '../../src/host/index.js';
import { LAYOUT } from '../../src/layout.js';
import { loadProfile } from '../../src/profile.js';
import { recordFromDisk } from '../../src/pipeline/manifest.js';
import { PLUGIN_PREFIX } from '../../src/runtime/openclaw.js';
import { openclawWrapper } from '../../src/steps/agent-runtime.js';
import { channelDropInContent, channelEnvContent, pluginFiles } from '../../src/steps/channel.js';
import { installWrites } from '../../src/steps/index.js';
import { recordedPaths } from '../../src/pipeline/writes.js';
import { firewallFiles } from '../../src/steps/channel-firewall.js';
import { gatewayUnitFile } from '../../src/steps/gateway-service.js';
import { nginxHardeningDropIn } from '../../src/steps/nginx-hardening.js';
import { guardCron, guardScript } from '../../src/steps/guard.js';
import { qmdMcpUnitFile } from '../../src/steps/memory-service.js';
import { SERVE_TARGET } from '../../src/steps/mesh-client.js';
import { REPO } from './binary.js';
import { budget } from './budget.js';
import { makeSandbox, SECRETS, type Sandbox } from './sandbox.js';
import { tempDir } from './tmp.js';

export const OPS_ANSWERS = {
  customerName: 'Acme Dental GmbH',
  apiKey: SECRETS.apiKey,
  modelId: 'test-model-1',
  meshHostname: 'openclaw-acme-dental-gmbh',
  mcpToken: SECRETS.mcpToken,
};
export const CHANNEL = {
  token: 'chan_tok_Zq8v3Xy7Lm2Np5Rs9Tu4Wv6Xy',
  knock: 'knock_Hj3Kl5Mn7Pq9Rs2Tu4Vw6Xy8Z',
  edge: 'edge_Bc4Df6Gh8Jk2Lm4Np6Qr8St0V',
};

const STANDINS = path.join(REPO, 'test/helpers/standins');
let tls: { cert: string; key: string } | undefined;

/** One RSA 4096 self-signed certificate per test process (making one takes seconds). */
export function testCertificate(): { cert: string; key: string } {
  if (tls) return tls;
  const dir = tempDir('sd-tls-');
  execaSync('openssl', ['req', '-x509', '-newkey', 'rsa:4096', '-nodes', '-sha256', '-days', '3653', '-subj', '/CN=openclaw-acme', '-keyout', `${dir}/k`, '-out', `${dir}/c`]);
  tls = { cert: fs.readFileSync(`${dir}/c`, 'utf8'), key: fs.readFileSync(`${dir}/k`, 'utf8') };
  return tls;
}

export interface OpsSandbox extends Sandbox {
  host: Host;
  env(extra?: Record<string, string>): Record<string, string>;
  write(p: string, content: string, mode?: number): void;
  /** Runs a stand-in command the way our code would (user manager env set). */
  systemctl(...args: string[]): Promise<void>;
  gatewayPid(): number;
  run(args: string[], extraEnv?: Record<string, string>): ReturnType<typeof execa>;
}

/**
 * A deployed, healthy server in a sandbox, written directly (fast; the install's own
 * output is checked against doctor in one integration test): answers, runtime config,
 * Node + OpenClaw stand-ins at the pinned versions, the gateway unit, linger, the guard
 * script and cron, the channel (channel.env, drop-in, TLS, nginx site), the mesh up
 * and serving, listeners on 18789 (loopback) and 18790, a recent guard run in syslog,
 * and a real gateway process started with the drop-in's variables.
 */
export async function makeHealthySandbox(options: { channel?: boolean } = {}): Promise<OpsSandbox> {
  const channel = options.channel ?? true;
  const sb = await makeSandbox();
  const baseEnv = sb.env;
  const env = (extra: Record<string, string> = {}) => baseEnv({ SERVICE_HEALTH_TIMEOUT_MS: '2000', ...extra });
  const write = (p: string, content: string, mode = 0o644) => {
    const real = path.join(sb.root, p);
    fs.mkdirSync(path.dirname(real), { recursive: true });
    fs.writeFileSync(real, content);
    fs.chmodSync(real, mode);
  };
  const profile = loadProfile(env());
  const components = loadComponents(env());
  write(LAYOUT.answersFile, `${JSON.stringify(OPS_ANSWERS, null, 2)}\n`, 0o600);
  const config = desiredRuntimeConfig(undefined, { answers: OPS_ANSWERS, profile, components, channel, browserExecutable: components.browser.ubuntu.executable });
  write(LAYOUT.runtimeConfig, serializeRuntimeConfig(config), 0o600);
  for (const file of runtimeSecretFiles(OPS_ANSWERS)) write(file.path, file.content, file.mode);
  fs.chmodSync(path.join(sb.root, LAYOUT.runtimeSecretsDir), 0o700);
  for (const f of ['node', 'openclaw', '_lib.sh']) write(`${LAYOUT.nodePrefix}/bin/${f}`, fs.readFileSync(path.join(STANDINS, f), 'utf8'), 0o755);
  // The install's stamp of the Node binary it ran and verified (steps/node-runtime.ts).
  const nodeStat = fs.statSync(path.join(sb.root, LAYOUT.nodePrefix, 'bin/node'), { bigint: true });
  write(LAYOUT.nodeStamp, JSON.stringify({ identity: [nodeStat.dev, nodeStat.ino, nodeStat.size, nodeStat.mtimeNs, nodeStat.ctimeNs].join(':'), version: components.node.version }), 0o600);
  write(`${LAYOUT.nodePrefix}/lib/node_modules/openclaw/package.json`, JSON.stringify({ name: 'openclaw', version: components.openclaw.version }));
  write(`${LAYOUT.nodePrefix}/lib/node_modules/openclaw/openclaw.mjs`, '');
  write(`${LAYOUT.qmdPrefix}/node_modules/${components.qmd.package}/package.json`, JSON.stringify({ name: components.qmd.package, version: components.qmd.version }));
  write(LAYOUT.qmdBin, '#!/bin/sh\nexit 0\n', 0o755);
  write(`${PLUGIN_PREFIX}/node_modules/${components.losslessClaw.package}/package.json`, JSON.stringify({ name: components.losslessClaw.package, version: components.losslessClaw.version }));
  write(openclawWrapper().path, openclawWrapper().content, openclawWrapper().mode);
  const unit = gatewayUnitFile();
  write(unit.path, unit.content, unit.mode);
  write(LAYOUT.lingerFile, '');
  for (const file of [guardScript(), guardCron(OPS_ANSWERS.meshHostname)]) write(file.path, file.content, file.mode);
  write(LAYOUT.binary, '#!/bin/sh\n', 0o755);
  // The packages the install added (a fresh server): nginx among them, so the nginx is
  // the install's, sandboxed (steps/nginx-hardening.ts), Debian's default site not enabled.
  write(LAYOUT.packagesFile, `${JSON.stringify({ packages: [...components.systemPackages].sort() }, null, 2)}\n`, 0o600);
  write(nginxHardeningDropIn().path, nginxHardeningDropIn().content, nginxHardeningDropIn().mode);
  if (channel) {
    write(LAYOUT.channelEnv, channelEnvContent({ ...CHANNEL, hostname: OPS_ANSWERS.meshHostname }), 0o600);
    write(LAYOUT.channelDropIn, channelDropInContent(), 0o644);
    const { cert, key } = testCertificate();
    write(LAYOUT.tlsCert, cert, 0o644);
    write(LAYOUT.tlsKey, key, 0o600);
    write(LAYOUT.nginxSite, renderNginxSite({ ...PRODUCTION_SITE, knock: CHANNEL.knock, edge: CHANNEL.edge, allow: [] }), 0o600);
    // The connection limits: files, the table "loaded" in the nft stand-in, the unit enabled and active.
    const firewall = firewallFiles([], '/usr/sbin/nft');
    for (const file of [firewall.rules, firewall.unit]) write(file.path, file.content, file.mode);
    fs.writeFileSync(path.join(sb.state, 'nft-table'), firewall.rules.content);
    fs.writeFileSync(path.join(sb.state, `system-${LAYOUT.channelFirewallUnit}.enabled`), '');
    fs.writeFileSync(path.join(sb.state, `system-${LAYOUT.channelFirewallUnit}.active`), '');
    for (const file of pluginFiles()) write(file.path, file.content, file.mode);
  }
  // What the install would record: every managed path that exists (steps/manifest.ts).
  fs.mkdirSync(path.join(sb.root, LAYOUT.logDir), { recursive: true, mode: 0o700 });
  for (const dir of [LAYOUT.stateDir, LAYOUT.runtimeDir]) fs.chmodSync(path.join(sb.root, dir), 0o700);
  await recordFromDisk(createHost({ env: env(), quiet: true }), ...recordedPaths(installWrites(), components).map((m) => ({ path: m.path, options: m.options ?? {} })));
  const state = (name: string, content = '') => fs.writeFileSync(path.join(sb.state, name), content);
  const browser = components.browser.ubuntu.package;
  state('dpkg-installed', ['tailscale', ...components.systemPackages, browser, ''].join('\n'));
  // What two of those packages put where doctor looks (the apt-get stand-in writes the same).
  write('/etc/logrotate.d/nginx', '/var/log/nginx/*.log {\n\tdaily\n\trotate 14\n\tcompress\n}\n');
  write('/usr/sbin/logrotate', '#!/bin/sh\nexit 0\n', 0o755);
  state('system-cron.active');
  state('system-nginx.active');
  state('nginx-listens');
  state('ts-up', `${OPS_ANSWERS.meshHostname}\n`);
  state('ts-serve', `${SERVE_TARGET}\n`);
  // Joined with an untagged key: it expires, far enough away for doctor to pass.
  state('ts-key-expiry', new Date(Date.now() + 180 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z'));
  state('user-openclaw-gateway.service.enabled');
  state('gateway-process');
  state('ss-output', [
    'LISTEN 0 511 127.0.0.1:18789 0.0.0.0:* users:(("openclaw-gatewa",pid=4242,fd=22))',
    ...(channel ? ['LISTEN 0 511 0.0.0.0:18790 0.0.0.0:* users:(("nginx",pid=777,fd=6))'] : []),
    '',
  ].join('\n'));
  state('syslog', `${Date.now() * 1000 - 600_000_000}\x1fservice-guard\x1fok: nothing to restore\n`);
  // QMD memory: the collection over the memory files, refreshed just now, private, timer on.
  fs.mkdirSync(path.join(sb.root, LAYOUT.workspaceDir, 'memory'), { recursive: true, mode: 0o700 });
  write(LAYOUT.qmdCollectionsFile, `collections:\n  memory:\n    path: ${path.join(sb.root, LAYOUT.workspaceDir)}\n    pattern: MEMORY.md,memory/*.md\n`, 0o600);
  write(LAYOUT.qmdIndex, '', 0o600);
  write(LAYOUT.qmdRefreshStamp, '', 0o600);
  for (const dir of [LAYOUT.qmdCacheDir, LAYOUT.qmdConfigDir]) fs.chmodSync(path.join(sb.root, dir), 0o700);
  state('user-qmd-refresh.timer.enabled');
  state('user-qmd-refresh.timer.active');
  // QMD's resident MCP server (it "answers" at SERVICE_QMD_HEALTH_URL, the sandbox's stand-in).
  const qmdMcp = qmdMcpUnitFile(components);
  write(qmdMcp.path, qmdMcp.content, qmdMcp.mode);
  state('user-qmd-mcp.service.enabled');
  state('user-qmd-mcp.service.active');

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
  };
  return ops;
}
