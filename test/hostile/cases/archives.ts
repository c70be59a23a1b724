import fs from 'node:fs';
import path from 'node:path';
import { baseEntries, craftedArchives, gzip, tarBytes, type CraftedArchive } from '../../helpers/crafted-archives.js';
import type { Sandbox } from '../../helpers/sandbox.js';
import type { HostileCase } from '../harness.js';

/** Makes a folder above a backup root a symbolic link for one case (an unsafe state restore refuses). */
function parentIsSymlink(rel: string, to: string): (sb: Sandbox) => () => void {
  return (sb) => {
    const full = path.join(sb.root, rel);
    const aside = `${full}.hostile-aside`;
    fs.renameSync(full, aside);
    fs.symlinkSync(to, full);
    return () => {
      fs.rmSync(full);
      fs.renameSync(aside, full);
    };
  };
}

export function archiveCase(a: CraftedArchive): HostileCase {
  return { kind: `restore: ${a.what} (${a.id})`, args: ['restore', `${a.id}.tar.gz`], inputs: { [`${a.id}.tar.gz`]: a.bytes }, mention: a.mention };
}

/** Crafted archives restore refuses (issue 12), plus refusals for an unsafe server. */
export function archiveCases(options: { sparseGiB?: Buffer } = {}): HostileCase[] {
  const valid = gzip(tarBytes([...baseEntries(), { name: 'root/.config/systemd/user/openclaw-gateway.service', data: '[Unit]\n' }]));
  return [
    ...craftedArchives({ sparseGiB: options.sparseGiB })
      .filter((a) => a.expect === 'refused')
      .map(archiveCase),
    {
      kind: 'restore: a folder above a root is a symbolic link',
      args: ['restore', 'valid.tar.gz'],
      inputs: { 'valid.tar.gz': valid },
      tamper: parentIsSymlink('root/.config/systemd', '/tmp'),
      mention: /cannot restore \/root\/\.config\/systemd\/user\/openclaw-gateway\.service: \/root\/\.config\/systemd is a symbolic link/,
    },
    {
      kind: 'restore --check: a folder above a root is a symbolic link',
      args: ['restore', 'valid.tar.gz', '--check'],
      inputs: { 'valid.tar.gz': valid },
      tamper: parentIsSymlink('root/.config/systemd', '/tmp'),
      mention: /\/root\/\.config\/systemd is a symbolic link/,
    },
    {
      kind: 'restore: an archive the size caps refuse unless raised',
      args: ['restore', 'valid.tar.gz', '--max-total-mib', '1', '--max-entry-mib', '1'],
      inputs: { 'valid.tar.gz': gzip(tarBytes([...baseEntries(), { name: 'root/.openclaw/workspace/blob', data: Buffer.alloc(2 * 1024 * 1024, 1) }])) },
      mention: /blob.*over the limit of 1 MiB per entry[\s\S]*--max-entry-mib/s,
    },
    {
      kind: 'restore: an MCP token the service rejects (checked before writing)',
      args: ['restore', 'valid.tar.gz'],
      inputs: { 'valid.tar.gz': valid },
      mention: /rejected the MCP token/,
    },
  ];
}
