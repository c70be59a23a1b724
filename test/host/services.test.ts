import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingPackages } from '../../src/host/apt.js';
import { createHost } from '../../src/host/index.js';
import { standIn } from '../helpers/install-ctx.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A host whose systemctl answers `show` from $STATES/<unit> (three lines: ActiveState,
 * UnitFileState, MainPID; a missing file: what systemd says of an unknown unit) and
 * whose dpkg-query knows the packages listed in $STATES/dpkg; every call is logged.
 */
function host(options: { systemctlFails?: boolean } = {}) {
  const bin = tempDir('sd-svc-bin-');
  const states = tempDir('sd-svc-states-');
  const log = path.join(states, 'calls');
  standIn(
    bin,
    'systemctl',
    `#!/bin/sh
printf "%s\\n" "systemctl $*" >>${log}
${options.systemctlFails ? 'echo "Failed to connect to bus" >&2; exit 1' : ''}
[ "$1" = --user ] && shift
[ "$1" = show ] || exit 1
shift
first=1
for unit in "$@"; do
  case "$unit" in -*) continue ;; esac
  [ "$first" = 1 ] || echo
  first=0
  if [ -f "${states}/$unit" ]; then cat "${states}/$unit"; else printf 'ActiveState=inactive\\nUnitFileState=\\nMainPID=0\\n'; fi
done
`,
  );
  standIn(
    bin,
    'dpkg-query',
    `#!/bin/sh
printf "%s\\n" "dpkg-query $*" >>${log}
for a in "$@"; do
  case "$a" in -*) continue ;; esac
  if grep -qx "$a" ${states}/dpkg 2>/dev/null; then echo "$a install ok installed"; else echo "dpkg-query: no packages found matching $a" >&2; fi
done
`,
  );
  const unit = (name: string, active: string, file: string, pid = 0, more = '') => fs.writeFileSync(path.join(states, name), `ActiveState=${active}\nUnitFileState=${file}\nMainPID=${pid}\n${more}`);
  const calls = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []);
  return { host: createHost({ env: { PATH: `${bin}:/usr/bin:/bin` }, quiet: true }), unit, calls, dpkg: (names: string[]) => fs.writeFileSync(path.join(states, 'dpkg'), `${names.join('\n')}\n`) };
}

describe('services: the questions asked together are one systemctl show', () => {
  it('is-active, is-enabled and MainPID of several units asked at once: one process, each answer its own', async () => {
    const { host: h, unit, calls } = host();
    unit('gateway.service', 'active', 'enabled', 4242);
    unit('timer.timer', 'inactive', 'disabled');
    const [gatewayActive, gatewayEnabled, pid, timerActive, timerEnabled, unknown] = await Promise.all([
      h.services.isActive('user', 'gateway.service'),
      h.services.isEnabled('user', 'gateway.service'),
      h.services.mainPid('user', 'gateway.service'),
      h.services.isActive('user', 'timer.timer'),
      h.services.isEnabled('user', 'timer.timer'),
      h.services.isActive('user', 'nothing.service'),
    ]);
    expect([gatewayActive, gatewayEnabled, pid, timerActive, timerEnabled, unknown]).toEqual([true, true, 4242, false, false, false]);
    expect(calls()).toEqual(['systemctl --user show --property=ActiveState,UnitFileState,MainPID,MemoryMax,MemoryHigh,MemoryCurrent,ControlGroup gateway.service timer.timer nothing.service']);
  });

  it('succeeds for the states `systemctl is-active` and `is-enabled` succeed for, and only those', async () => {
    const { host: h, unit } = host();
    const cases: Array<[string, string, boolean, boolean]> = [
      ['active', 'enabled', true, true],
      ['reloading', 'enabled-runtime', true, true],
      ['refreshing', 'static', true, true],
      ['activating', 'alias', false, true],
      ['deactivating', 'indirect', false, true],
      ['failed', 'generated', false, true],
      ['inactive', 'disabled', false, false],
      ['inactive', 'masked', false, false],
      ['inactive', 'linked', false, false],
      ['inactive', 'bad', false, false],
    ];
    cases.forEach(([active, file], i) => unit(`u${i}.service`, active, file));
    const answers = await Promise.all(cases.map(async (_, i) => [await h.services.isActive('system', `u${i}.service`), await h.services.isEnabled('system', `u${i}.service`)]));
    expect(answers).toEqual(cases.map(([, , active, enabled]) => [active, enabled]));
  });

  it('asks again for a later question (a state read once is not kept), and system and user units apart', async () => {
    const { host: h, unit, calls } = host();
    unit('gateway.service', 'inactive', 'disabled');
    expect(await h.services.isActive('user', 'gateway.service')).toBe(false);
    unit('gateway.service', 'active', 'enabled', 7);
    expect(await h.services.isActive('user', 'gateway.service')).toBe(true);
    await Promise.all([h.services.isActive('system', 'cron'), h.services.isActive('user', 'gateway.service')]);
    const made = calls();
    expect(made.slice(0, 2)).toEqual([
      'systemctl --user show --property=ActiveState,UnitFileState,MainPID,MemoryMax,MemoryHigh,MemoryCurrent,ControlGroup gateway.service',
      'systemctl --user show --property=ActiveState,UnitFileState,MainPID,MemoryMax,MemoryHigh,MemoryCurrent,ControlGroup gateway.service',
    ]);
    // The last two run at the same time: a busy machine may record either one first.
    expect(made.slice(2).sort()).toEqual([
      'systemctl --user show --property=ActiveState,UnitFileState,MainPID,MemoryMax,MemoryHigh,MemoryCurrent,ControlGroup gateway.service',
      'systemctl show --property=ActiveState,UnitFileState,MainPID,MemoryMax,MemoryHigh,MemoryCurrent,ControlGroup cron',
    ]);
  });

  it('the resource control the manager applies (MemoryMax computed from a percentage, the cgroup) comes in the same answer', async () => {
    const { host: h, unit, calls } = host();
    const cgroup = '/user.slice/user-0.slice/user@0.service/app.slice/gateway.service';
    unit('gateway.service', 'active', 'enabled', 4242, `MemoryMax=3221225472\nMemoryHigh=2791728742\nMemoryCurrent=512000000\nControlGroup=${cgroup}\n`);
    const [active, resources, unknown] = await Promise.all([h.services.isActive('user', 'gateway.service'), h.services.resources('user', 'gateway.service'), h.services.resources('user', 'nothing.service')]);
    expect(active).toBe(true);
    expect(resources).toEqual({ memoryMax: '3221225472', memoryHigh: '2791728742', memoryCurrent: '512000000', controlGroup: cgroup });
    expect(unknown).toEqual({ memoryMax: undefined, memoryHigh: undefined, memoryCurrent: undefined, controlGroup: undefined });
    expect(calls()).toHaveLength(1);
  });

  it('a manager that cannot be reached: nothing active or enabled, no pid, as is-active and is-enabled said', async () => {
    const { host: h } = host({ systemctlFails: true });
    expect(await Promise.all([h.services.isActive('user', 'a.service'), h.services.isEnabled('user', 'a.service'), h.services.mainPid('user', 'a.service')])).toEqual([false, false, undefined]);
  });
});

describe('services.mainProcess: how a starting unit is, or no answer', () => {
  it('a running process, its restarts; a crashed one waiting out RestartSec, with how it ended', async () => {
    const { host: h, unit, calls } = host();
    unit('gateway.service', 'active', 'enabled', 4242, 'SubState=running\nNRestarts=2\nResult=success\nExecMainCode=0\nExecMainStatus=0\n');
    expect(await h.services.mainProcess('user', 'gateway.service')).toEqual({ pid: 4242, activeState: 'active', subState: 'running', restarts: 2, result: 'success', lastExit: undefined });
    expect(calls().at(-1)).toBe('systemctl --user show --property=ActiveState,SubState,MainPID,NRestarts,Result,ExecMainCode,ExecMainStatus gateway.service');
    unit('gateway.service', 'activating', 'enabled', 0, 'SubState=auto-restart\nNRestarts=3\nResult=signal\nExecMainCode=2\nExecMainStatus=9\n');
    expect(await h.services.mainProcess('user', 'gateway.service')).toEqual({ pid: undefined, activeState: 'activating', subState: 'auto-restart', restarts: 3, result: 'signal', lastExit: 'signal KILL' });
    unit('gateway.service', 'failed', 'enabled', 0, 'SubState=failed\nNRestarts=0\nResult=exit-code\nExecMainCode=1\nExecMainStatus=78\n');
    expect((await h.services.mainProcess('user', 'gateway.service'))?.lastExit).toBe('exit status 78');
  });

  it('a manager that does not answer is no answer (undefined), not a stopped unit', async () => {
    const { host: h } = host({ systemctlFails: true });
    expect(await h.services.mainProcess('user', 'gateway.service')).toBeUndefined();
  });
});

describe('apt: the packages asked about together are one dpkg-query', () => {
  it('two steps asking at once: one process, each gets the missing ones of its own list', async () => {
    const { host: h, dpkg, calls } = host();
    dpkg(['nginx', 'cron', 'google-chrome-stable']);
    const [system, browser] = await Promise.all([missingPackages(h, ['nginx', 'cron', 'openssl']), missingPackages(h, ['google-chrome-stable'])]);
    expect(system).toEqual(['openssl']);
    expect(browser).toEqual([]);
    expect(calls()).toEqual(['dpkg-query -W -f=${Package} ${Status}\\n nginx cron openssl google-chrome-stable']);
    // A later question is asked afresh.
    dpkg(['nginx', 'cron', 'openssl']);
    expect(await missingPackages(h, ['openssl', 'google-chrome-stable'])).toEqual(['google-chrome-stable']);
    expect(calls()).toHaveLength(2);
  });
});
