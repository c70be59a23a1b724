// Crafted backup archives on a real `/` (issue 12): restore runs as root in the booted
// container, where no sandbox folder stands between an archive and the system. Every
// refused archive must be refused (exit 2, naming the entry) and one that restore
// accepts must get the install's modes; hashes of /etc, /usr, /root and /var/lib
// before and after prove nothing outside the backup's paths changed.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { craftedArchives, entriesOf, gzip, oneGiBArchive, tarBytes } from '../helpers/crafted-archives.js';
import type { World } from './harness.js';

/** The backup's roots (restore replaces them) and what changes under a running system by itself. */
const NOT_HASHED = [
  '/root/.openclaw', '/var/lib/service-deploy', '/root/.config/systemd/user/openclaw-gateway.service',
  '/root/.config/systemd/user/openclaw-gateway.service.d', '/etc/nginx/conf.d/service-channel.conf',
  '/etc/service-deploy/tls', '/etc/cron.d/service-guard', '/usr/local/bin/service-guard.sh', '/root/.config/qmd',
  // the test's own inputs, download caches (bind mounts), and state services keep by themselves
  '/root/e2e', '/root/.npm', '/root/.cache', '/var/lib/systemd', '/var/lib/tailscale', '/var/lib/nginx', '/var/lib/private', '/var/lib/logrotate',
];

/** One line per path under /etc /usr /root /var/lib: type, mode, owner, size, content hash or link target. */
async function systemHashes(world: World): Promise<Map<string, string>> {
  const prune = NOT_HASHED.map((p) => `-path ${p} -prune`).join(' -o ');
  const out = await world.container.ok(
    `find /etc /usr /root /var/lib -xdev \\( ${prune} \\) -o -printf '%p\\t%y %m %U:%G %s %l\\n' | LC_ALL=C sort >/root/e2e/meta.txt
find /etc /usr /root /var/lib -xdev \\( ${prune} \\) -o -type f -print0 | xargs -0 -r -P 2 sha256sum | LC_ALL=C sort -k 2 >/root/e2e/sums.txt
wc -l </root/e2e/meta.txt`,
    { timeoutMs: 10 * 60_000 },
  );
  const map = new Map<string, string>();
  for (const line of fs.readFileSync(world.container.hostPath('/root/e2e/meta.txt'), 'utf8').split('\n')) {
    const tab = line.indexOf('\t');
    if (tab > 0) map.set(line.slice(0, tab), line.slice(tab + 1));
  }
  for (const line of fs.readFileSync(world.container.hostPath('/root/e2e/sums.txt'), 'utf8').split('\n')) {
    const m = /^([0-9a-f]{64}) {2}(.*)$/.exec(line);
    if (m) map.set(m[2]!, `${map.get(m[2]!) ?? ''} ${m[1]}`);
  }
  expect(map.size).toBe(Number(out.trim()));
  return map;
}

function differences(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of before) if (after.get(k) !== v) out.push(`${k}: ${v} -> ${after.get(k) ?? '(gone)'}`);
  for (const [k, v] of after) if (!before.has(k)) out.push(`${k}: new ${v}`);
  return out;
}

export interface CraftedReport {
  refused: number;
  sanitized: number;
  pathsHashed: number;
  hashMs: number;
}

/** Runs every crafted archive through `service-deploy restore` on the container's real root. */
export async function craftedArchivesOnRealRoot(world: World, realBackup: string): Promise<CraftedReport> {
  const c = world.container;
  const dir = '/root/e2e/crafted';
  await c.ok(`mkdir -p ${dir} && chmod 700 ${dir} && cp ${realBackup} ${dir}/genuine.tar.gz`);
  const refused = craftedArchives({ sparseGiB: await oneGiBArchive() }).filter((a) => a.expect === 'refused');
  for (const a of refused) fs.writeFileSync(c.hostPath(`${dir}/${a.id}.tar.gz`), a.bytes, { mode: 0o600 });

  // The genuine backup of step 7 with a setuid executable, a world-writable file and a
  // setgid+sticky world-writable folder added: accepted, with those bits cleared.
  const genuine = await entriesOf(fs.readFileSync(c.hostPath(`${dir}/genuine.tar.gz`)));
  const ws = 'root/.openclaw/workspace';
  const sanitized = gzip(tarBytes([
    ...genuine,
    { name: `${ws}/crafted-setuid`, mode: 0o4755, data: '#!/bin/sh\nid\n' },
    { name: `${ws}/crafted-shared/`, type: '5', mode: 0o3777 },
    { name: `${ws}/crafted-shared/open.txt`, mode: 0o666, data: 'x\n' },
  ]));
  fs.writeFileSync(c.hostPath(`${dir}/sanitized.tar.gz`), sanitized, { mode: 0o600 });

  let t = Date.now();
  const before = await systemHashes(world);
  const hashMs = Date.now() - t;
  for (const a of refused) {
    const r = await world.deploy(`restore ${dir}/${a.id}.tar.gz`);
    const output = `${r.stdout}\n${r.stderr}`;
    expect(output, a.id).not.toContain('Internal error');
    expect(r.exitCode, `${a.id} (${a.what}):\n${output}`).toBe(2);
    expect(output, a.id).toMatch(a.mention);
  }
  const restored = await world.deploy(`restore ${dir}/sanitized.tar.gz --json`, { answers: true, timeoutMs: 10 * 60_000 });
  expect(restored.exitCode, `${restored.stdout.slice(-2000)}\n${restored.stderr.slice(-2000)}`).toBe(0);
  const modes = await c.ok(`stat -c '%n %a %U' /${ws}/crafted-setuid /${ws}/crafted-shared /${ws}/crafted-shared/open.txt /root/.openclaw/openclaw.json /var/lib/service-deploy/answers.json`);
  expect(modes.trim().split('\n')).toEqual([
    `/${ws}/crafted-setuid 755 root`,
    `/${ws}/crafted-shared 755 root`,
    `/${ws}/crafted-shared/open.txt 644 root`,
    '/root/.openclaw/openclaw.json 600 root',
    '/var/lib/service-deploy/answers.json 600 root',
  ]);
  t = Date.now();
  const after = await systemHashes(world);
  expect(differences(before, after), 'paths outside the backup changed').toEqual([]);
  await c.ok(`rm -rf ${dir} /${ws}/crafted-setuid /${ws}/crafted-shared /root/e2e/meta.txt /root/e2e/sums.txt`);
  return { refused: refused.length, sanitized: 1, pathsHashed: before.size, hashMs: Math.max(hashMs, Date.now() - t) };
}

export const CRAFTED_ARCHIVES_DIR = path.posix.join('/root/e2e', 'crafted');
