import { LAYOUT } from '../../layout.js';
import { guardCron, guardScript } from '../../steps/guard.js';
import { octal, planFile } from '../../pipeline/files.js';
import { fail, lazyFix, pass, warn, type Check } from '../types.js';
import { answersFinding } from '../findings.js';
import { filesFix } from './files.js';

export const cronFix = lazyFix(
  { id: 'cron', title: 'write the guard script and its hourly cron entry; start cron', phase: 'config' },
  async () => (await import('../fixes.js')).writeGuardCron,
);
/** The guard run now: what it restores every hour, restored at once (many checks' findings name it). */
export const guardFix = lazyFix(
  { id: 'guard', title: 'run the guard: providers, default model, gateway.auth, secret references and their source, channel drop-in and channel.env mode', phase: 'config' },
  async () => (await import('../fixes.js')).runGuardNow,
);

/** The guard runs hourly: older than this and a run was missed. */
const STALE_MS = 2 * 3600_000;

export const guardCronCheck: Check = {
  id: 'guard-cron',
  title: 'Gateway enforcer cron present, last run',
  fixes: [cronFix, guardFix],
  async run(ctx) {
    const { host } = ctx;
    const stored = await ctx.answersRead();
    const answers = stored.answers;
    if (!answers) return answersFinding(stored, 'the guard cannot run without them');
    const [cron, script, binary, last, cronInfo, cronActive] = await Promise.all([
      planFile(host, guardCron(answers.meshHostname)),
      planFile(host, guardScript()),
      host.files.stat(LAYOUT.binary),
      ctx.lastGuardRun(),
      host.files.stat(LAYOUT.guardCron),
      ctx.unit('system', 'cron').then((u) => u.active),
    ]);
    const wrong = [cron, script].filter((c) => c !== undefined).map((c) => c!.summary);
    if (wrong.length > 0) {
      return fail(`the hourly enforcer is not in place (${wrong.join('; ')}): nothing restores the routing if it is changed`, 'write the guard script and its cron entry again', {
        commands: ['service-deploy doctor --fix'],
        action: cronFix,
      });
    }
    if (!binary || (binary.mode & 0o111) === 0) {
      const byFiles = await ctx.repairedByFiles(LAYOUT.binary);
      const reinstall = `curl -fsSL ${ctx.profile.setupUrl}/install.sh | sudo bash`;
      return fail(`${LAYOUT.binary} is ${binary ? `not executable (mode ${octal(binary.mode)})` : 'missing'}: the guard script has nothing to run`, byFiles ? 'put it back (doctor --fix: this binary is the recorded one)' : 'install it again with install.sh (it checks the download)', {
        commands: byFiles ? ['service-deploy doctor --fix'] : binary ? [`chmod 755 ${LAYOUT.binary}`] : [reinstall],
        ...(byFiles ? { action: filesFix } : {}),
      });
    }
    if (!cronActive) {
      return fail('cron is not running: the hourly guard never runs', 'start cron and enable it at boot', { commands: ['systemctl enable --now cron'], action: cronFix });
    }
    const now = host.now().getTime();
    if (!last) {
      const age = cronInfo ? now - cronInfo.mtimeMs : 0;
      if (age > STALE_MS) return warn('the guard has never logged a run although its cron entry is older than 2 hours', 'check that cron runs (systemctl status cron) and run the guard once by hand', { commands: ['systemctl status cron', 'bash /usr/local/bin/service-guard.sh'] });
      return pass('cron entry in place; no run logged yet (it runs hourly)');
    }
    const ago = Math.round((now - last.at.getTime()) / 60_000);
    const when = `${ago} min ago`;
    if (last.message.startsWith('failed')) {
      return fail(`the guard's last run (${when}) failed: ${host.redactor.redact(last.message.replace(/^failed: /, ''))}`, 'run it by hand to see the error, and fix what it names', { commands: ['bash /usr/local/bin/service-guard.sh', 'journalctl -t service-guard -n 20'] });
    }
    if (now - last.at.getTime() > STALE_MS) {
      return warn(`the guard last ran ${when} (hourly expected)`, 'check that cron runs (systemctl status cron) and the guard works by hand', { commands: ['systemctl status cron', 'bash /usr/local/bin/service-guard.sh'] });
    }
    return pass(`last run ${when}: ${host.redactor.redact(last.message)}`);
  },
};
