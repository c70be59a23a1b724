// Single damages on the real server (issue 13): a part of the sandbox damage suite
// (test/doctor/damage.test.ts) run against the booted container, where the files,
// owners, modes, nginx, cron and systemd are real. Chosen so that no repair restarts
// the gateway (each restart costs the 10-30 s it takes to answer again): that path is
// the sandbox suite's and step 6's.
import path from 'node:path';
import { expect } from 'vitest';
import { log, seconds, type World } from './harness.js';

interface Finding {
  id: string;
  status: string;
  message: string;
  fixable: boolean;
  commands?: string[];
}

export interface E2eDamage {
  what: string;
  /** The file or part a finding must name. */
  names: RegExp;
  /** Shell (as root in the container) that does the damage. */
  damage: string;
  /** true: every finding fixable and `doctor --fix` makes doctor clean; false: a command for a person. */
  fixable: boolean;
  /** Paths saved before the damage and put back after a damage doctor does not repair. */
  save?: string[];
}

const QMD_PACKAGE = '/opt/service-deploy/qmd/node_modules/@tobilu/qmd/package.json';
const TLS_KEY = '/etc/service-deploy/tls/channel.key';

export const E2E_DAMAGES: E2eDamage[] = [
  { what: 'chmod 0644 answers.json', names: /answers\.json/, damage: 'chmod 644 /var/lib/service-deploy/answers.json', fixable: true },
  { what: 'chmod 0644 openclaw.json', names: /openclaw\.json/, damage: 'chmod 644 /root/.openclaw/openclaw.json', fixable: true },
  { what: 'chmod 0640 channel.env', names: /channel\.env/, damage: 'chmod 640 /root/.openclaw/channel.env', fixable: true },
  { what: 'chmod 0644 nginx site', names: /service-channel\.conf/, damage: 'chmod 644 /etc/nginx/conf.d/service-channel.conf', fixable: true },
  { what: 'chmod 0644 TLS key', names: /channel\.key/, damage: `chmod 644 ${TLS_KEY}`, fixable: true },
  { what: 'chown nobody TLS key', names: /channel\.key/, damage: `chown nobody:nogroup ${TLS_KEY}`, fixable: true },
  { what: 'chmod 0666 cron entry', names: /cron\.d\/service-guard/, damage: 'chmod 666 /etc/cron.d/service-guard', fixable: true },
  { what: 'delete the cron entry', names: /cron\.d\/service-guard/, damage: 'rm /etc/cron.d/service-guard', fixable: true },
  { what: 'truncate the guard script', names: /service-guard\.sh/, damage: ': >/usr/local/bin/service-guard.sh', fixable: true },
  { what: 'delete /usr/local/bin/openclaw', names: /\/usr\/local\/bin\/openclaw/, damage: 'rm /usr/local/bin/openclaw', fixable: true },
  { what: 'chmod 0755 /root/.openclaw', names: /\/root\/\.openclaw\b/, damage: 'chmod 755 /root/.openclaw', fixable: true },
  { what: 'chmod 0755 /var/lib/service-deploy', names: /\/var\/lib\/service-deploy\b/, damage: 'chmod 755 /var/lib/service-deploy', fixable: true },
  { what: 'nginx site without the knock check', names: /service-channel\.conf/, damage: "sed -i '/http_x_service_gateway/,/}/d' /etc/nginx/conf.d/service-channel.conf && ! grep -q http_x_service_gateway /etc/nginx/conf.d/service-channel.conf", fixable: true },
  { what: 'cron stopped', names: /cron/, damage: 'systemctl stop cron', fixable: true },
  { what: 'nginx stopped', names: /18790/, damage: 'systemctl stop nginx', fixable: true },
  { what: 'QMD downgraded', names: /QMD 2\.0\.0/, damage: `sed -i 's/"version": "2.8.3"/"version": "2.0.0"/' ${QMD_PACKAGE} && grep -q 2.0.0 ${QMD_PACKAGE}`, fixable: false, save: [QMD_PACKAGE] },
  { what: 'the manifest deleted', names: /manifest\.json/, damage: 'rm /var/lib/service-deploy/manifest.json', fixable: false, save: ['/var/lib/service-deploy/manifest.json'] },
  { what: 'TLS key replaced by another key', names: /channel\.key/, damage: `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out ${TLS_KEY} 2>/dev/null`, fixable: false, save: [TLS_KEY] },
  { what: 'the link to the OpenClaw that runs deleted (the gateway still answers)', names: /openclaw-current/, damage: 'rm /opt/service-deploy/openclaw-current', fixable: false, save: ['/opt/service-deploy/openclaw-current'] },
];

// Expected on this stand-in server: `os` warns (Debian), `channel-limits` warns (a
// container without CAP_NET_ADMIN: nftables cannot be used; step 2 asserts that warning),
// and `gateway-memory` warns where the container's root user manager has no memory
// controller (step 5c asserts the warning agrees with the cgroup facts).
const expectedWarn = new Set(['channel-limits', 'gateway-memory']);
const notPass = (checks: Finding[]) => checks.filter((c) => c.status !== 'pass' && c.status !== 'skip' && c.id !== 'os' && !(expectedWarn.has(c.id) && c.status === 'warn'));

/**
 * For each damage: do it, `doctor --fix --json`; doctor must name it; the fixable ones
 * are repaired (a fresh `doctor --json` is clean but for the `os` warning of the
 * Debian stand-in); the others name a command, and are put back from a saved copy.
 */
export async function runE2eDamages(world: World): Promise<Record<string, unknown>> {
  const c = world.container;
  const started = Date.now();
  const first = notPass((await world.deploy('doctor --json')).json.checks);
  expect(first.map((f) => `${f.id}: ${f.message}`), 'doctor before the damages').toEqual([]);
  const results: Array<{ what: string; named: boolean; fixable: boolean; clean: boolean; ms: number }> = [];
  await c.ok('rm -rf /root/e2e/damage && mkdir -p /root/e2e/damage && chmod 700 /root/e2e/damage');
  for (const [n, dmg] of E2E_DAMAGES.entries()) {
    const t = Date.now();
    // Not `cp -a --parents`: Debian 12's coreutils 9.1 fails it on an absolute source
    // when preserving modes ("No such file or directory", fixed in 9.2).
    for (const p of dmg.save ?? []) await c.ok(`mkdir -p /root/e2e/damage${path.posix.dirname(p)} && cp -a ${p} /root/e2e/damage${p}`);
    await c.ok(dmg.damage);
    const fixed = await world.deploy('doctor --fix --json');
    const before: Finding[] = notPass(fixed.json.before ?? fixed.json.checks);
    const shown = before.map((f) => `${f.id}${f.fixable ? '*' : ''}: ${f.message}`).join('\n');
    const named = before.some((f) => dmg.names.test(f.message));
    const fixable = before.length > 0 && before.every((f) => f.fixable);
    expect(named, `${n + 1}. ${dmg.what}: doctor did not name ${dmg.names}:\n${shown}`).toBe(true);
    expect(fixable, `${n + 1}. ${dmg.what}: fixable findings (*):\n${shown}`).toBe(dmg.fixable);
    let left: Finding[];
    if (dmg.fixable) {
      // --fix's own re-check (every check run again after the repairs); the sandbox suite
      // also proves it with a fresh doctor process for every fixable damage.
      left = notPass(fixed.json.checks);
    } else {
      for (const f of notPass(fixed.json.checks)) expect(f.commands?.length ?? 0, `${dmg.what}: ${f.id} names no command`).toBeGreaterThan(0);
      for (const p of dmg.save ?? []) await c.ok(`cp -a /root/e2e/damage${p} ${p}`);
      left = notPass((await world.deploy('doctor --json')).json.checks);
    }
    expect(left.map((f) => `${f.id}: ${f.message}`), `${n + 1}. ${dmg.what}: doctor after ${dmg.fixable ? '--fix' : 'putting it back'}`).toEqual([]);
    results.push({ what: dmg.what, named, fixable, clean: left.length === 0, ms: Date.now() - t });
  }
  const named = results.filter((r) => r.named).length;
  const fixable = results.filter((r) => r.fixable);
  log(`damages on the real server: ${results.length} kinds, ${named} named by doctor, ${fixable.length} repaired by doctor --fix (fresh doctor clean: ${fixable.filter((r) => r.clean).length}), ${results.length - fixable.length} named with a command; ${seconds(Date.now() - started)}`);
  return { kinds: results.length, named, fixable: fixable.length, repaired: fixable.filter((r) => r.clean).length, ms: Date.now() - started, results };
}
