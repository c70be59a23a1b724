import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Files } from '../../src/host/files.js';
import { PathMap } from '../../src/host/paths.js';
import { processStartTime, tempName } from '../../src/host/temp.js';
import { LEGACY_TEMPS } from '../../src/install/leftovers.js';
import { tempDir } from '../helpers/tmp.js';

describe('temp files: one mark, swept when their maker is gone', () => {
  it('names temp files next to their target with the maker pid and start time', () => {
    const files = new Files(new PathMap(tempDir()));
    const temp = files.tempPathFor('/etc/nginx/conf.d/service-channel.conf');
    expect(temp).toMatch(new RegExp(`^/etc/nginx/conf\\.d/\\.service-channel\\.conf\\.sd-tmp-${process.pid}-${processStartTime(process.pid)}-[0-9a-f]{8}$`));
  });

  it('removes temp files of dead makers only, and earlier versions\' names only where and when they were used', async () => {
    const root = tempDir('sd-sweep-');
    const files = new Files(new PathMap(root));
    const put = (p: string, old = false) => {
      const full = path.join(root, p);
      fs.mkdirSync(path.dirname(full), { recursive: true });
      fs.writeFileSync(full, 'x');
      if (old) fs.utimesSync(full, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    };
    // A process that has exited: its pid (and start time) no longer run.
    const dead = await execa('sh', ['-c', 'echo $$']);
    const deadPid = Number(dead.stdout);
    put(`/root/.openclaw/.openclaw.json.sd-tmp-${deadPid}-12345-0123abcd`);
    fs.mkdirSync(path.join(root, `opt/service-deploy/.node.sd-tmp-${deadPid}-1-89abcdef/node/bin`), { recursive: true });
    // This process is alive: its temp file stays. The same pid with another start time is
    // a maker that died and whose pid was reused: its file goes.
    put(`/root/.openclaw/${tempName('openclaw.json')}`);
    put(`/root/.openclaw/.x.sd-tmp-${process.pid}-1-00000000`);
    // Legacy names: the old mesh key goes at once, the rest once old, and only in their folder.
    put('/var/lib/service-deploy/mesh-auth-key.0123abcd');
    put('/etc/service-deploy/tls/.new-4242', true);
    put('/tmp/openclaw-backup-20261122-101500.tar.gz.partial', true);
    put('/tmp/someone-elses-download.partial', true);
    put('/tmp/.service-channel.conf.tmp-4242-0123abcd');
    put('/root/.openclaw/.openclaw.json.candidate');

    const removed = await files.sweepTemps(['/root/.openclaw', '/opt/service-deploy', '/var/lib/service-deploy', '/etc/service-deploy/tls', '/tmp'], LEGACY_TEMPS);
    expect(removed.sort()).toEqual(
      [
        `/root/.openclaw/.openclaw.json.sd-tmp-${deadPid}-12345-0123abcd`,
        `/opt/service-deploy/.node.sd-tmp-${deadPid}-1-89abcdef`,
        '/var/lib/service-deploy/mesh-auth-key.0123abcd',
        '/etc/service-deploy/tls/.new-4242',
        '/tmp/openclaw-backup-20261122-101500.tar.gz.partial',
        `/root/.openclaw/.x.sd-tmp-${process.pid}-1-00000000`,
      ].sort(),
    );
    const left = (d: string) => fs.readdirSync(path.join(root, d)).sort();
    expect(left('tmp')).toEqual(['.service-channel.conf.tmp-4242-0123abcd', 'someone-elses-download.partial']);
    expect(left('root/.openclaw').filter((n) => n.includes('sd-tmp'))).toHaveLength(1);
    expect(left('root/.openclaw')).toContain('.openclaw.json.candidate'); // new: kept until it is old
  });
});
