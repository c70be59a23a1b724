import path from 'node:path';
import { CHANNEL_ACCESS_LOG, NGINX_ERROR_LOG } from '../../channel/nginx.js';
import { SESSION_DISK_BUDGET_BYTES } from '../../config/runtime-config.js';
import type { Host } from '../../host/index.js';
import { diskUsage, diskUsageOf, filesystemSize, type Usage } from '../../host/usage.js';
import { BACKUP_PREFIX, LAYOUT } from '../../layout.js';
import { NONCE_STORE } from '../../steps/channel.js';
import type { DoctorContext } from '../context.js';
import { pass, warn, type Check } from '../types.js';

/**
 * The thresholds of the stores the deployment feeds that have no bound of their own
 * strong enough to leave alone (docs/operations.md, "Stores and their bounds").
 * Sizes in bytes.
 */
export interface StoreThresholds {
  /** The runtime's shared state database (it prunes its own records by age and count). */
  stateDatabase: number;
  /** The channel's nonce store: entries live for the replay window only. */
  nonceStore: number;
  /** QMD's index of the memory files. */
  qmdIndex: number;
  /** Each nginx log our site writes (rotated daily by logrotate). */
  nginxLog: number;
  /** Everything in /var/backups/service-deploy. */
  backups: number;
  /** The --reset-clean and uninstall archives in /tmp (emptied at boot on Ubuntu). */
  resetArchives: number;
  /** The journal: journald's own default cap, SystemMaxUse: this share of the filesystem ... */
  journalShare: number;
  /** ... and at most this much. */
  journalMax: number;
}

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

export const STORE_THRESHOLDS: StoreThresholds = {
  stateDatabase: 256 * MiB,
  nonceStore: 4 * MiB,
  qmdIndex: 512 * MiB,
  nginxLog: 256 * MiB,
  backups: 2 * GiB,
  resetArchives: 1 * GiB,
  journalShare: 0.1,
  journalMax: 4 * GiB,
};

/** Where the stores live (beyond LAYOUT): the pinned OpenClaw's own places. */
export const STORE_PATHS = {
  agentsDir: `${LAYOUT.runtimeDir}/agents`,
  stateDatabase: `${LAYOUT.runtimeDir}/state/openclaw.sqlite`,
  /** The service-channel plugin's replay memory, as the step that installs the plugin declares it. */
  nonceStore: NONCE_STORE.path,
  journalDirs: ['/var/log/journal', '/run/log/journal'],
  logrotateBin: '/usr/sbin/logrotate',
  /** nginx's own rotation rule (Debian's and Ubuntu's nginx packages ship it): /var/log/nginx/*.log, daily, 14 kept. */
  nginxLogrotate: '/etc/logrotate.d/nginx',
} as const;

/** A walk looks at this many entries at most (the sessions folder is bounded by the runtime's budget). */
const WALK = { depth: 2, maxEntries: 20_000 };

/** An agent id as OpenClaw writes its folder names. */
const AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** A SQLite database with its write-ahead log. */
const sqlite = (file: string) => [file, `${file}-wal`];

interface Measured {
  /** Shown in the pass line: "sessions 12 MiB of 512 MiB". */
  summary: string;
  over?: { message: string; fix: string; commands: string[] };
}

/**
 * Measures every store the deployment creates or feeds against its bound or threshold
 * and says what to do about one that is over. Reads sizes in-process (lstat, bounded
 * walks), starts no process: cheap enough for every doctor run.
 */
export function storesCheckWith(thresholds: StoreThresholds): Check {
  return {
    id: 'stores',
    title: 'Stores within their bounds (sessions, logs, journal, memory index, backups)',
    async run(ctx) {
      const { host } = ctx;
      const measured = [
        ...(await sessions(ctx)),
        stateDatabase(host, thresholds),
        ...((await ctx.channelConfigured()) ? [nonceStore(host, thresholds), await nginxLogs(host, thresholds)] : []),
        qmdIndex(host, thresholds),
        journal(host, thresholds),
        backups(host, thresholds),
        await resetArchives(host, thresholds),
      ];
      const over = measured.flatMap((m) => (m.over ? [m.over] : []));
      if (over.length === 0) return pass(measured.map((m) => m.summary).join(', '));
      return warn(over.map((o) => o.message).join('; '), over.map((o) => o.fix).join('; '), { commands: [...new Set(over.flatMap((o) => o.commands))] });
    },
  };
}

export const storesCheck = storesCheckWith(STORE_THRESHOLDS);

/** The per-agent session store, against the disk budget in effect (session.maintenance.maxDiskBytes). */
async function sessions(ctx: DoctorContext): Promise<Measured[]> {
  const { host } = ctx;
  const budget = sessionBudget((await ctx.runtimeConfig()).config);
  const agents = await host.files.list(STORE_PATHS.agentsDir);
  if (agents.length === 0) return [{ summary: 'sessions: none yet' }];
  return agents.map((agent) => {
    const dir = `${STORE_PATHS.agentsDir}/${agent}`;
    const usage = diskUsageOf(host.paths, [...sqlite(`${dir}/agent/openclaw-agent.sqlite`), `${dir}/sessions`], WALK);
    const summary = `sessions (${agent}) ${size(usage)} of ${budget === undefined ? 'no budget' : bytes(budget)}`;
    if (budget === undefined || usage.bytes <= budget) return { summary };
    return {
      summary,
      over: {
        message: `the sessions of agent ${JSON.stringify(agent).slice(1, -1)} take ${size(usage)} (${dir}), over their ${bytes(budget)} budget: the runtime's cleanup could not bring them down (pinned or running sessions, the newest 5000, and history it keeps are protected)`,
        fix: 'see what the runtime would remove, then let it remove it (it keeps the newest sessions), or export and delete sessions no longer needed',
        // A folder name is input from disk: only an id as OpenClaw writes them goes into a command.
        commands: AGENT_ID.test(agent)
          ? [`openclaw sessions cleanup --agent ${agent} --dry-run`, `openclaw sessions cleanup --agent ${agent} --enforce`]
          : ['openclaw sessions cleanup --all-agents --dry-run', 'openclaw sessions cleanup --all-agents --enforce'],
      },
    };
  });
}

/** session.maintenance.maxDiskBytes as the pinned runtime reads it; ours when unset; undefined when off. */
export function sessionBudget(config: Record<string, unknown> | undefined): number | undefined {
  const raw = (config as { session?: { maintenance?: { maxDiskBytes?: unknown } } } | undefined)?.session?.maintenance?.maxDiskBytes;
  if (raw === undefined) return SESSION_DISK_BUDGET_BYTES;
  if (raw === false) return undefined;
  const parsed = /^(\d+(?:\.\d+)?)([a-z]*)$/.exec(String(raw).trim().toLowerCase());
  const unit = { '': 1, b: 1, k: 1024, kb: 1024, m: MiB, mb: MiB, g: GiB, gb: GiB, t: 1024 * GiB, tb: 1024 * GiB }[parsed?.[2] ?? 'x'];
  // The runtime treats a value it cannot read, or 0, as no budget at all.
  if (!parsed || unit === undefined) return undefined;
  const value = Math.round(Number(parsed[1]) * unit);
  return value > 0 ? value : undefined;
}

function stateDatabase(host: Host, t: StoreThresholds): Measured {
  const usage = diskUsageOf(host.paths, sqlite(STORE_PATHS.stateDatabase));
  const summary = `state database ${size(usage)}`;
  if (usage.bytes <= t.stateDatabase) return { summary };
  return {
    summary,
    over: {
      message: `the runtime's state database ${STORE_PATHS.stateDatabase} takes ${size(usage)} (threshold ${bytes(t.stateDatabase)}), although the runtime keeps its records 7 to 30 days`,
      fix: 'back it up, ask the runtime what it holds (its own doctor) and report it with that output',
      commands: ['service-deploy backup', 'openclaw doctor --non-interactive'],
    },
  };
}

function nonceStore(host: Host, t: StoreThresholds): Measured {
  const usage = diskUsage(host.paths, STORE_PATHS.nonceStore);
  const summary = `channel nonce store ${size(usage)}`;
  if (usage.bytes <= t.nonceStore) return { summary };
  return {
    summary,
    over: {
      message: `the channel's nonce store ${STORE_PATHS.nonceStore} takes ${size(usage)} (threshold ${bytes(t.nonceStore)}): far more signed requests within the 5-minute replay window than a portal sends`,
      fix: 'the channel token may be in other hands: give the channel new secrets and hand them to the portal (docs/operator.md)',
      commands: ['service-deploy install --channel --rotate-channel-secrets', 'service-deploy channel show --json --show-secrets'],
    },
  };
}

/** The channel's access log and nginx's error log (our site writes to both), and what rotates them. */
async function nginxLogs(host: Host, t: StoreThresholds): Promise<Measured> {
  const logs = [CHANNEL_ACCESS_LOG, NGINX_ERROR_LOG].map((file) => ({ file, usage: diskUsage(host.paths, file) }));
  const summary = `nginx logs ${size({ bytes: logs.reduce((sum, l) => sum + l.usage.bytes, 0), files: 0, truncated: false })}`;
  const [rule, logrotate] = await Promise.all([host.files.read(STORE_PATHS.nginxLogrotate), host.files.exists(STORE_PATHS.logrotateBin)]);
  if (!logrotate || !rule?.includes('/var/log/nginx/')) {
    const why = [
      ...(logrotate ? [] : [`${STORE_PATHS.logrotateBin} is not installed`]),
      ...(rule === undefined ? [`${STORE_PATHS.nginxLogrotate} is missing`] : rule.includes('/var/log/nginx/') ? [] : [`${STORE_PATHS.nginxLogrotate} has no rule for /var/log/nginx/`]),
    ];
    return {
      summary,
      over: {
        message: `nothing rotates the channel's access log ${CHANNEL_ACCESS_LOG}: ${why.join(', ')}`,
        fix: "re-run the install (it installs logrotate): nginx's package ships the rule (reinstall nginx-common if the rule was removed)",
        commands: ['service-deploy install', 'apt-get install --reinstall -o Dpkg::Options::=--force-confmiss nginx-common'],
      },
    };
  }
  const big = logs.filter((l) => l.usage.bytes > t.nginxLog);
  if (big.length === 0) return { summary };
  return {
    summary,
    over: {
      message: `${big.map((l) => `${l.file} takes ${size(l.usage)}`).join(', ')} (threshold ${bytes(t.nginxLog)}, rotated daily by logrotate): that much in a day is a flood of requests`,
      fix: 'rotate now, and see who sends them (the first field of each line is the client address)',
      commands: [`logrotate -f ${STORE_PATHS.nginxLogrotate}`, `awk '{print $1}' ${CHANNEL_ACCESS_LOG} | sort | uniq -c | sort -rn | head`],
    },
  };
}

function qmdIndex(host: Host, t: StoreThresholds): Measured {
  const usage = diskUsageOf(host.paths, sqlite(LAYOUT.qmdIndex));
  const summary = `memory index ${size(usage)}`;
  if (usage.bytes <= t.qmdIndex) return { summary };
  return {
    summary,
    over: {
      message: `QMD's index ${LAYOUT.qmdIndex} takes ${size(usage)} (threshold ${bytes(t.qmdIndex)}): it indexes the memory files, and keeps removed ones until a cleanup`,
      fix: "let QMD drop what no file holds any more and compact the index (the agent's memory files stay)",
      commands: [`HOME=${LAYOUT.runtimeHome} ${LAYOUT.qmdBin} cleanup`],
    },
  };
}

/** The journal against journald's own default cap: a bigger one means that cap was raised or removed. */
function journal(host: Host, t: StoreThresholds): Measured {
  const usage = diskUsageOf(host.paths, STORE_PATHS.journalDirs, WALK);
  const fs = filesystemSize(host.paths, '/');
  const cap = Math.min(t.journalMax, fs === undefined ? t.journalMax : Math.floor(fs * t.journalShare));
  const summary = `journal ${size(usage)} (journald's default cap here ${bytes(cap)})`;
  if (usage.bytes <= cap) return { summary };
  return {
    summary,
    over: {
      message: `the journal takes ${size(usage)}, more than journald's default cap here (${bytes(cap)}: ${Math.round(t.journalShare * 100)}% of the filesystem, at most ${bytes(t.journalMax)}), and the gateway logs into it`,
      fix: 'shrink it now, and to keep it bounded set SystemMaxUse= in a drop-in under /etc/systemd/journald.conf.d/ (your journald configuration: service-deploy does not change it)',
      commands: ['journalctl --disk-usage', 'journalctl --vacuum-size=500M'],
    },
  };
}

function backups(host: Host, t: StoreThresholds): Measured {
  const usage = diskUsage(host.paths, LAYOUT.backupDir, { depth: 1, maxEntries: 5_000 });
  const summary = `backups ${size(usage)}`;
  if (usage.bytes <= t.backups) return { summary };
  return {
    summary,
    over: {
      message: `the backups in ${LAYOUT.backupDir} take ${size(usage)} in ${usage.files} files (threshold ${bytes(t.backups)}): only a schedule's --keep removes old ones (reset, uninstall, upgrade and on-demand backups stay)`,
      fix: 'copy the ones you need elsewhere and remove the oldest, or keep fewer (--keep prunes the folder after each backup)',
      commands: [`ls -lt ${LAYOUT.backupDir}`, 'service-deploy backup --every 24h --keep 3'],
    },
  };
}

/** The --reset-clean and uninstall archives: /tmp/openclaw-backup-*.tar.gz. */
async function resetArchives(host: Host, t: StoreThresholds): Promise<Measured> {
  const dir = path.posix.dirname(BACKUP_PREFIX);
  const prefix = path.posix.basename(BACKUP_PREFIX);
  const names = (await host.files.list(dir)).filter((n) => n.startsWith(prefix) && n.endsWith('.tar.gz'));
  const usage = diskUsageOf(host.paths, names.map((n) => `${dir}/${n}`));
  const summary = `reset archives ${size(usage)}`;
  if (usage.bytes <= t.resetArchives) return { summary };
  return {
    summary,
    over: {
      message: `${usage.files} reset/uninstall archives ${BACKUP_PREFIX}*.tar.gz take ${size(usage)} (threshold ${bytes(t.resetArchives)}), each with the customer's data and secrets (Ubuntu empties /tmp only at boot)`,
      fix: `keep the ones you need (a copy of each is normally in ${LAYOUT.backupDir}) and remove the rest, or move them off the server`,
      commands: [`ls -lt ${BACKUP_PREFIX}*.tar.gz ${LAYOUT.backupDir}`],
    },
  };
}

function size(usage: Usage): string {
  return `${bytes(usage.bytes)}${usage.truncated ? '+' : ''}`;
}

function bytes(n: number): string {
  if (n >= GiB) return `${(n / GiB).toFixed(1)} GiB`;
  if (n >= MiB) return `${(n / MiB).toFixed(1)} MiB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KiB`;
  return `${n} B`;
}
