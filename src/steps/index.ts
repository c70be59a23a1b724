import { INSTALL_LOG, INSTALL_LOG_OLD, LOG_DIR } from '../pipeline/install-log.js';
import { MANIFEST_FILE, STATE_DIR } from '../pipeline/manifest.js';
import { PACKAGES_FILE } from '../pipeline/packages.js';
import type { Step } from '../pipeline/step.js';
import type { Written } from '../pipeline/writes.js';
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

/** What the pipeline itself writes around the steps: the state folder, the manifest, the added packages' record, the install log. */
const PIPELINE_WRITES: readonly Written[] = [STATE_DIR, MANIFEST_FILE, PACKAGES_FILE, LOG_DIR, INSTALL_LOG, INSTALL_LOG_OLD];

/** The install pipeline, in order. Each step builds on the ones before it. */
export function installSteps(): Step[] {
  const steps: Step[] = [
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
  ];
  // Then the manifest records what they declare and is not recorded yet; the health check last.
  return [...steps, manifestStep(writesOf(steps), steps.map((s) => s.id)), healthStep];
}

/** What the install writes: the pipeline's own files, then each step's, in order (pipeline/writes.ts). */
export function installWrites(steps: readonly Step[] = installSteps()): Written[] {
  return writesOf(steps);
}

function writesOf(steps: readonly Step[]): Written[] {
  return [...PIPELINE_WRITES, ...steps.flatMap((s) => s.writes ?? [])];
}
