import net from 'node:net';
import os from 'node:os';
import { formatAllowList, parseAllowList, type Cidr } from '../channel/allow.js';
import { parseEnvFile } from '../channel/env-file.js';
import { PRODUCTION_SITE, productionSiteFromEnv, renderNginxSite } from '../channel/nginx.js';
import { SECRET_PATTERN, newSecret } from '../channel/protocol.js';
import { TLS_KEY_BITS, TLS_VALID_DAYS, certProblem, sanExtension } from '../channel/tls.js';
import { DeployError, UsageError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LOCKS, type Change, type InstallContext, type Plan, type Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { readTemplate } from '../assets.js';
import { meshStatus } from './mesh-client.js';
import { ensureDirRecorded, octal, planFile, writeDesired, writeRecorded, type DesiredFile } from '../pipeline/files.js';
import { recordWrittenFile } from '../pipeline/manifest.js';
import { desired, type WrittenFile, type WrittenFolder } from '../pipeline/writes.js';
import { RUNTIME_DIR } from './runtime-config.js';

/**
 * The channel endpoint (docs/channel-protocol.md), configured by the catalog deploy
 * and `install --channel`: secrets in channel.env, the drop-in that loads them into
 * the gateway, the service-channel plugin, the TLS certificate and the nginx site.
 */

const SKIP_REASON = 'the channel endpoint is configured only by the catalog deploy (--catalog) or install --channel';
const skipUnlessChannel = (ctx: InstallContext) => (ctx.options.channel ? undefined : SKIP_REASON);

// ---------------------------------------------------------------- channel.env

export interface ChannelSecrets {
  token: string;
  knock: string;
  /** Per-install secret nginx adds to every request it forwards; the plugin answers nothing else. */
  edge: string;
  hostname: string;
  /** The portal's addresses (--channel-allow); empty: any address. */
  allow: Cidr[];
  /** Where each secret came from, for the change summary. */
  origin: { token: SecretOrigin; knock: SecretOrigin; edge: SecretOrigin };
}
type SecretOrigin = 'portal' | 'kept' | 'generated' | 'rotated';

const secretsByHost = new WeakMap<Host, Promise<ChannelSecrets>>();

/**
 * The run's token, knock and edge secret, decided once per run (every channel step
 * sees the same values, in check mode too). Precedence: the portal's values
 * (environment; not for the edge secret, which never leaves the server) > the existing
 * channel.env (unless --rotate-channel-secrets) > 32 new random bytes. The allow list:
 * --channel-allow, else the one in channel.env, else none (any address).
 */
export function channelSecrets(ctx: InstallContext): Promise<ChannelSecrets> {
  let pending = secretsByHost.get(ctx.host);
  if (!pending) {
    pending = decideSecrets(ctx);
    secretsByHost.set(ctx.host, pending);
  }
  return pending;
}

async function decideSecrets(ctx: InstallContext): Promise<ChannelSecrets> {
  const { host } = ctx;
  const text = await host.files.read(LAYOUT.channelEnv);
  const current = text === undefined ? {} : parseEnvFile(text);
  const pick = (name: 'SERVICE_CHANNEL_TOKEN' | 'SERVICE_CHANNEL_KNOCK'): [string, SecretOrigin] => {
    const given = host.env[name]?.trim();
    if (given) {
      if (!SECRET_PATTERN.test(given)) {
        throw new UsageError(`${name} from the environment is not a usable secret`, `give 24-512 characters of A-Z a-z 0-9 . _ ~ + / = - (or leave it unset to generate one)`);
      }
      return [given, 'portal'];
    }
    const existing = current[name];
    if (existing && SECRET_PATTERN.test(existing) && !ctx.options.rotateChannelSecrets) return [existing, 'kept'];
    return [newSecret(), existing ? 'rotated' : 'generated'];
  };
  const [token, tokenOrigin] = pick('SERVICE_CHANNEL_TOKEN');
  const [knock, knockOrigin] = pick('SERVICE_CHANNEL_KNOCK');
  const existingEdge = current.SERVICE_CHANNEL_EDGE;
  const [edge, edgeOrigin]: [string, SecretOrigin] =
    existingEdge && SECRET_PATTERN.test(existingEdge) && !ctx.options.rotateChannelSecrets ? [existingEdge, 'kept'] : [newSecret(), existingEdge ? 'rotated' : 'generated'];
  host.redactor.add(token, knock, edge);
  let allow = ctx.options.channelAllow;
  if (allow === undefined) {
    try {
      allow = current.SERVICE_CHANNEL_ALLOW ? parseAllowList(current.SERVICE_CHANNEL_ALLOW) : [];
    } catch (error) {
      throw new DeployError(`${LAYOUT.channelEnv}: SERVICE_CHANNEL_ALLOW is not a list of addresses: ${(error as Error).message}`, 'give the list again with --channel-allow CIDR[,CIDR] (or --channel-allow any)');
    }
  }
  return { token, knock, edge, allow, hostname: ctx.answers.meshHostname, origin: { token: tokenOrigin, knock: knockOrigin, edge: edgeOrigin } };
}

export function channelEnvContent(secrets: Pick<ChannelSecrets, 'token' | 'knock' | 'edge' | 'hostname'> & { allow?: readonly Cidr[] }): string {
  const allow = formatAllowList(secrets.allow ?? []);
  return [
    '# Managed by service-deploy: the channel endpoint (docs/channel-protocol.md). Root only.',
    '# Loaded into the gateway by its drop-in service-env.conf; nginx holds the knock and',
    '# the edge secret too.',
    `SERVICE_CHANNEL_TOKEN=${secrets.token}`,
    `SERVICE_CHANNEL_KNOCK=${secrets.knock}`,
    `SERVICE_TS_HOSTNAME=${secrets.hostname}`,
    `SERVICE_CHANNEL_EDGE=${secrets.edge}`,
    ...(allow ? [`SERVICE_CHANNEL_ALLOW=${allow}`] : []),
    '',
  ].join('\n');
}

/** The channel's secrets: root only; its own secrets come back from the install, never from doctor. */
export const CHANNEL_ENV: WrittenFile = { path: LAYOUT.channelEnv, type: 'file', mode: 0o600, check: 'sha256' };

async function desiredChannelEnv(ctx: InstallContext): Promise<DesiredFile> {
  return desired(CHANNEL_ENV, channelEnvContent(await channelSecrets(ctx)));
}

export const channelEnvStep: Step = {
  id: 'channel-env',
  title: 'Channel secrets (channel.env)',
  needs: ['package-lock'],
  skip: skipUnlessChannel,
  writes: [CHANNEL_ENV],
  async check(ctx) {
    const desired = await desiredChannelEnv(ctx);
    const change = await planFile(ctx.host, desired);
    if (!change) return { changes: [] };
    const { origin } = await channelSecrets(ctx);
    change.summary += ` (token ${origin.token}, knock ${origin.knock}, edge secret ${origin.edge})`;
    // nginx holds the knock: a new knock means a new site, which its own step handles.
    return { changes: [change], notify: ['gateway-restart'], data: desired };
  },
  async apply(ctx, plan) {
    if (!(await ctx.host.files.exists(RUNTIME_DIR.path))) await ensureDirRecorded(ctx.host, RUNTIME_DIR);
    await writeDesired(ctx.host, plan.data as DesiredFile);
  },
  async verify(ctx) {
    const info = await ctx.host.files.stat(CHANNEL_ENV.path);
    if (info?.mode !== CHANNEL_ENV.mode) throw new DeployError(`${CHANNEL_ENV.path} is not mode ${octal(CHANNEL_ENV.mode)} after writing it`);
  },
};

// ---------------------------------------------------------------- drop-in

export function channelDropInContent(): string {
  return [
    '# Managed by service-deploy: loads the channel endpoint settings into the gateway',
    '# (spec 2.6). Without them the service-channel plugin answers 503 "misconfigured".',
    '# "-": a missing file must not keep the agent itself from starting.',
    '[Service]',
    `EnvironmentFile=-${LAYOUT.channelEnv}`,
    '',
  ].join('\n');
}

/** The gateway unit's drop-in folder: in every backup, with what is in it. */
export const GATEWAY_DROP_IN_DIR: WrittenFolder = { path: LAYOUT.gatewayDropInDir, type: 'folder', mode: 0o755, check: 'metadata', life: 'backup' };
export const CHANNEL_DROP_IN: WrittenFile = {
  path: LAYOUT.channelDropIn,
  type: 'file',
  mode: 0o644,
  check: 'sha256',
  rewrite: { from: async () => channelDropInFile(), effect: 'units', channel: true },
};

/** The systemd drop-in that loads channel.env into the gateway (spec 2.6), as the install writes it. */
export function channelDropInFile(): DesiredFile {
  return desired(CHANNEL_DROP_IN, channelDropInContent());
}

export const channelDropInStep: Step = {
  id: 'channel-drop-in',
  title: 'Gateway drop-in loading channel.env (service-env.conf)',
  needs: ['package-lock'],
  skip: skipUnlessChannel,
  writes: [GATEWAY_DROP_IN_DIR, CHANNEL_DROP_IN],
  async check({ host }) {
    const file = channelDropInFile();
    const change = await planFile(host, file);
    return change ? { changes: [change], notify: ['gateway-reload-units', 'gateway-restart'], data: file } : { changes: [] };
  },
  async apply({ host }, plan) {
    await ensureDirRecorded(host, GATEWAY_DROP_IN_DIR);
    await writeDesired(host, plan.data as DesiredFile);
  },
};

// ---------------------------------------------------------------- plugin

/** Plugin file name on the server -> template name (templates/ is flat). */
export const PLUGIN_FILES: Record<string, string> = {
  'openclaw.plugin.json': 'service-channel.openclaw.plugin.json',
  'package.json': 'service-channel.package.json',
  'index.js': 'service-channel.index.js',
  'protocol.js': 'service-channel.protocol.js',
  'nonce-store.js': 'service-channel.nonce-store.js',
  'sessions.js': 'service-channel.sessions.js',
};

const PLUGIN_DIR: WrittenFolder = { path: LAYOUT.channelPluginDir, type: 'folder', mode: 0o755, check: 'metadata' };
/** The plugin's code: doctor writes a changed file again, and the gateway restarts to load it. */
const PLUGIN_CODE: ReadonlyArray<{ file: WrittenFile; template: string }> = Object.entries(PLUGIN_FILES).map(([name, template]) => {
  const file: WrittenFile = {
    path: `${LAYOUT.channelPluginDir}/${name}`,
    type: 'file',
    mode: 0o644,
    check: 'sha256',
    rewrite: { from: async () => desired(file, readTemplate(template)), effect: 'gateway', channel: true },
  };
  return { file, template };
});
/** The plugin's replay memory (templates/service-channel.index.js: <state dir>/service-channel/nonces.json). */
export const NONCE_STORE: WrittenFile = { path: `${LAYOUT.runtimeDir}/service-channel/nonces.json`, type: 'file', mode: 0o600, writtenBy: 'the service-channel plugin' };

export function pluginFiles(): DesiredFile[] {
  return PLUGIN_CODE.map(({ file, template }) => desired(file, readTemplate(template)));
}

export const channelPluginStep: Step = {
  id: 'channel-plugin',
  title: 'OpenClaw plugin service-channel',
  // channel-env makes the runtime's folder root-only before anything goes into it.
  needs: ['channel-env'],
  skip: skipUnlessChannel,
  writes: [PLUGIN_DIR, ...PLUGIN_CODE.map((c) => c.file), NONCE_STORE],
  async check({ host }) {
    const files = pluginFiles();
    const changes = (await Promise.all(files.map((f) => planFile(host, f)))).filter((c): c is Change => c !== undefined);
    return changes.length === 0 ? { changes } : { changes, notify: ['gateway-restart'], data: files };
  },
  async apply({ host }, plan) {
    await ensureDirRecorded(host, PLUGIN_DIR);
    for (const file of plan.data as DesiredFile[]) await writeDesired(host, file);
  },
};

// ---------------------------------------------------------------- TLS

/**
 * Names the certificate is made for: the --channel-host names (first, in their order),
 * the mesh hostname (+ full mesh name), localhost and the server's addresses.
 * `named` are the names this server is reached by on purpose (the answers' names, the
 * mesh name, loopback): a certificate without one of them is made again. The addresses
 * found on its interfaces (and the mesh's) go into a new certificate but are no reason
 * to make one: a new certificate is a new pin, and a second NIC, a VPN or IPv6 turned on
 * later must not break the portal's pin at the next re-run. An address the portal uses
 * is named with --channel-host.
 */
export async function certificateNames(ctx: InstallContext): Promise<{ named: string[]; all: string[] }> {
  const given = (ctx.answers.channelHosts ?? []).map((h): string => (net.isIP(h) ? `IP:${h}` : `DNS:${h}`));
  const namedDns = [ctx.answers.meshHostname, 'localhost'];
  const namedIps = ['127.0.0.1', '::1'];
  const dns = new Set<string>(namedDns);
  const ips = new Set<string>(namedIps);
  const mesh = await meshStatus(ctx.host);
  if (mesh.dnsName) dns.add(mesh.dnsName.toLowerCase());
  if (mesh.installed) {
    const result = await ctx.host.exec.run('tailscale', ['ip'], { allowFailure: true });
    if (result.exitCode === 0) for (const ip of result.stdout.split(/\s+/)) if (ip) ips.add(ip);
  }
  for (const [name, addresses] of Object.entries(os.networkInterfaces())) {
    if (/^(docker|br-|veth|virbr|cni|flannel|cali)/.test(name)) continue;
    for (const a of addresses ?? []) {
      if (a.internal || (a.family === 'IPv6' && /^fe80:/i.test(a.address))) continue;
      ips.add(a.address);
    }
  }
  const found = [...[...dns].sort().map((d) => `DNS:${d}`), ...[...ips].sort().map((ip) => `IP:${ip}`)];
  const named = [...given, ...[...namedDns.map((d) => `DNS:${d}`), ...namedIps.map((ip) => `IP:${ip}`)].filter((san) => !given.includes(san))];
  return { named, all: [...given, ...found.filter((san) => !given.includes(san))] };
}

/** Every name a new certificate carries (named ones first): see certificateNames. */
export async function wantedSans(ctx: InstallContext): Promise<string[]> {
  return (await certificateNames(ctx)).all;
}

/** What a new certificate means to the portal, said where the plan says why it is made. */
export const PIN_CHANGE_NOTE = 'a new certificate has a new pin: give the portal the new one (`service-deploy channel show`), it refuses the server until then';

interface TlsPlan {
  /** What a new certificate carries, and what a kept one must carry. */
  sans: string[];
  named: string[];
}

/**
 * The names this run's certificate was made (or kept) for, for verify: the server's
 * addresses can change while the install runs (an interface coming up), and the
 * certificate is right for the names it was planned with. The next run adds the new ones.
 */
const plannedSans = new WeakMap<Host, string[]>();

/** Our folder in /etc: the channel's certificate and its connection limits (steps/channel-firewall.ts). */
export const CONFIG_DIR: WrittenFolder = { path: '/etc/service-deploy', type: 'folder', mode: 0o755, life: 'server' };
const TLS_DIR: WrittenFolder = { path: LAYOUT.tlsDir, type: 'folder', mode: 0o755, check: 'metadata', life: 'backup' };
/** The certificate and its key come back from the install (`install --channel`), never from doctor. */
const TLS_KEY: WrittenFile = { path: LAYOUT.tlsKey, type: 'file', mode: 0o600, check: 'sha256' };
const TLS_CERT: WrittenFile = { path: LAYOUT.tlsCert, type: 'file', mode: 0o644, check: 'sha256' };

export const channelTlsStep: Step = {
  id: 'channel-tls',
  title: `Channel TLS certificate (self-signed RSA ${TLS_KEY_BITS}, 10 years)`,
  needs: ['system-packages', 'mesh-client'],
  skip: skipUnlessChannel,
  writes: [CONFIG_DIR, TLS_DIR, TLS_KEY, TLS_CERT],
  async check(ctx) {
    const { host } = ctx;
    const { named, all: sans } = await certificateNames(ctx);
    const [cert, key] = await Promise.all([host.files.read(LAYOUT.tlsCert), host.files.read(LAYOUT.tlsKey)]);
    const problem = certProblem(cert, key, named, host.now());
    const changes: Change[] = [];
    // A first certificate has no pin anyone holds yet; replacing one changes the pin.
    if (problem) changes.push({ target: LAYOUT.tlsCert, summary: `new certificate: ${problem}${cert === undefined ? '' : `; ${PIN_CHANGE_NOTE}`}` });
    else {
      const keyInfo = await host.files.stat(TLS_KEY.path);
      if (keyInfo?.mode !== TLS_KEY.mode) changes.push({ target: TLS_KEY.path, summary: `${TLS_KEY.path}: mode -> ${octal(TLS_KEY.mode)}` });
    }
    return changes.length === 0 ? { changes } : { changes, notify: ['nginx-reload'], data: { sans, named, regenerate: Boolean(problem) } };
  },
  async apply(ctx, plan) {
    const { host } = ctx;
    const data = plan.data as TlsPlan & { regenerate: boolean };
    plannedSans.set(host, data.regenerate ? data.sans : data.named);
    await ensureDirRecorded(host, TLS_DIR);
    if (!data.regenerate) {
      await host.files.chmod(TLS_KEY.path, TLS_KEY.mode);
      return;
    }
    ctx.progress(`openssl: RSA ${TLS_KEY_BITS} key and certificate`);
    const work = await host.files.makeTempDir(LAYOUT.tlsKey);
    try {
      await host.exec.run('openssl', [
        'req', '-x509', '-newkey', `rsa:${TLS_KEY_BITS}`, '-nodes', '-sha256', '-days', String(TLS_VALID_DAYS),
        '-subj', `/CN=${ctx.answers.meshHostname}`,
        '-addext', sanExtension(data.sans),
        '-addext', 'extendedKeyUsage=serverAuth',
        '-keyout', host.paths.real(`${work}/channel.key`), '-out', host.paths.real(`${work}/channel.crt`),
      ], { timeoutMs: 300_000 });
      const key = await host.files.readBytes(`${work}/channel.key`);
      const cert = await host.files.read(`${work}/channel.crt`);
      if (!key || !cert) throw new DeployError('openssl did not write the key and certificate');
      // Key first: a reader never sees a certificate whose key is not there yet.
      await writeRecorded(host, TLS_KEY, key);
      await writeRecorded(host, TLS_CERT, cert);
    } finally {
      await host.files.remove(work);
    }
  },
  async verify(ctx) {
    const { host } = ctx;
    const [cert, key] = await Promise.all([host.files.read(LAYOUT.tlsCert), host.files.read(LAYOUT.tlsKey)]);
    const problem = certProblem(cert, key, plannedSans.get(host) ?? (await certificateNames(ctx)).named, host.now());
    if (problem) throw new DeployError(`the channel certificate is not right after making it: ${problem}`);
  },
};

// ---------------------------------------------------------------- nginx

/** Holds the knock and the edge secret: root-only (nginx's master process reads it as root). Doctor writes it again from channel.env. */
export const NGINX_SITE: WrittenFile = {
  path: LAYOUT.nginxSite,
  type: 'file',
  mode: 0o600,
  check: 'sha256',
  life: 'backup',
  rewrite: {
    from: async (ctx) => {
      const site = siteFromEnv((await ctx.channelEnv()) ?? {});
      return site === undefined ? undefined : desired(NGINX_SITE, site);
    },
    effect: 'nginx',
    channel: true,
  },
};

export async function desiredNginxSite(ctx: InstallContext): Promise<DesiredFile> {
  const { knock, edge, allow } = await channelSecrets(ctx);
  return desired(NGINX_SITE, renderNginxSite({ ...PRODUCTION_SITE, knock, edge, allow }));
}

/** The site the install writes for this channel.env, or undefined when channel.env cannot make one. */
export function siteFromEnv(env: Record<string, string>): string | undefined {
  try {
    return productionSiteFromEnv(env);
  } catch {
    return undefined;
  }
}

async function nginxTest(host: Host): Promise<{ ok: boolean; output: string }> {
  const result = await host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
  const output = host.redactor.redact(`${result.stdout}${result.stderr}`.trim());
  return { ok: result.exitCode === 0 && /test is successful/.test(output), output };
}

async function reloadNginx(host: Host): Promise<void> {
  if (await host.services.isActive('system', 'nginx')) await host.services.reload('system', 'nginx');
  else await host.services.enableNow('system', 'nginx');
}

/**
 * Puts the previous site back (or removes ours when there was none). Not recorded in
 * the install manifest: its entry still names what service-deploy last wrote and kept.
 */
async function restoreSite(host: Host, previous: { content?: string; mode?: number }): Promise<void> {
  if (previous.content === undefined) await host.files.remove(LAYOUT.nginxSite);
  else await host.files.write(NGINX_SITE.path, previous.content, { mode: previous.mode ?? NGINX_SITE.mode });
}

/**
 * The nginx site. The candidate goes in place only together with a successful
 * `nginx -t`; on failure the previous site is put back before anything reloads, so
 * nginx is never left with a broken configuration.
 */
export const nginxSiteStep: Step = {
  id: 'channel-nginx',
  title: 'nginx site for the channel endpoint (port 18790)',
  needs: ['nginx-hardening', 'channel-env', 'channel-tls', LOCKS.nginx],
  skip: skipUnlessChannel,
  writes: [NGINX_SITE],
  async check(ctx) {
    const desired = await desiredNginxSite(ctx);
    const change = await planFile(ctx.host, desired);
    if (change) return { changes: [change], notify: ['nginx-reload'], data: desired };
    // Unchanged site, but a new certificate (earlier step) needs a reload too.
    if (ctx.notified.has('nginx-reload')) {
      return { changes: [{ target: 'nginx', summary: 'reload nginx (new certificate)' }], data: undefined };
    }
    return { changes: [] };
  },
  async apply(ctx, plan: Plan) {
    const { host } = ctx;
    const desired = plan.data as DesiredFile | undefined;
    if (desired) {
      const previous = { content: await host.files.read(LAYOUT.nginxSite), mode: (await host.files.stat(LAYOUT.nginxSite))?.mode };
      // Recorded in the install manifest only once nginx has taken it.
      await host.files.write(desired.path, desired.content, { mode: desired.mode });
      const test = await nginxTest(host);
      if (!test.ok) {
        await restoreSite(host, previous);
        throw new DeployError(`nginx rejects the new channel site; the previous one was put back:\n${test.output}`, 'nothing was reloaded; report this with the output of `service-deploy render nginx`');
      }
      try {
        await reloadNginx(host);
      } catch (error) {
        await restoreSite(host, previous);
        if ((await nginxTest(host)).ok) await reloadNginx(host).catch(() => undefined);
        throw new DeployError(`nginx did not reload with the new channel site; the previous one was put back: ${(error as Error).message}`, 'check `systemctl status nginx` and `journalctl -u nginx`');
      }
      await recordWrittenFile(host, desired.path, desired.content, { mode: desired.mode });
      return;
    }
    const test = await nginxTest(host);
    if (!test.ok) throw new DeployError(`nginx -t fails, not reloading:\n${test.output}`, 'fix the nginx configuration (`nginx -t` shows where), then run again');
    await reloadNginx(host);
  },
  async verify({ host }) {
    const test = await nginxTest(host);
    if (!test.ok) throw new DeployError(`nginx -t fails after the change:\n${test.output}`);
  },
};

/** In pipeline order (the firewall steps follow in steps/index.ts); insert before the gateway service step. */
export const channelSteps: Step[] = [channelEnvStep, channelPluginStep, channelDropInStep, channelTlsStep, nginxSiteStep];
