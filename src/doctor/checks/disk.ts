import fs from 'node:fs/promises';
import { fail, pass, warn, type Check } from '../types.js';

export interface DiskThresholds {
  failBelow: number;
  warnBelow: number;
}
export const DISK_THRESHOLDS: DiskThresholds = { failBelow: 512 * 1024 ** 2, warnBelow: 2 * 1024 ** 3 };

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

export function diskCheckWith(thresholds: DiskThresholds): Check {
  return {
    id: 'disk',
    title: 'Free disk space',
    async run({ host }) {
      const stats = await fs.statfs(host.paths.real('/'));
      const free = stats.bavail * stats.bsize;
      const fix = 'free space: old logs (journalctl --vacuum-size=200M), apt caches (apt-get clean), backups in /tmp';
      const commands = ['df -h /', 'journalctl --vacuum-size=200M', 'apt-get clean'];
      if (free < thresholds.failBelow) return fail(`only ${gib(free)} free on /: the gateway and memory daemon fail to write`, fix, { commands });
      if (free < thresholds.warnBelow) return warn(`only ${gib(free)} free on /`, fix, { commands });
      return pass(`${gib(free)} free on /`);
    },
  };
}

export const diskCheck = diskCheckWith(DISK_THRESHOLDS);
