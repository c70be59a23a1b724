import { productionSiteFromEnv } from '../channel/nginx.js';
import { DeployError } from '../errors.js';
import { runGuard } from '../guard/index.js';
import { LAYOUT } from '../layout.js';
import { guardCron, guardScript } from '../steps/guard.js';
import { writeDesired } from '../pipeline/files.js';
import type { DoctorContext } from './context.js';
import type { FixActionId } from './types.js';

export interface FixAction {
  id: FixActionId;
  title: string;
  run(ctx: DoctorContext): Promise<void>;
}

/**
 * The safe repairs, in the order --fix runs them: files first, then the guard (config,
 * channel.env mode, drop-in; restarts the gateway if it changed anything), nginx, and
 * a plain gateway restart last, skipped when the guard already restarted it.
 */
export const FIX_ACTIONS: readonly FixAction[] = [
  {
    id: 'cron',
    title: 'write the guard script and its hourly cron entry',
    async run(ctx) {
      const answers = await ctx.answers();
      if (!answers) throw new DeployError('no stored answers', 'run `service-deploy install`');
      await writeDesired(ctx.host, guardScript());
      await writeDesired(ctx.host, guardCron(answers.meshHostname));
    },
  },
  {
    id: 'guard',
    title: 'run the guard: providers, default model, gateway.auth, secret references and their source, channel drop-in and channel.env mode',
    async run(ctx) {
      const outcome = await runGuard(ctx.host, { check: false });
      if (outcome.restarted) ctx.gatewayRestarted = true;
    },
  },
  {
    id: 'nginx-site',
    title: 'write the channel nginx site from channel.env, nginx -t, restart nginx',
    async run(ctx) {
      const { host } = ctx;
      let site: string;
      try {
        site = productionSiteFromEnv((await ctx.channelEnv()) ?? {});
      } catch (error) {
        throw new DeployError(`${LAYOUT.channelEnv}: ${(error as Error).message}`, 'run `service-deploy install --channel`');
      }
      const previous = await host.files.read(LAYOUT.nginxSite);
      const previousMode = (await host.files.stat(LAYOUT.nginxSite))?.mode ?? 0o600;
      await host.files.write(LAYOUT.nginxSite, site, { mode: 0o600 });
      const test = await host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
      if (test.exitCode !== 0) {
        // Never leave nginx with a site it rejects: put the old one back.
        if (previous === undefined) await host.files.remove(LAYOUT.nginxSite);
        else await host.files.write(LAYOUT.nginxSite, previous, { mode: previousMode });
        throw new DeployError(`nginx -t still fails with the rewritten site (the previous one was put back): ${host.redactor.redact(test.stderr.trim())}`, 'another nginx file is at fault: see `nginx -t`');
      }
      await host.services.restart('system', 'nginx');
    },
  },
  {
    id: 'nginx-restart',
    title: 'restart nginx (after nginx -t)',
    async run({ host }) {
      const test = await host.exec.run('nginx', ['-t'], { allowFailure: true, timeoutMs: 60_000 });
      if (test.exitCode !== 0) throw new DeployError(`nginx -t fails: ${host.redactor.redact(test.stderr.trim())}`, 'fix the nginx configuration first');
      await host.services.restart('system', 'nginx');
    },
  },
  {
    id: 'channel-limits',
    title: 'load the channel port\'s connection limits again (nft -f of their file) and enable their unit',
    async run({ host }) {
      const unit = LAYOUT.channelFirewallUnit;
      // The file replaces the table in one transaction; the unit loads it at boot.
      await host.exec.run('nft', ['-f', host.paths.real(LAYOUT.channelFirewallRules)], { timeoutMs: 30_000 });
      await host.services.enable('system', unit);
      if (!(await host.services.isActive('system', unit))) await host.exec.run('systemctl', ['start', unit], { timeoutMs: 60_000 });
    },
  },
  {
    id: 'gateway-restart',
    title: 'enable linger, reload the user units and restart the gateway',
    async run(ctx) {
      const { host } = ctx;
      if (ctx.gatewayRestarted) return;
      if (!(await host.files.exists(LAYOUT.lingerFile))) await host.exec.run('loginctl', ['enable-linger', 'root']);
      await host.services.daemonReload('user');
      await host.services.restart('user', LAYOUT.gatewayUnit);
      ctx.gatewayRestarted = true;
    },
  },
];
