import type { Step } from '../pipeline/step.js';
import { agentRuntimeStep } from './agent-runtime.js';
import { answersStateStep } from './answers-state.js';
import { browserStep } from './browser.js';
import { channelSteps } from './channel.js';
import { channelLimitsStep, channelPortStep } from './channel-firewall.js';
import { gatewayServiceStep } from './gateway-service.js';
import { guardStep } from './guard.js';
import { healthStep } from './health.js';
import { manifestStep } from './manifest.js';
import { mcpStep } from './mcp.js';
import { memoryIndexStep } from './memory-index.js';
import { memoryServiceStep } from './memory-service.js';
import { meshClientStep } from './mesh-client.js';
import { nginxHardeningStep } from './nginx-hardening.js';
import { nodeRuntimeStep } from './node-runtime.js';
import { packageLockStep } from './package-lock.js';
import { contextEngineStep, memoryStep } from './plugins.js';
import { preflightStep } from './preflight.js';
import { runtimeConfigStep } from './runtime-config.js';
import { runtimeSecretsStep } from './runtime-secrets.js';
import { systemPackagesStep } from './system-packages.js';

/** The install pipeline, in order. Each step builds on the ones before it. */
export function installSteps(): Step[] {
  return [
    preflightStep,
    packageLockStep,
    systemPackagesStep,
    nginxHardeningStep,
    nodeRuntimeStep,
    agentRuntimeStep,
    meshClientStep,
    memoryStep,
    contextEngineStep,
    mcpStep,
    browserStep,
    answersStateStep,
    // Skipped unless --channel or --catalog: channel.env, plugin, drop-in, TLS, nginx, firewall.
    ...channelSteps,
    channelLimitsStep,
    channelPortStep,
    runtimeSecretsStep,
    runtimeConfigStep,
    gatewayServiceStep,
    memoryIndexStep,
    memoryServiceStep,
    guardStep,
    manifestStep,
    healthStep,
  ];
}
