import { loadComponents, type Components } from '../components.js';
import type { RunResult } from '../host/exec.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { PLUGIN_PREFIX, installedPackageVersion } from '../runtime/openclaw.js';
import { installedOpenclawVersion } from '../runtime/openclaw-place.js';
import { stampedNodeVersion } from '../steps/node-runtime.js';
import { VERSION } from '../version.js';

/**
 * What runs where: this binary's release and, per runtime component, the version installed
 * on this server against the one this binary pins. `status` reports it (with what a
 * rollback would bring back), doctor's report carries it (`versions`), and the fleet's
 * doctor table prints it (examples/ansible).
 */

/** The runtime components, in the order every report lists them. */
export const COMPONENT_NAMES = ['node', 'openclaw', 'qmd', 'lossless-claw'] as const;
export type ComponentName = (typeof COMPONENT_NAMES)[number];

/** How the one-line summary names them (doctor's text report). */
const LABELS: Record<ComponentName, string> = { node: 'Node', openclaw: 'OpenClaw', qmd: 'QMD', 'lossless-claw': 'lossless-claw' };

export interface ComponentVersion {
  /** Undefined: not installed (or its version unreadable). */
  installed?: string;
  /** What this binary installs (templates/components.json). */
  pinned: string;
  /** What `service-deploy rollback` would bring back (only when asked for). */
  previous?: string;
}

export interface Versions {
  /** This binary's release. */
  release: string;
  components: Record<ComponentName, ComponentVersion>;
}

const NODE_BIN = `${LAYOUT.nodePrefix}/bin/node`;

/**
 * The runtime's Node version: the one the install stamped while the binary is that very
 * file (no process), else what `node --version` says (`run`: that run's result); nothing
 * when there is no binary. Read-only.
 */
export async function runtimeNodeVersion(host: Host): Promise<{ version?: string; run?: RunResult }> {
  const stamped = await stampedNodeVersion(host);
  if (stamped !== undefined) return { version: stamped };
  if (!(await host.files.exists(NODE_BIN))) return {};
  const run = await host.exec.run(host.paths.real(NODE_BIN), ['--version'], { allowFailure: true, timeoutMs: 20_000 });
  return { version: run.exitCode === 0 ? run.stdout.trim().replace(/^v/, '') : undefined, run };
}

/**
 * The versions, read-only and cheap: package.json files and Node's stamp (a process only
 * when the stamp does not answer). `nodeVersion`: a caller that already reads Node's
 * version (doctor's context) shares its answer. `previous`: also what a rollback would
 * bring back (it may run the kept Node: status asks, doctor does not).
 */
export async function collectVersions(
  host: Host,
  options: { components?: Components; nodeVersion?: () => Promise<string | undefined>; previous?: boolean } = {},
): Promise<Versions> {
  const components = options.components ?? loadComponents(host.env);
  const [node, openclaw, qmd, lossless, previous] = await Promise.all([
    options.nodeVersion ? options.nodeVersion() : runtimeNodeVersion(host).then((n) => n.version),
    installedOpenclawVersion(host, components.openclaw.package),
    installedPackageVersion(host, `${LAYOUT.qmdPrefix}/node_modules`, components.qmd.package),
    installedPackageVersion(host, `${PLUGIN_PREFIX}/node_modules`, components.losslessClaw.package),
    // The upgrade code only when asked (doctor's chunk stays without it).
    options.previous ? import('../steps/node-upgrade.js').then((m) => m.rollbackPoint(host)) : Promise.resolve({} as { openclaw?: string; node?: string }),
  ]);
  const state = (installed: string | undefined, pinned: string, kept?: string): ComponentVersion => ({
    ...(installed !== undefined ? { installed } : {}),
    pinned,
    ...(kept ? { previous: kept } : {}),
  });
  return {
    release: VERSION,
    components: {
      node: state(node, components.node.version, previous.node),
      openclaw: state(openclaw, components.openclaw.version, previous.openclaw !== openclaw ? previous.openclaw : undefined),
      qmd: state(qmd, components.qmd.version),
      'lossless-claw': state(lossless, components.losslessClaw.version),
    },
  };
}

/** A component's version as a report carries it: installed undefined or null when it is not. */
type Installed = { installed?: string | null; pinned: string };

/** Not at the pin: another version installed (a failed or skipped update left it), or none. */
export function isBehind(component: Installed): boolean {
  return component.installed !== component.pinned;
}

/**
 * One line: `service-deploy 0.1.0 · Node 26.12.1 · OpenClaw 2026.9.5 (pin 2026.9.6) · ...`;
 * a component off its pin with the pin, one missing `not installed (pin X)`.
 */
export function versionsLine(versions: { release: string; components: Record<ComponentName, Installed> }): string {
  const parts = COMPONENT_NAMES.map((name) => {
    const c = versions.components[name];
    if (!isBehind(c)) return `${LABELS[name]} ${c.installed}`;
    return `${LABELS[name]} ${c.installed ?? 'not installed'} (pin ${c.pinned})`;
  });
  return [`service-deploy ${versions.release}`, ...parts].join(' · ');
}
