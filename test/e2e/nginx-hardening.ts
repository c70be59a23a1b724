// Issue 27 items 4-5 on the real server: the nginx the install brought answers nothing on
// port 80 (Debian's default site disabled), and runs in its sandbox drop-in, rated by
// systemd-analyze as the server's systemd applies it, without losing what nginx must do:
// reload, restart, the certificate (every chat goes through TLS), its logs, and a log
// rotation as logrotate does it. The channel's edge suite (knock, limits, the mesh path:
// step 3) runs on this nginx too. Called from server.e2e.ts.
import net from 'node:net';
import { expect } from 'vitest';
import { CHANNEL_ACCESS_LOG } from '../../src/channel/nginx.js';
import { LAYOUT } from '../../src/layout.js';
import { log, type World } from './harness.js';

/** The target on Debian 12 (and what the drop-in must stay under on the other suites). */
const EXPOSURE_TARGET = 5.0;

/** The capabilities the drop-in leaves nginx: CHOWN 0, DAC_OVERRIDE 1, KILL 5, SETGID 6, SETUID 7, NET_BIND_SERVICE 10. */
const CAP_BOUNDING = (1n << 0n) | (1n << 1n) | (1n << 5n) | (1n << 6n) | (1n << 7n) | (1n << 10n);

export interface NginxReport {
  port80FromHost: string;
  port80Inside: string;
  exposure: number;
  exposureLines: string[];
  master: Record<string, string>;
  rotation: string;
}

/** A TCP connection to the server's port 80 from this machine: what it got ("refused" when nothing listens). */
function connect80(host: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port: 80, timeout: 10_000 });
    socket.once('connect', () => {
      socket.end('GET / HTTP/1.0\r\n\r\n');
      let text = '';
      socket.on('data', (c) => (text += c));
      socket.once('close', () => resolve(`answered: ${text.split('\r\n')[0] ?? ''} ${/<title>([^<]*)/.exec(text)?.[1] ?? ''}`.trim()));
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('no answer (timeout)');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED' ? 'refused' : `error ${error.code ?? error.message}`));
  });
}

export async function nginxHardened(world: World, chat: (message: string) => Promise<{ reply: string }>): Promise<NginxReport> {
  const c = world.container;
  // Port 80: nothing listens, from outside or inside; Debian's file stays, its link is gone.
  const port80FromHost = world.server.net ? await connect80(world.address) : 'not measured (the container shares this machine\'s network)';
  const inside = await c.sh('curl -sS -m 10 -o /dev/null -w "%{http_code}" http://127.0.0.1/ 2>&1; echo " exit $?"');
  const port80Inside = inside.stdout.trim();
  const listeners = await c.ok('ss -Hltn');
  log(`nginx: port 80 from this machine: ${port80FromHost}; inside: ${port80Inside}`);
  if (world.server.net) expect(port80FromHost).toBe('refused');
  expect(port80Inside).toMatch(/exit 7$/);
  expect(listeners.split('\n').filter((l) => /[:\]]80\s/.test(l))).toEqual([]);
  expect(await c.ok('test ! -e /etc/nginx/sites-enabled/default && test -f /etc/nginx/sites-available/default && echo ok')).toBe('ok\n');

  // The drop-in as systemd loaded and applied it.
  expect(await c.ok('systemctl show -p DropInPaths --value nginx.service')).toContain(LAYOUT.nginxHardeningDropIn);
  const analyze = await c.sh('systemd-analyze security --no-pager nginx.service', { timeoutMs: 60_000 });
  const exposure = Number(/Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(analyze.stdout)?.[1] ?? NaN);
  const exposureLines = analyze.stdout.split('\n').filter((l) => /^✗|Overall/.test(l.trim())).map((l) => l.replace(/\s+/g, ' ').trim());
  const pid = (await c.ok('systemctl show -p MainPID --value nginx.service')).trim();
  const status = await c.ok(`grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/${pid}/status`);
  const master = Object.fromEntries(status.trim().split('\n').map((l) => l.split(/:\s+/) as [string, string]));
  log(`systemd-analyze security nginx.service: exposure ${exposure} (target <= ${EXPOSURE_TARGET}); master ${JSON.stringify(master)}`);
  expect(exposure, analyze.stdout.slice(-3000)).toBeLessThanOrEqual(EXPOSURE_TARGET);
  expect(BigInt(`0x${master.CapBnd}`)).toBe(CAP_BOUNDING);
  expect(master.NoNewPrivs).toBe('1');
  expect(master.Seccomp).toBe('2');

  // Reload (the install's and doctor's way to take a new site): same master, new config, chat answers.
  expect((await c.sh('systemctl reload nginx.service')).exitCode).toBe(0);
  expect((await c.ok('systemctl show -p MainPID --value nginx.service')).trim()).toBe(pid);
  const lines = async () => Number((await c.ok(`wc -l <${CHANNEL_ACCESS_LOG}`)).trim());
  const before = await lines();
  expect((await chat('after a reload of the sandboxed nginx')).reply).toContain('after a reload of the sandboxed nginx');
  expect(await lines()).toBeGreaterThan(before);

  // Log rotation as logrotate does it: the log moved aside, then its postrotate (the
  // master reopens its logs, creating them as www-data's).
  const logrotate = await c.sh('command -v logrotate');
  const rotate = logrotate.exitCode === 0
    ? await c.sh('logrotate -f /etc/logrotate.d/nginx')
    : await c.sh(`mv ${CHANNEL_ACCESS_LOG} ${CHANNEL_ACCESS_LOG}.1 && sh -c "$(sed -n '/postrotate/,/endscript/p' /etc/logrotate.d/nginx | sed '1d;$d')"`);
  expect(rotate.exitCode, `${rotate.stdout}${rotate.stderr}`).toBe(0);
  expect((await chat('after the log rotation')).reply).toContain('after the log rotation');
  const rotated = await c.ok(`stat -c '%U %a' ${CHANNEL_ACCESS_LOG}; wc -l <${CHANNEL_ACCESS_LOG}; ls ${CHANNEL_ACCESS_LOG}.1*`);
  const [owner, count] = rotated.trim().split('\n');
  const rotation = `${logrotate.exitCode === 0 ? 'logrotate -f' : 'moved aside + its postrotate (logrotate is not installed here)'}: new log ${owner}, ${count} line(s)`;
  log(`nginx log rotation: ${rotation}`);
  expect(owner).toMatch(/^www-data /);
  expect(Number(count)).toBeGreaterThan(0);

  // Restart (a sandbox change, doctor's nginx-restart): active again, the channel answers.
  expect((await c.sh('systemctl restart nginx.service')).exitCode).toBe(0);
  expect((await chat('after a restart of the sandboxed nginx')).reply).toContain('after a restart of the sandboxed nginx');
  return { port80FromHost, port80Inside, exposure, exposureLines, master, rotation };
}
