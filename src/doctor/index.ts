import { FIX_PHASES, type Check, type Fix } from './types.js';
import { agentRuntimeCheck } from './checks/agent-runtime.js';
import { agentSettingsCheck } from './checks/agent-settings.js';
import { backupsCheck } from './checks/backups.js';
import { channelDropInCheck } from './checks/channel-drop-in.js';
import { channelEnvCheck } from './checks/channel-env.js';
import { channelLimitsCheck } from './checks/channel-limits.js';
import { channelPortCheck } from './checks/channel-port.js';
import { configValidCheck } from './checks/config-valid.js';
import { devicesCheck } from './checks/devices.js';
import { filesCheck } from './checks/files.js';
import { diskCheck } from './checks/disk.js';
import { gatewayAuthCheck } from './checks/gateway-auth.js';
import { gatewayBindCheck } from './checks/gateway-bind.js';
import { gatewayMemoryCheck } from './checks/gateway-memory.js';
import { gatewayServiceCheck } from './checks/gateway-service.js';
import { gatewaySandboxCheck } from './checks/gateway-sandbox.js';
import { guardCronCheck } from './checks/guard-cron.js';
import { healthCheck } from './checks/health.js';
import { memoryCheck } from './checks/memory.js';
import { meshCheck } from './checks/mesh.js';
import { nginxLimitConnCheck } from './checks/nginx-limit-conn.js';
import { nginxCheck } from './checks/nginx.js';
import { nginxDefaultSiteCheck } from './checks/nginx-default-site.js';
import { nginxHardeningCheck } from './checks/nginx-hardening.js';
import { nodeRuntimeCheck } from './checks/node-runtime.js';
import { osCheck } from './checks/os.js';
import { packageLockCheck } from './checks/package-lock.js';
import { packagesCheck } from './checks/packages.js';
import { pluginsCheck } from './checks/plugins.js';
import { runtimeTreesCheck } from './checks/runtime-trees.js';
import { providersCheck } from './checks/providers.js';
import { secretsCheck } from './checks/secrets.js';
import { runtimeConfigCheck } from './checks/runtime-config.js';
import { storesCheck } from './checks/stores.js';
import { tlsCertCheck } from './checks/tls-cert.js';
import { toolPolicyCheck } from './checks/tool-policy.js';

/** The checks, in the order they print (they run in parallel). Explicit, not discovered. */
export const CHECKS: readonly Check[] = [
  osCheck,
  nodeRuntimeCheck,
  agentRuntimeCheck,
  pluginsCheck,
  runtimeTreesCheck,
  packagesCheck,
  gatewayServiceCheck,
  gatewaySandboxCheck,
  gatewayMemoryCheck,
  healthCheck,
  gatewayBindCheck,
  gatewayAuthCheck,
  providersCheck,
  agentSettingsCheck,
  toolPolicyCheck,
  configValidCheck,
  secretsCheck,
  runtimeConfigCheck,
  channelEnvCheck,
  channelDropInCheck,
  nginxCheck,
  nginxLimitConnCheck,
  tlsCertCheck,
  nginxDefaultSiteCheck,
  nginxHardeningCheck,
  channelLimitsCheck,
  channelPortCheck,
  guardCronCheck,
  memoryCheck,
  meshCheck,
  devicesCheck,
  diskCheck,
  storesCheck,
  backupsCheck,
  packageLockCheck,
  filesCheck,
];

/**
 * The fixes the checks declare, in the order `--fix` runs them: by phase (types.ts
 * FIX_PHASES), then in the order of the checks that declare them.
 */
export function fixesOf(checks: readonly Check[]): Fix[] {
  const declared = [...new Set(checks.flatMap((c) => c.fixes ?? []))];
  return FIX_PHASES.flatMap((phase) => declared.filter((f) => f.phase === phase));
}

export const FIXES: readonly Fix[] = fixesOf(CHECKS);
