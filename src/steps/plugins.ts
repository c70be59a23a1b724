import type { Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { ensureDirRecorded, ensureFolder } from '../pipeline/files.js';
import { recordProgramFiles } from '../pipeline/manifest.js';
import type { WrittenFile, WrittenFolder } from '../pipeline/writes.js';
import { installAfresh, packageState, type PackageState } from './package-files.js';
import { PLUGIN_PREFIX, installedPackageVersion, losslessClawFiles, npm, qmdFiles } from '../runtime/openclaw.js';

/**
 * QMD memory, the program. OpenClaw removed its QMD memory backend in 2026.8.1 (builtin
 * memory is the only engine now), so QMD is installed as its own program and wired into
 * the agent as an MCP server (one resident `qmd mcp --http`, steps/memory-service.ts),
 * which the pinned OpenClaw supports. It gets an npm prefix of its own so that only the CPU build of its native
 * parts is installed (`--omit=optional` drops node-llama-cpp's GPU prebuilds, about 660
 * of the 856 MB; the CPU ones are named instead): npm ignores --omit for --global.
 * What it indexes and when: steps/memory-index.ts. docs/components.md has the details.
 */
const QMD_PREFIX: WrittenFolder = { path: LAYOUT.qmdPrefix, type: 'folder', mode: 0o755 };
/** The prefix's package.json: npm records what it installed there (not ours to check). */
const QMD_MANIFEST: WrittenFile = { path: `${LAYOUT.qmdPrefix}/package.json`, type: 'file', mode: 0o644 };

export const memoryStep: Step = {
  id: 'memory',
  title: 'Memory daemon (QMD, as an MCP server)',
  needs: ['node-runtime'],
  writes: [QMD_PREFIX, QMD_MANIFEST, { type: 'programs', path: LAYOUT.qmdPrefix, files: (components) => qmdFiles(components.qmd.package) }],
  async check({ host, components }) {
    const have = await installedPackageVersion(host, `${LAYOUT.qmdPrefix}/node_modules`, components.qmd.package);
    const state = await packageState(host, have, components.qmd.version, qmdFiles(components.qmd.package));
    if (!state.install) return { changes: [] };
    const summary = state.damaged ? `reinstall QMD ${have}: ${state.damaged}` : have ? `QMD ${have} -> ${components.qmd.version} (CPU build)` : `install QMD ${components.qmd.version} (CPU build)`;
    // The resident QMD MCP server runs this package; the gateway only talks to it over HTTP.
    return { changes: [{ target: components.qmd.package, summary }], notify: ['qmd-restart'], data: state };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    await ensureFolder(host, QMD_PREFIX);
    await host.files.write(QMD_MANIFEST.path, qmdManifest(await host.files.read(QMD_MANIFEST.path)), { mode: QMD_MANIFEST.mode });
    const cpu = components.qmd.cpuBuild[process.arch === 'arm64' ? 'arm64' : 'x64'];
    const doing = `npm install ${components.sources.qmdSpec} (CPU build)`;
    ctx.progress(doing);
    await installAfresh(host, `${LAYOUT.qmdPrefix}/node_modules/${components.qmd.package}`, Boolean((plan.data as PackageState).damaged), async () => {
      await npm(host, [
        'install', '--prefix', host.paths.real(LAYOUT.qmdPrefix), '--omit=optional', '--no-audit', '--no-fund', '--save-exact',
        components.sources.qmdSpec, ...cpu,
      ], {
        // Where the CPU prebuild cannot load (an older glibc), node-llama-cpp's install
        // script would clone llama.cpp from GitHub and compile it: never on a customer's
        // server. QMD's search works without it; only local embeddings need it.
        env: { NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' },
        progress: (counts) => ctx.progress(`${doing}: ${counts}`),
      });
    });
    await recordProgramFiles(host, qmdFiles(components.qmd.package));
  },
  async verify({ host, components }) {
    const have = await installedPackageVersion(host, `${LAYOUT.qmdPrefix}/node_modules`, components.qmd.package);
    if (have !== components.qmd.version) throw new Error(`QMD ${have ?? 'missing'} after install, expected ${components.qmd.version}`);
    if (!(await host.files.exists(LAYOUT.qmdBin))) throw new Error(`${LAYOUT.qmdBin} is missing after the QMD install`);
  },
};

/**
 * The prefix's package.json (npm records the dependencies it installs there, which are
 * kept). npm 11 runs the install scripts of a project install only for the packages
 * named in allowScripts.
 */
export function qmdManifest(existing: string | undefined): string {
  let current: Record<string, unknown> = {};
  try {
    const parsed: unknown = existing ? JSON.parse(existing) : {};
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) current = parsed as Record<string, unknown>;
  } catch {
    // unreadable: start again; npm re-records the dependencies
  }
  return `${JSON.stringify({ ...current, name: 'service-deploy-qmd', private: true, allowScripts: { 'better-sqlite3': true, 'node-llama-cpp': true } }, null, 2)}\n`;
}

/**
 * The lossless-claw context engine plugin, installed with npm into a prefix of ours
 * and loaded through plugins.load.paths (runtime-config). `openclaw plugins install`
 * would rewrite openclaw.json behind our back; this way the config has one writer.
 */
const PLUGINS_PREFIX: WrittenFolder = { path: PLUGIN_PREFIX, type: 'folder', mode: 0o755, check: 'metadata' };
/** npm wants a package.json in the prefix, and adds the dependency to it itself (not ours to check). */
const PLUGINS_MANIFEST: WrittenFile = { path: `${PLUGIN_PREFIX}/package.json`, type: 'file', mode: 0o644 };

export const contextEngineStep: Step = {
  id: 'context-engine',
  title: 'Context engine (lossless-claw plugin)',
  needs: ['node-runtime'],
  writes: [PLUGINS_PREFIX, PLUGINS_MANIFEST, { type: 'programs', path: PLUGIN_PREFIX, files: (components) => losslessClawFiles(components.losslessClaw.package) }],
  async check({ host, components }) {
    const have = await installedPackageVersion(host, `${PLUGIN_PREFIX}/node_modules`, components.losslessClaw.package);
    const state = await packageState(host, have, components.losslessClaw.version, losslessClawFiles(components.losslessClaw.package));
    if (!state.install) return { changes: [] };
    const summary = state.damaged ? `reinstall lossless-claw ${have}: ${state.damaged}` : have ? `lossless-claw ${have} -> ${components.losslessClaw.version}` : `install lossless-claw ${components.losslessClaw.version}`;
    return { changes: [{ target: components.losslessClaw.package, summary }], notify: ['gateway-restart'], data: state };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    await ensureDirRecorded(host, PLUGINS_PREFIX);
    if (!(await host.files.exists(PLUGINS_MANIFEST.path))) {
      await host.files.write(PLUGINS_MANIFEST.path, '{ "name": "service-deploy-plugins", "private": true }\n', { mode: PLUGINS_MANIFEST.mode });
    }
    const doing = `npm install ${components.sources.losslessClawSpec}`;
    ctx.progress(doing);
    await installAfresh(host, `${PLUGIN_PREFIX}/node_modules/${components.losslessClaw.package}`, Boolean((plan.data as PackageState).damaged), async () => {
      await npm(host, ['install', '--prefix', host.paths.real(PLUGIN_PREFIX), '--no-audit', '--no-fund', '--omit=peer', components.sources.losslessClawSpec], {
        progress: (counts) => ctx.progress(`${doing}: ${counts}`),
      });
    });
    await recordProgramFiles(host, losslessClawFiles(components.losslessClaw.package));
  },
  async verify({ host, components }) {
    const have = await installedPackageVersion(host, `${PLUGIN_PREFIX}/node_modules`, components.losslessClaw.package);
    if (have !== components.losslessClaw.version) throw new Error(`lossless-claw ${have ?? 'missing'} after install`);
  },
};

export function losslessClawDir(packageName: string): string {
  return `${PLUGIN_PREFIX}/node_modules/${packageName}`;
}
