import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { osFamily, readOs, type OsInfo } from '../host/os.js';
import { LOCKS, type InstallContext, type Step } from '../pipeline/step.js';
import { GATEWAY_PORT, LAYOUT } from '../layout.js';
import { aptInstall } from '../host/apt.js';
import { ensureFolder, writeRecorded } from '../pipeline/files.js';
import { installedFilesProblem, recordFromDisk } from '../pipeline/manifest.js';
import { recordAddedPackages } from '../pipeline/packages.js';
import type { WrittenFile, WrittenFolder } from '../pipeline/writes.js';

export const KEYRING = '/usr/share/keyrings/tailscale-archive-keyring.gpg';
export const SOURCES = '/etc/apt/sources.list.d/tailscale.list';
/** apt's folder of repository keys: made when missing (a minimal image), apt's and others' too. */
export const KEYRINGS_DIR: WrittenFolder = { path: '/usr/share/keyrings', type: 'folder', mode: 0o755, life: 'shared' };
/** The mesh client's apt repository: its signing key (downloaded) and source line. */
const MESH_KEYRING: WrittenFile = { path: KEYRING, type: 'file', mode: 0o644, check: 'sha256' };
const MESH_SOURCES: WrittenFile = { path: SOURCES, type: 'file', mode: 0o644, check: 'sha256' };
/** The run folder: the install's and the guard's locks, and the mesh auth key while `tailscale up` runs (gone at reboot, never in a backup). */
export const RUN_DIR: WrittenFolder = { path: LAYOUT.runDir, type: 'folder', mode: 0o700, life: 'server' };
const MESH_AUTH_KEY: WrittenFile = { path: LAYOUT.meshAuthKeyFile, type: 'file', mode: 0o600, life: 'server' };
export const SERVE_TARGET = `http://127.0.0.1:${GATEWAY_PORT}`;
export const SERVE_HINT =
  'enable HTTPS certificates and Serve/Funnel for the mesh network in its admin console (DNS: HTTPS Certificates; access controls: the funnel node attribute), then run the install again';

export interface MeshStatus {
  installed: boolean;
  running: boolean;
  hostname?: string;
  dnsName?: string;
  serving: boolean;
  /**
   * When this node's key expires (`Self.KeyExpiry`, RFC 3339), absent when it never
   * does (a tagged node, or key expiry disabled for it in the mesh's admin console).
   */
  keyExpiry?: string;
  /** `Self.Expired`: the coordination server (or the client, past KeyExpiry) says the key expired. */
  keyExpired: boolean;
  /** `Self.Tags`: the ACL tags the node joined with (tagged nodes do not expire). */
  tags: string[];
}

export async function meshStatus(host: Host): Promise<MeshStatus> {
  // Both questions at once (`serve status` only counts when the client is installed).
  const [status, serve] = await Promise.all([
    host.exec.run('tailscale', ['status', '--json'], { allowFailure: true }),
    host.exec.run('tailscale', ['serve', 'status', '--json'], { allowFailure: true }),
  ]);
  // Not installed: the command is missing (execa reports -1/127), not merely logged out.
  if (status.exitCode === 127 || status.exitCode === -1 || /not installed|command not found/i.test(status.stderr)) {
    return { installed: false, running: false, serving: false, keyExpired: false, tags: [] };
  }
  let parsed: { BackendState?: string; Self?: { HostName?: string; DNSName?: string; KeyExpiry?: unknown; Expired?: unknown; Tags?: unknown } } = {};
  try {
    parsed = JSON.parse(status.stdout || '{}');
  } catch {
    // not logged in yet: some versions print text
  }
  return {
    installed: true,
    running: parsed.BackendState === 'Running',
    hostname: parsed.Self?.HostName,
    dnsName: parsed.Self?.DNSName?.replace(/\.$/, ''),
    serving: serve.exitCode === 0 && serve.stdout.includes(`"${SERVE_TARGET}"`),
    ...(typeof parsed.Self?.KeyExpiry === 'string' ? { keyExpiry: parsed.Self.KeyExpiry } : {}),
    keyExpired: parsed.Self?.Expired === true,
    tags: Array.isArray(parsed.Self?.Tags) ? parsed.Self.Tags.filter((t): t is string => typeof t === 'string') : [],
  };
}

/**
 * The gateway's address on the mesh, `https://<host>.<mesh domain>`, from the mesh
 * client's own status (one call; the install's mesh step has made sure it serves).
 */
export async function meshUrl(host: Host): Promise<string | undefined> {
  const status = await host.exec.run('tailscale', ['status', '--json'], { allowFailure: true });
  try {
    const dnsName = (JSON.parse(status.stdout || '{}') as { Self?: { DNSName?: unknown } }).Self?.DNSName;
    return typeof dnsName === 'string' && dnsName ? `https://${dnsName.replace(/\.$/, '')}` : undefined;
  } catch {
    return undefined; // not logged in: some versions print text
  }
}

interface MeshPlan {
  install: boolean;
  /** Our apt source or its signing key changed or vanished since we wrote them: add them again. */
  repo: boolean;
  login: boolean;
  rename: boolean;
  serve: boolean;
}

/**
 * The private mesh client (Tailscale): installed from its signed apt repository,
 * logged in with the auth key (read from a 0600 file, never argv), named, and
 * serving the gateway over the mesh with HTTPS.
 */
export const meshClientStep: Step = {
  id: 'mesh-client',
  title: 'Private mesh network client',
  // system-packages: apt fetches its repository over https (ca-certificates).
  needs: ['preflight', 'package-lock', 'system-packages', LOCKS.apt],
  writes: [KEYRINGS_DIR, MESH_KEYRING, MESH_SOURCES, RUN_DIR, MESH_AUTH_KEY],
  async check({ host, answers }) {
    const [status, repoDamage] = await Promise.all([meshStatus(host), installedFilesProblem(host, [], [KEYRING, SOURCES])]);
    const plan: MeshPlan = {
      install: !status.installed,
      repo: status.installed && repoDamage !== undefined,
      login: !status.running,
      rename: status.running && status.hostname !== answers.meshHostname,
      serve: !status.serving,
    };
    const changes = [];
    if (plan.install) changes.push({ target: 'tailscale', summary: 'install the mesh client' });
    if (plan.repo) changes.push({ target: SOURCES, summary: `add the mesh client's apt repository again (${repoDamage})` });
    if (plan.login) changes.push({ target: 'tailscale', summary: `join the mesh as ${answers.meshHostname}` });
    if (plan.rename) changes.push({ target: 'tailscale', summary: `hostname ${status.hostname} -> ${answers.meshHostname}` });
    if (plan.serve) changes.push({ target: 'tailscale serve', summary: `serve the gateway (${SERVE_TARGET}) over HTTPS on the mesh` });
    return { changes, data: plan };
  },
  async apply(ctx, plan) {
    const { host, answers } = ctx;
    const todo = plan.data as MeshPlan;
    if (todo.install) await installMeshClient(ctx);
    else if (todo.repo) await addMeshRepository(ctx);
    if (todo.login || todo.install) {
      if (!answers.meshAuthKey) {
        throw new DeployError('the mesh client is not logged in and no mesh auth key was given', 'give SERVICE_MESH_AUTH_KEY or --mesh-auth-key-file (a new key from the mesh admin settings)');
      }
      await loginWithKeyFile(host, answers.meshAuthKey, answers.meshHostname);
    } else if (todo.rename) {
      await host.exec.run('tailscale', ['set', `--hostname=${answers.meshHostname}`]);
    }
    if (todo.serve) {
      await host.exec.run('tailscale', ['serve', '--bg', '--yes', SERVE_TARGET], { timeoutMs: 60_000 });
    }
  },
  async verify({ host, answers }) {
    const status = await meshStatus(host);
    if (!status.running) throw new DeployError('the mesh client is not running after login', 'check the auth key (it may be expired or used), then run again');
    if (status.hostname !== answers.meshHostname) throw new DeployError(`mesh hostname is ${status.hostname}, expected ${answers.meshHostname}`);
    // `tailscale serve` can exit 0 without configuring anything when the network has HTTPS/Serve off.
    if (!status.serving) throw new DeployError('the mesh network did not accept Serve for the gateway', SERVE_HINT);
  },
};

/** The key lives in a 0600 temp file in /run (never in a backup) only while `tailscale up` runs. */
async function loginWithKeyFile(host: Host, key: string, hostname: string): Promise<void> {
  await ensureFolder(host, RUN_DIR);
  const keyFile = host.files.tempPathFor(MESH_AUTH_KEY.path);
  try {
    await host.files.writeNew(keyFile, `${key}\n`, { mode: MESH_AUTH_KEY.mode });
    await host.exec.run('tailscale', ['up', `--auth-key=file:${host.paths.real(keyFile)}`, `--hostname=${hostname}`], { timeoutMs: 120_000 });
  } finally {
    await host.files.remove(keyFile);
  }
}

/**
 * The mesh client's apt repository for this OS: its family's folder (ubuntu/ or debian/)
 * and the codename the server reports (VERSION_CODENAME, else UBUNTU_CODENAME); nothing guessed.
 */
export function meshRepoFor(os: OsInfo, meshAptUrl: string): { repo: string; codename: string } {
  const family = osFamily(os);
  if (!family) throw new DeployError(`the mesh client's apt repository has packages for Ubuntu and Debian; ${os.prettyName} is neither (ID/ID_LIKE in /etc/os-release)`, 'use Ubuntu 22.04 or 24.04');
  if (!/^[a-z][a-z0-9-]*$/.test(os.codename)) throw new DeployError(`${os.prettyName} does not report its release codename (VERSION_CODENAME in /etc/os-release)`, 'use Ubuntu 22.04 or 24.04, whose os-release names it');
  return { repo: meshAptUrl.replace(/\/ubuntu$/, `/${family}`), codename: os.codename };
}

/** The signed apt repository of the mesh client: its signing key and source line, recorded in the manifest. */
async function addMeshRepository(ctx: InstallContext): Promise<void> {
  const { host, components } = ctx;
  const { repo, codename } = meshRepoFor(await readOs(host.files), components.sources.meshAptUrl);
  ctx.progress('adding the mesh client apt repository');
  const partial = host.files.tempPathFor(KEYRING);
  await ensureFolder(host, KEYRINGS_DIR);
  try {
    await host.net.download(`${repo}/${codename}.noarmor.gpg`, host.paths.real(partial), { caFile: components.sources.caFile });
    await host.files.chmod(partial, MESH_KEYRING.mode);
    await host.files.rename(partial, KEYRING);
  } finally {
    await host.files.remove(partial);
  }
  await recordFromDisk(host, { path: MESH_KEYRING.path, options: { mode: MESH_KEYRING.mode } });
  await writeRecorded(host, MESH_SOURCES, `deb [signed-by=${KEYRING}] ${repo} ${codename} main\n`);
}

async function installMeshClient(ctx: InstallContext): Promise<void> {
  const { host, components, options } = ctx;
  await addMeshRepository(ctx);
  ctx.progress('installing the mesh client');
  await recordAddedPackages(host, await aptInstall(host, [components.meshClient.package], options.lockTimeoutMs / 1000, ctx.progress));
  await host.exec.run('systemctl', ['enable', '--now', 'tailscaled'], { allowFailure: true });
}
