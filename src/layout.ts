/**
 * Where everything lives on a deployed server (absolute program paths; the host maps
 * them under SERVICE_DEPLOY_ROOT in a sandbox). One place, so install, doctor, guard,
 * reset and backup agree.
 */
export const GATEWAY_PORT = 18789;
export const CHANNEL_PORT = 18790;
/**
 * QMD's MCP server (qmd-mcp.service), on loopback. Below the gateway's port: everything
 * the gateway derives from its own port lies above it (browser control +2, its relay
 * 18799, the CDP range +11..+110), and 18790 is the channel.
 */
export const QMD_MCP_PORT = 18788;

export const LAYOUT = {
  stateDir: '/var/lib/service-deploy',
  answersFile: '/var/lib/service-deploy/answers.json',
  manifestFile: '/var/lib/service-deploy/manifest.json',
  /** The apt packages the install added (uninstall purges those, and only those). */
  packagesFile: '/var/lib/service-deploy/packages.json',
  logDir: '/var/log/service-deploy',
  installLog: '/var/log/service-deploy/install.log',
  installLock: '/run/service-deploy/install.lock',
  guardLock: '/run/service-deploy/guard.lock',

  nodePrefix: '/opt/service-deploy/node',
  /** OpenClaw's project folder: package.json and package-lock.json as shipped (templates/locks), node_modules as npm ci made it. */
  openclawProject: '/opt/service-deploy/openclaw',
  /**
   * A symbolic link to the OpenClaw package that runs (the project's, or the global one
   * releases before the locks installed, which a rollback may bring back): the unit, the
   * wrapper and our own calls run through it, so switching a release is one rename.
   */
  openclawCurrent: '/opt/service-deploy/openclaw-current',
  openclawBin: '/opt/service-deploy/openclaw-current/openclaw.mjs',
  openclawWrapper: '/usr/local/bin/openclaw',
  // QMD memory: its own npm prefix (CPU build only), its index and collection config in
  // QMD's default places for root, and the refresh timer beside the gateway.
  qmdPrefix: '/opt/service-deploy/qmd',
  /** Where the install stages QMD's project from the lock before it is renamed into place. */
  qmdNext: '/opt/service-deploy/qmd-next',
  qmdBin: '/opt/service-deploy/qmd/node_modules/.bin/qmd',
  qmdRefreshScript: '/opt/service-deploy/qmd/refresh.sh',
  qmdCacheDir: '/root/.cache/qmd',
  qmdIndex: '/root/.cache/qmd/index.sqlite',
  qmdModelsDir: '/root/.cache/qmd/models',
  qmdRefreshStamp: '/root/.cache/qmd/last-refresh',
  qmdConfigDir: '/root/.config/qmd',
  qmdCollectionsFile: '/root/.config/qmd/index.yml',
  qmdRefreshService: 'qmd-refresh.service',
  qmdRefreshTimer: 'qmd-refresh.timer',
  qmdRefreshServiceFile: '/root/.config/systemd/user/qmd-refresh.service',
  qmdRefreshTimerFile: '/root/.config/systemd/user/qmd-refresh.timer',
  /** The one resident QMD MCP server every agent session reaches over HTTP (QMD_MCP_PORT). */
  qmdMcpService: 'qmd-mcp.service',
  qmdMcpServiceFile: '/root/.config/systemd/user/qmd-mcp.service',

  runtimeHome: '/root',
  runtimeDir: '/root/.openclaw',
  runtimeConfig: '/root/.openclaw/openclaw.json',
  workspaceDir: '/root/.openclaw/workspace',
  channelEnv: '/root/.openclaw/channel.env',
  channelPluginDir: '/root/.openclaw/extensions-local/service-channel',

  userUnitDir: '/root/.config/systemd/user',
  gatewayUnit: 'openclaw-gateway.service',
  gatewayUnitFile: '/root/.config/systemd/user/openclaw-gateway.service',
  gatewayDropInDir: '/root/.config/systemd/user/openclaw-gateway.service.d',
  channelDropIn: '/root/.config/systemd/user/openclaw-gateway.service.d/service-env.conf',
  lingerFile: '/var/lib/systemd/linger/root',

  /** Written only for `tailscale up`, removed right after: in /run (never in a backup, gone at reboot). */
  meshAuthKeyFile: '/run/service-deploy/mesh-auth-key',
  runDir: '/run/service-deploy',
  // The gateway's secret source (docs/security.md): root-only, outside the agent's
  // workspace; openclaw.json only references it.
  runtimeSecretsDir: '/var/lib/service-deploy/runtime-secrets',
  runtimeSecretsFile: '/var/lib/service-deploy/runtime-secrets/secrets.json',
  runtimeSecretsEnv: '/var/lib/service-deploy/runtime-secrets/gateway.env',

  nginxSite: '/etc/nginx/conf.d/service-channel.conf',
  /** The sandbox for the nginx the install brought (steps/nginx-hardening.ts). */
  nginxDropInDir: '/etc/systemd/system/nginx.service.d',
  nginxHardeningDropIn: '/etc/systemd/system/nginx.service.d/service-deploy-hardening.conf',
  tlsDir: '/etc/service-deploy/tls',
  tlsCert: '/etc/service-deploy/tls/channel.crt',
  tlsKey: '/etc/service-deploy/tls/channel.key',
  channelFirewallRules: '/etc/service-deploy/channel-firewall.nft',
  channelFirewallUnit: 'service-channel-firewall.service',
  channelFirewallUnitFile: '/etc/systemd/system/service-channel-firewall.service',
  /** What the install opened in ufw/firewalld for the channel port (reset closes exactly that). */
  channelPortState: '/var/lib/service-deploy/channel-port.json',
  /** The installed Node binary's identity and the version it printed (steps/node-runtime.ts). */
  nodeStamp: '/var/lib/service-deploy/node-runtime.json',

  guardScript: '/usr/local/bin/service-guard.sh',
  guardCron: '/etc/cron.d/service-guard',
  guardLog: '/var/log/service-deploy/guard.log',
  binary: '/usr/local/bin/service-deploy',

  /** Backups kept on the server: on demand, scheduled, before an upgrade (install/backup-set.ts). */
  backupDir: '/var/backups/service-deploy',
  backupService: 'service-deploy-backup.service',
  backupTimer: 'service-deploy-backup.timer',
  backupServiceFile: '/etc/systemd/system/service-deploy-backup.service',
  backupTimerFile: '/etc/systemd/system/service-deploy-backup.timer',
  /** The OpenClaw an upgrade replaced (a project folder, or a global package of the earlier layout), kept whole for `service-deploy rollback`. */
  openclawPrevious: '/opt/service-deploy/openclaw-previous',
  /** The project folder an install or upgrade installs OpenClaw's lock into before it is switched in. */
  openclawNext: '/opt/service-deploy/openclaw-next',
  /** The Node prefix an upgrade of the pinned Node replaced (with its global packages), kept whole for `service-deploy rollback`. */
  nodePrevious: '/opt/service-deploy/node-previous',
  /** Where an upgrade unpacks the new Node (and copies the global packages) before it is switched in. */
  nodeNext: '/opt/service-deploy/node-next',
  /** What the last upgrade did (versions, backup, outcome): status and rollback read it. */
  upgradeRecord: '/opt/service-deploy/upgrade.json',
} as const;

export const BACKUP_PREFIX = '/tmp/openclaw-backup-';
