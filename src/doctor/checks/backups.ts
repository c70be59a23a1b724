import { LAYOUT } from '../../layout.js';
import { pass, skip, warn, type Check } from '../types.js';

function age(ms: number): string {
  const h = ms / 3600_000;
  return h < 48 ? `${Math.max(0, Math.round(h * 10) / 10)} h` : `${Math.round(h / 24)} days`;
}

/**
 * With a backup schedule (`service-deploy backup --every ...`): the timer runs, and
 * the newest backup is not older than two periods (one missed run is tolerated).
 * Without a schedule there is nothing to judge.
 */
export const backupsCheck: Check = {
  id: 'backups',
  title: 'Scheduled backups: timer running, age of the last backup',
  async run(ctx) {
    const { host } = ctx;
    const none = skip(`no backup schedule (service-deploy backup --every 24h sets one)`);
    // No timer file, no schedule (readSchedule says the same): the backup code (its archive
    // writer and reader, zlib) is loaded only where there is one.
    if (!(await host.files.exists(LAYOUT.backupTimerFile))) return none;
    const { listBackups, readSchedule } = await import('../../install/backups.js');
    const schedule = await readSchedule(host);
    if (!schedule) return none;
    const [active, backups, timerInfo] = await Promise.all([
      ctx.unit('system', LAYOUT.backupTimer).then((u) => u.active, () => false),
      listBackups(host),
      host.files.stat(LAYOUT.backupTimerFile),
    ]);
    const now = host.now().getTime();
    const limitMs = 2 * schedule.seconds * 1000;
    if (!active) {
      return warn(`the backup timer ${LAYOUT.backupTimer} is not running: no backup every ${schedule.every}`, 'start it (or set the schedule again)', {
        commands: [`systemctl enable --now ${LAYOUT.backupTimer}`],
      });
    }
    const newest = backups[0];
    if (!newest) {
      const since = timerInfo ? now - timerInfo.mtimeMs : 0;
      if (since > limitMs) {
        return warn(`no backup in ${LAYOUT.backupDir} although the schedule (every ${schedule.every}) was set ${age(since)} ago`, 'run one by hand to see why it fails', {
          commands: ['service-deploy backup', `journalctl -u ${LAYOUT.backupService} -n 30`],
        });
      }
      return pass(`every ${schedule.every}, newest ${schedule.keep} kept; no backup yet`);
    }
    const ago = now - newest.mtimeMs;
    if (ago > limitMs) {
      return warn(`the last backup is ${age(ago)} old (${newest.path}); the schedule is every ${schedule.every}`, 'see why the scheduled run fails, and run one by hand', {
        commands: [`journalctl -u ${LAYOUT.backupService} -n 30`, 'service-deploy backup'],
      });
    }
    return pass(`every ${schedule.every}, newest ${schedule.keep} kept; last backup ${age(ago)} ago (${newest.path}, ${backups.length} in ${LAYOUT.backupDir})`);
  },
};
