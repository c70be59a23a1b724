// The stores half of issue 26 (items 3 and 4) on the real server: logrotate runs nginx's
// own rule over the channel's access log (a forced rotation; nginx reopens its files),
// the runtime starts with our session budget, doctor's `stores` check passes with the
// sizes after the scenario's chats, and the node key expiry the mesh stand-in reports
// (test/e2e/fixtures/tailscale) makes doctor warn 30 days ahead and fail once expired.
// Hooked into server.e2e.ts as one step.
import { expect } from 'vitest';
import { channelPost, type World } from './harness.js';

const ACCESS_LOG = '/var/log/nginx/service-channel.access.log';
const KEY_EXPIRY = '/var/lib/tailscale/e2e-standin/key-expiry';

export interface StoresOnServer {
  /** doctor's `stores` line after the scenario so far (sizes on a real server). */
  stores: string;
  mesh: { later: string; soon: string; expired: string };
}

export async function storesOnServer(world: World): Promise<StoresOnServer> {
  const c = world.container;

  // logrotate (installed by the install on this minbase root) and the rule nginx-common ships.
  expect((await c.ok('command -v logrotate')).trim()).toMatch(/\/logrotate$/);
  expect(await c.ok('cat /etc/logrotate.d/nginx')).toContain('/var/log/nginx/*.log');
  // The scenario's requests are in the log; a forced rotation moves it, and nginx writes
  // the next request to a new file (its postrotate told it to reopen).
  expect(Number((await c.ok(`wc -l <${ACCESS_LOG}`)).trim())).toBeGreaterThan(0);
  await c.ok('logrotate -f /etc/logrotate.d/nginx');
  expect(await c.ok(`test -s ${ACCESS_LOG}.1 && echo rotated`)).toBe('rotated\n');
  const probe = await channelPost({}); // no knock: closed without a response (444), logged
  expect(probe.status).toBeUndefined();
  const logged = await c.sh(`for i in $(seq 1 40); do grep -q ' 444 ' ${ACCESS_LOG} 2>/dev/null && exit 0; sleep 0.25; done; exit 1`, { timeoutMs: 30_000 });
  expect(logged.exitCode, `nginx did not write to a new ${ACCESS_LOG} after the rotation`).toBe(0);

  // The gateway runs with the session budget the install wrote (it is up: step 6's chats).
  expect(world.runtimeConfig().session.maintenance).toEqual({ mode: 'enforce', pruneAfter: '3650d', maxDiskBytes: '512mb' });

  const stores = await world.deploy('doctor --json stores');
  expect(stores.exitCode, stores.stdout).toBe(0);
  const line = stores.json.checks[0];
  expect(line.status, JSON.stringify(line)).toBe('pass');
  expect(line.message).toMatch(/^sessions \(main\) [\d.]+ [KMG]?i?B of 512\.0 MiB, /);

  // The node key: 180 days from the join (an untagged key), then 10 days, then expired.
  const original = (await c.ok(`cat ${KEY_EXPIRY}`)).trim();
  const doctorMesh = async () => {
    const r = await world.deploy('doctor --json mesh');
    return { exitCode: r.exitCode, check: r.json.checks[0] as { status: string; message: string; fix: string } };
  };
  try {
    const later = await doctorMesh();
    expect(later, JSON.stringify(later)).toMatchObject({ exitCode: 0, check: { status: 'pass' } });
    expect(later.check.message).toMatch(/node key expires \d{4}-\d\d-\d\d \(in 1[78]\d days\)$/);
    await c.ok(`date -u -d '+10 days' +%Y-%m-%dT%H:%M:%SZ >${KEY_EXPIRY}`);
    const soon = await doctorMesh();
    expect(soon, JSON.stringify(soon)).toMatchObject({ exitCode: 0, check: { status: 'warn' } });
    expect(soon.check.fix).toContain('Disable key expiry');
    await c.ok(`date -u -d '-1 day' +%Y-%m-%dT%H:%M:%SZ >${KEY_EXPIRY}`);
    const expired = await doctorMesh();
    expect(expired, JSON.stringify(expired)).toMatchObject({ exitCode: 1, check: { status: 'fail' } });
    expect(expired.check.message).toMatch(/expired on \d{4}-\d\d-\d\d/);
    return { stores: line.message, mesh: { later: later.check.message, soon: soon.check.message, expired: expired.check.message } };
  } finally {
    await c.ok(`printf '%s\\n' '${original}' >${KEY_EXPIRY}`);
  }
}
