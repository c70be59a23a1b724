/**
 * Where everything lives on a deployed server (absolute program paths; the host maps
 * them under SERVICE_DEPLOY_ROOT in a sandbox). One place, so install, doctor, guard,
 * reset and backup agree.
 */
export const GATEWAY_PORT = 18789;
export const CHANNEL_PORT = 18790;

export const LAYOUT = {
  stateDir: '/var/lib/service-deploy',
  answersFile: '/var/lib/service-deploy/answers.json',
  manifestFile: '/var/lib/service-deploy/manifest.json',
  logDir: '/var/log/service-deploy',
  installLog: '/var/log/service-deploy/install.log',
  installLock: '/run/service-deploy/install.lock',
  guardLock: '/run/service-deploy/guard.lock',

  nodePrefix: '/opt/service-deploy/node',
  openclawBin: '/opt/service-deploy/node/bin/openclaw',
  openclawWrapper: '/usr/local/bin/openclaw',
  qmdBin: '/opt/service-deploy/node/bin/qmd',

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

  meshAuthKeyFile: '/var/lib/service-deploy/mesh-auth-key',

  nginxSite: '/etc/nginx/conf.d/service-channel.conf',
  tlsDir: '/etc/service-deploy/tls',
  tlsCert: '/etc/service-deploy/tls/channel.crt',
  tlsKey: '/etc/service-deploy/tls/channel.key',

  guardScript: '/usr/local/bin/service-guard.sh',
  guardCron: '/etc/cron.d/service-guard',
  guardLog: '/var/log/service-deploy/guard.log',
  binary: '/usr/local/bin/service-deploy',
} as const;

export const BACKUP_PREFIX = '/tmp/openclaw-backup-';
