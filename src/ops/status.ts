import { createHost, type Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { printError, printLine } from '../output.js';
import { emitJson, statusOutput, type ErrorBody } from '../json/index.js';
import { readStoredAnswers } from '../answers/index.js';
import { HEALTH_VERDICT_TIMEOUT_MS, probeHealth } from '../steps/health.js';
import { meshStatus } from '../steps/mesh-client.js';
import { collectVersions, type ComponentName, type ComponentVersion } from './versions.js';

export interface StatusReport {
  /** This binary and the Node.js it is built on (not the runtime's Node: components.node). */
  binary: { version: string; node: string; arch: string };
  deployed: boolean;
  customer?: string;
  model?: string;
  meshHostname?: string;
  channel: boolean;
  components: Record<ComponentName, ComponentVersion>;
  services: { gateway: boolean; health: boolean; mesh: 'running' | 'logged-out' | 'not-installed'; serving: boolean };
}

/** What is deployed, read-only and quick; `doctor` is the one that judges it. */
export async function collectStatus(host: Host): Promise<StatusReport> {
  const [answers, versions, gateway, health, mesh, channel] = await Promise.all([
    readStoredAnswers(host),
    collectVersions(host, { previous: true }),
    host.services.isActive('user', LAYOUT.gatewayUnit).catch(() => false),
    probeHealth(host, HEALTH_VERDICT_TIMEOUT_MS),
    meshStatus(host).catch(() => ({ installed: false, running: false, serving: false, keyExpired: false, tags: [] })),
    host.files.exists(LAYOUT.channelEnv),
  ]);
  return {
    binary: { version: versions.release, node: process.versions.node, arch: process.arch },
    deployed: answers !== undefined,
    customer: answers?.customerName,
    model: answers?.modelId,
    meshHostname: answers?.meshHostname,
    channel,
    components: versions.components,
    services: {
      gateway,
      health: health.ok,
      mesh: !mesh.installed ? 'not-installed' : mesh.running ? 'running' : 'logged-out',
      serving: mesh.serving,
    },
  };
}

/**
 * Why `status` exits 1 (README "Exit codes"): nothing is deployed, or the deployed agent
 * is down (its gateway unit not active, or /healthz not answering). Undefined: exit 0.
 * The mesh is reported but not judged here: chat over the channel works without it, and
 * doctor says what a logged-out mesh client means.
 */
export function statusProblem(report: StatusReport): ErrorBody | undefined {
  if (!report.deployed) {
    return { code: 'not-deployed', message: 'nothing is deployed on this server', hint: 'deploy with `service-deploy install` (docs: the quickstart)', exitCode: 1 };
  }
  const { gateway, health } = report.services;
  if (gateway && health) return undefined;
  return {
    code: 'gateway-down',
    message: `the agent's gateway is down: ${LAYOUT.gatewayUnit} ${gateway ? 'is active' : 'is not active'} and /healthz ${health ? 'answers' : 'does not answer'}`,
    hint: 'see `service-deploy gateway logs`, then `service-deploy doctor --fix` (or `service-deploy gateway restart`)',
    exitCode: 1,
  };
}

export async function runStatus(args: { json?: boolean; verbose?: boolean }): Promise<void> {
  const report = await collectStatus(createHost({ verbose: args.verbose }));
  const problem = statusProblem(report);
  if (problem) process.exitCode = problem.exitCode;
  if (args.json) return emitJson(statusOutput, { ok: problem === undefined, ...report, ...(problem ? { error: problem } : {}) });
  if (problem && report.deployed) printError(`status: ${problem.message}; ${problem.hint}`);
  printLine(`service-deploy ${report.binary.version} (Node.js ${report.binary.node}, linux-${report.binary.arch})`);
  if (!report.deployed) printLine('No deployment found on this server (run `service-deploy install`).');
  else printLine(`customer ${report.customer}  model ${report.model}  mesh ${report.meshHostname}  channel ${report.channel ? 'on' : 'off'}`);
  for (const [name, c] of Object.entries(report.components)) {
    const mark = c.installed === c.pinned ? 'ok  ' : c.installed ? 'diff' : '--  ';
    printLine(`${mark} ${name.padEnd(14)} ${(c.installed ?? 'not installed').padEnd(14)} pinned ${c.pinned}${c.previous ? `  previous ${c.previous} (service-deploy rollback)` : ''}`);
  }
  const s = report.services;
  printLine(`gateway ${s.gateway ? 'active' : 'inactive'}, /healthz ${s.health ? 'ok' : 'not answering'}, mesh ${s.mesh}${s.serving ? ' (serving)' : ''}`);
  printLine('For a diagnosis with fixes: service-deploy doctor');
}
