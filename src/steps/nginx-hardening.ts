import { createHash } from 'node:crypto';
import { readTemplate } from '../assets.js';
import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureFolder, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { readAddedPackages } from '../pipeline/packages.js';
import { LOCKS, type Change, type Step } from '../pipeline/step.js';
import { desired, type WrittenFile, type WrittenFolder } from '../pipeline/writes.js';

/**
 * Issue 27 items 4-5: the nginx the install brought serves the channel endpoint and
 * nothing else. Debian's default site (port 80, "Welcome to nginx!") is disabled, and a
 * drop-in sandboxes the unit (exposure 9.6 -> under 5). Where nginx was on the server
 * before the install, both are the customer's: left as they are, doctor notes port 80.
 */

/** Debian's (and Ubuntu's) default site: the link nginx-common's postinst makes, and the file it points to (a conffile). */
export const DEFAULT_SITE_LINK = '/etc/nginx/sites-enabled/default';
export const DEFAULT_SITE_FILE = '/etc/nginx/sites-available/default';

/** The package whose files are nginx's configuration (nginx.conf, the default site, the unit). */
const NGINX_CONFIG_PACKAGE = 'nginx-common';

/**
 * nginx's drop-in folder is systemd's (an operator's `systemctl edit nginx` writes there
 * too): made when missing, never recorded as ours; uninstall removes it only when empty.
 */
const NGINX_DROP_IN_DIR: WrittenFolder = { path: LAYOUT.nginxDropInDir, type: 'folder', mode: 0o755, life: 'if-empty' };
/** The sandbox stays with the nginx it hardens: a reset keeps it, uninstall removes it. */
const HARDENING_DROP_IN: WrittenFile = { path: LAYOUT.nginxHardeningDropIn, type: 'file', mode: 0o644, check: 'sha256', life: 'server' };

export function nginxHardeningDropIn(): DesiredFile {
  return desired(HARDENING_DROP_IN, readTemplate('nginx-hardening.conf'));
}

/**
 * Whether the nginx here is the install's: the install added nginx's configuration package
 * (its record of added packages; `nginx` where a release has no nginx-common), or wrote
 * the hardening drop-in, which it writes only then (the record is in the state folder,
 * which a --reset-clean removes; the drop-in stays with nginx). Where nginx is not
 * installed yet (check mode before apt ran), the install is about to bring it.
 */
export async function nginxIsOurs(host: Host): Promise<boolean> {
  const [{ packages }, dropIn] = await Promise.all([readAddedPackages(host), host.files.exists(LAYOUT.nginxHardeningDropIn)]);
  if (dropIn || packages.includes(NGINX_CONFIG_PACKAGE)) return true;
  const status = await host.exec.run('dpkg-query', ['-W', '-f=${Package} ${Status}\\n', 'nginx', NGINX_CONFIG_PACKAGE], { allowFailure: true });
  const installed = new Set(status.stdout.split('\n').filter((l) => l.endsWith(' install ok installed')).map((l) => l.split(' ')[0]));
  if (!installed.has('nginx') && !installed.has(NGINX_CONFIG_PACKAGE)) return true;
  return packages.includes('nginx') && !installed.has(NGINX_CONFIG_PACKAGE);
}

export type DefaultSite =
  /** No default site is enabled: nginx answers nothing on port 80 (unless another site listens there). */
  | { state: 'disabled' }
  /** Enabled as Debian ships it: the link to the unchanged conffile. */
  | { state: 'debian' }
  /** Enabled, but not as Debian ships it (changed, a file of its own, a link elsewhere): the customer's. */
  | { state: 'changed'; why: string };

/**
 * The default site as nginx sees it. "Debian's" only when the enabled entry is the link
 * to sites-available/default and that file is byte for byte the conffile dpkg installed
 * (its MD5 in dpkg's database): anything else is someone's own site.
 */
export async function defaultSite(host: Host): Promise<DefaultSite> {
  const link = await host.files.stat(DEFAULT_SITE_LINK);
  if (!link) return { state: 'disabled' };
  if (!link.isSymlink) return { state: 'changed', why: `${DEFAULT_SITE_LINK} is a file of its own, not the link to ${DEFAULT_SITE_FILE}` };
  const target = await host.files.readLink(DEFAULT_SITE_LINK);
  if (target !== DEFAULT_SITE_FILE && target !== '../sites-available/default') return { state: 'changed', why: `${DEFAULT_SITE_LINK} points to ${target}` };
  const content = await host.files.readBytes(DEFAULT_SITE_FILE);
  if (content === undefined) return { state: 'changed', why: `${DEFAULT_SITE_FILE} is missing` };
  const shipped = await conffileMd5(host, DEFAULT_SITE_FILE);
  if (shipped === undefined) return { state: 'changed', why: `dpkg does not list ${DEFAULT_SITE_FILE} as a package's configuration file` };
  if (createHash('md5').update(content).digest('hex') !== shipped) return { state: 'changed', why: `${DEFAULT_SITE_FILE} was changed from Debian's` };
  return { state: 'debian' };
}

/** The MD5 dpkg recorded for a conffile when its package installed it (`dpkg-query -S`, then the package's Conffiles). */
async function conffileMd5(host: Host, file: string): Promise<string | undefined> {
  const owner = await host.exec.run('dpkg-query', ['-S', file], { allowFailure: true });
  const pkg = /^([a-z0-9][a-z0-9+.-]*)(:[a-z0-9]+)?: /m.exec(owner.stdout)?.[1];
  if (owner.exitCode !== 0 || !pkg) return undefined;
  const conffiles = await host.exec.run('dpkg-query', ['-W', '-f=${Conffiles}\\n', pkg], { allowFailure: true });
  for (const line of conffiles.stdout.split('\n')) {
    const [name, md5] = line.trim().split(/\s+/);
    if (name === file && md5 && /^[0-9a-f]{32}$/.test(md5)) return md5;
  }
  return undefined;
}

export interface NginxHardeningPlan {
  disableDefaultSite: boolean;
  dropIn?: DesiredFile;
}

/** What the step (and doctor --fix) would change here; nothing where nginx is not the install's. */
export async function planNginxHardening(host: Host): Promise<{ changes: Change[]; plan: NginxHardeningPlan }> {
  const desired = nginxHardeningDropIn();
  const [site, dropIn] = await Promise.all([defaultSite(host), planFile(host, desired)]);
  const changes: Change[] = [];
  const plan: NginxHardeningPlan = { disableDefaultSite: site.state === 'debian' };
  if (plan.disableDefaultSite) {
    changes.push({ target: DEFAULT_SITE_LINK, summary: `${DEFAULT_SITE_LINK}: remove the link (Debian's default site, port 80; ${DEFAULT_SITE_FILE} stays as shipped)` });
  }
  if (dropIn) {
    changes.push(dropIn);
    plan.dropIn = desired;
  }
  return { changes, plan };
}

/**
 * Disables the default site (the link only: Debian's file stays, so nothing is lost and
 * no backup is needed), writes the drop-in, and has nginx take both: `daemon-reload` and
 * a restart (a sandbox applies at start; a restart also drops the port 80 listener),
 * after `nginx -t`. A stopped nginx is left stopped (the channel step starts it).
 */
export async function applyNginxHardening(host: Host, plan: NginxHardeningPlan): Promise<void> {
  if (plan.disableDefaultSite) await host.files.remove(DEFAULT_SITE_LINK);
  if (plan.dropIn) {
    if (!(await host.files.exists(NGINX_DROP_IN_DIR.path))) await ensureFolder(host, NGINX_DROP_IN_DIR);
    await writeDesired(host, plan.dropIn);
    await host.services.daemonReload('system');
  }
  if (!(await host.services.isActive('system', 'nginx'))) return;
  const test = await host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
  if (test.exitCode !== 0) {
    throw new DeployError(`nginx -t fails, not restarting nginx: ${host.redactor.redact(`${test.stdout}${test.stderr}`.trim())}`, 'fix the nginx configuration (`nginx -t` shows where), then run again');
  }
  if (!plan.dropIn) {
    await host.services.reload('system', 'nginx');
    return;
  }
  try {
    await host.services.restart('system', 'nginx');
  } catch (error) {
    // Never leave the channel's proxy down: without the drop-in, as it ran before.
    await host.files.remove(LAYOUT.nginxHardeningDropIn);
    await host.services.daemonReload('system');
    await host.services.restart('system', 'nginx').catch(() => undefined);
    throw new DeployError(
      `nginx did not start with its sandbox (${LAYOUT.nginxHardeningDropIn}); it was removed again and nginx started without it: ${(error as Error).message}`,
      'see `journalctl -u nginx -n 50` for the setting this server refuses, and report it',
    );
  }
}

export const nginxHardeningStep: Step = {
  id: 'nginx-hardening',
  title: 'nginx: no default site on port 80, a sandboxed unit',
  needs: ['system-packages', LOCKS.nginx, LOCKS.systemUnits],
  writes: [NGINX_DROP_IN_DIR, HARDENING_DROP_IN],
  async skip({ host }) {
    if (!(await nginxIsOurs(host))) return 'nginx was on this server before the install: its sites and unit are left as they are (doctor notes a default site on port 80)';
    return undefined;
  },
  async check({ host }) {
    const { changes, plan } = await planNginxHardening(host);
    return changes.length === 0 ? { changes } : { changes, data: plan };
  },
  async apply({ host }, plan) {
    await applyNginxHardening(host, plan.data as NginxHardeningPlan);
  },
  async verify({ host }) {
    if ((await defaultSite(host)).state === 'debian') throw new DeployError(`${DEFAULT_SITE_LINK} is still enabled`);
    if (await planFile(host, nginxHardeningDropIn())) throw new DeployError(`${LAYOUT.nginxHardeningDropIn} is not as written`);
  },
};
