import { productionSiteFromEnv } from '../channel/nginx.js';
import { serializeRuntimeConfig } from '../config/runtime-config.js';
import { DeployError } from '../errors.js';
import { runGuard } from '../guard/index.js';
import { LAYOUT } from '../layout.js';
import { ensureDirRecorded, writeDesired, writeRecorded, type DesiredFile } from '../pipeline/files.js';
import { recordWrittenFile, restampRecorded } from '../pipeline/manifest.js';
import { desired, folderOf } from '../pipeline/writes.js';
import { NGINX_SITE } from '../steps/channel.js';
import { guardCron, guardScript, installSelf } from '../steps/guard.js';
import { installWrites } from '../steps/index.js';
import { applyNginxHardening, nginxIsOurs, planNginxHardening } from '../steps/nginx-hardening.js';
import { RUNTIME_CONFIG, RUNTIME_DIR, desiredFor, validateCandidate } from '../steps/runtime-config.js';
import type { FileIssue } from './audit.js';
import type { DoctorContext } from './context.js';
import { ownFile } from './own-files.js';

/*
 * The fixes' code, loaded only when `--fix` runs one. Each is declared, with its id,
 * title and phase, by the check it belongs to (types.ts Fix, lazyFix); the order they
 * run in is derived from those declarations (doctor/index.ts FIXES).
 */

/**
 * Writes the channel nginx site, and keeps it only with a passing `nginx -t` (else the
 * previous one goes back and the fix fails); then restarts nginx.
 */
async function replaceNginxSite(ctx: DoctorContext, desired: DesiredFile): Promise<void> {
  const { host } = ctx;
  const previous = await host.files.read(LAYOUT.nginxSite);
  const previousMode = (await host.files.stat(LAYOUT.nginxSite))?.mode ?? NGINX_SITE.mode;
  // Recorded in the install manifest only once nginx accepts it; a site put back is not
  // recorded (the manifest keeps naming what service-deploy last wrote).
  await host.files.write(desired.path, desired.content, { mode: desired.mode });
  const test = await host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
  if (test.exitCode !== 0) {
    // Never leave nginx with a site it rejects: put the old one back.
    if (previous === undefined) await host.files.remove(LAYOUT.nginxSite);
    else await host.files.write(LAYOUT.nginxSite, previous, { mode: previousMode });
    throw new DeployError(`nginx -t still fails with the rewritten site (the previous one was put back): ${host.redactor.redact(test.stderr.trim())}`, 'another nginx file is at fault: see `nginx -t`');
  }
  await recordWrittenFile(host, desired.path, desired.content, { mode: desired.mode });
  await host.services.restart('system', 'nginx');
  ctx.nginxRestarted = true;
}

/** Puts back what the install manifest records: modes, owners, our own files, our binary. */
export async function repairFiles(ctx: DoctorContext): Promise<void | false> {
  const { host } = ctx;
  const byPath = new Map<string, FileIssue[]>();
  for (const issue of (await ctx.audit()).issues) if (issue.repair) byPath.set(issue.path, [...(byPath.get(issue.path) ?? []), issue]);
  // Our own files the manifest does not know yet (an older install) are written again too.
  for (const p of await ctx.unrecordedOwnDrift()) byPath.set(p, [{ path: p, problem: `${p} differs`, repair: { kind: 'render' }, command: 'service-deploy doctor --fix' }]);
  if (byPath.size === 0) return false;
  const restamp: string[] = [];
  for (const [p, issues] of byPath) {
    const kinds = new Set(issues.map((i) => i.repair!.kind));
    if (kinds.has('render')) {
      const own = ownFile(p)!;
      const file = await own.rewrite.from(ctx);
      if (!file) throw new DeployError(`${p} cannot be written again here`, issues[0]!.command);
      const { effect } = own.rewrite;
      if (effect === 'nginx') await replaceNginxSite(ctx, file);
      else {
        // Its folder first, when that is one the manifest records (the drop-in's, the plugin's).
        const folder = folderOf(installWrites(), p);
        if (folder?.check === 'metadata') await ensureDirRecorded(host, folder);
        await writeDesired(host, file);
      }
      // A unit file, the drop-in or the plugin's code changed: the gateway must load them.
      if (effect === 'units' || effect === 'gateway') ctx.gatewayRestartWanted = true;
      continue;
    }
    if (kinds.has('self-copy')) {
      await installSelf(host);
      continue;
    }
    for (const issue of issues) {
      const repair = issue.repair!;
      if (repair.kind === 'chown') await host.files.chown(p, { uid: repair.uid, gid: repair.gid });
      if (repair.kind === 'chmod') await host.files.chmod(p, repair.mode);
    }
    restamp.push(p);
  }
  // Content was verified just now; a new ctime is all that changed.
  if (restamp.length > 0) await restampRecorded(host, restamp);
}

/** The managed keys of openclaw.json written again (validated by OpenClaw first). */
export async function writeRuntimeConfig(ctx: DoctorContext): Promise<void> {
  const { host } = ctx;
  const answers = await ctx.answers();
  if (!answers) throw new DeployError('no stored answers', 'run `service-deploy install`');
  const { config, problem } = await ctx.runtimeConfig();
  if (!config && (await host.files.exists(LAYOUT.runtimeConfig))) throw new DeployError(problem ?? `${LAYOUT.runtimeConfig} is unreadable`, 'move it aside and run `service-deploy install`');
  const desired = await desiredFor({ host, answers, profile: ctx.profile, components: ctx.components, channel: await ctx.channelConfigured() }, config);
  const content = serializeRuntimeConfig(desired);
  await ensureDirRecorded(host, RUNTIME_DIR);
  await validateCandidate(host, content);
  await writeRecorded(host, RUNTIME_CONFIG, content);
  ctx.gatewayRestartWanted = true;
}

/** The guard script and its hourly cron entry written again; cron started. */
export async function writeGuardCron(ctx: DoctorContext): Promise<void> {
  const answers = await ctx.answers();
  if (!answers) throw new DeployError('no stored answers', 'run `service-deploy install`');
  await writeDesired(ctx.host, guardScript());
  await writeDesired(ctx.host, guardCron(answers.meshHostname));
  if (!(await ctx.host.services.isActive('system', 'cron'))) await ctx.host.services.enableNow('system', 'cron');
}

/** The guard, run now (it restarts the gateway itself when it changed something). */
export async function runGuardNow(ctx: DoctorContext): Promise<void> {
  const outcome = await runGuard(ctx.host, { check: false });
  if (outcome.restarted) ctx.gatewayRestarted = true;
}

/** The channel's nginx site written again from channel.env, kept only with a passing nginx -t; nginx restarted. */
export async function writeNginxSite(ctx: DoctorContext): Promise<void | false> {
  if (ctx.nginxRestarted) return false;
  let site: string;
  try {
    site = productionSiteFromEnv((await ctx.channelEnv()) ?? {});
  } catch (error) {
    throw new DeployError(`${LAYOUT.channelEnv}: ${(error as Error).message}`, 'run `service-deploy install --channel`');
  }
  await replaceNginxSite(ctx, desired(NGINX_SITE, site));
}

/** nginx restarted, after nginx -t. */
export async function restartNginx(ctx: DoctorContext): Promise<void | false> {
  const { host } = ctx;
  if (ctx.nginxRestarted) return false;
  const test = await host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
  if (test.exitCode !== 0) throw new DeployError(`nginx -t fails: ${host.redactor.redact(test.stderr.trim())}`, 'fix the nginx configuration first');
  await host.services.restart('system', 'nginx');
  ctx.nginxRestarted = true;
}

/** Debian's default site disabled and nginx's sandbox drop-in written (the nginx the install brought). */
export async function hardenNginx(ctx: DoctorContext): Promise<void | false> {
  const { host } = ctx;
  if (!(await nginxIsOurs(host))) return false;
  const { changes, plan } = await planNginxHardening(host);
  if (changes.length === 0) return false;
  await applyNginxHardening(host, plan);
  if (plan.dropIn) ctx.nginxRestarted = true;
}

/** The channel port's connection limits loaded again from their file, their unit enabled. */
export async function loadChannelLimits({ host }: DoctorContext): Promise<void> {
  const unit = LAYOUT.channelFirewallUnit;
  // The file replaces the table in one transaction; the unit loads it at boot.
  await host.exec.run('nft', ['-f', host.paths.real(LAYOUT.channelFirewallRules)], { timeoutMs: 30_000 });
  await host.services.enable('system', unit);
  if (!(await host.services.isActive('system', unit))) await host.exec.run('systemctl', ['start', unit], { timeoutMs: 60_000 });
}

/** Linger and the gateway unit enabled, the user units reloaded, the gateway restarted (once, after the guard's own restart only when something else changed). */
export async function restartGateway(ctx: DoctorContext): Promise<void | false> {
  const { host } = ctx;
  if (ctx.gatewayRestarted && !ctx.gatewayRestartWanted) return false;
  if (!(await host.files.exists(LAYOUT.lingerFile))) await host.exec.run('loginctl', ['enable-linger', 'root']);
  if (!(await host.services.isEnabled('user', LAYOUT.gatewayUnit))) await host.services.enable('user', LAYOUT.gatewayUnit);
  await host.services.daemonReload('user');
  await host.services.restart('user', LAYOUT.gatewayUnit);
  ctx.gatewayRestarted = true;
  ctx.gatewayRestartWanted = false;
}
