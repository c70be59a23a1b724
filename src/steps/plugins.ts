import type { Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { ensureDirRecorded, ensureFolder } from '../pipeline/files.js';
import { recordProgramFiles } from '../pipeline/manifest.js';
import type { WrittenFile, WrittenFolder } from '../pipeline/writes.js';
import { installAfresh, packageState, type PackageState } from './package-files.js';
import { PLUGIN_PREFIX, installedPackageVersion, losslessClawFiles, npm, qmdFiles } from '../runtime/openclaw.js';
import { installLockedProject, lockedProject, lockedTreeState, projectIsCurrent, switchProjectIn, type LockedProject } from '../runtime/locked-install.js';

/**
 * QMD memory, the program. OpenClaw removed its QMD memory backend in 2026.8.1 (builtin
 * memory is the only engine now), so QMD is installed as its own program and wired into
 * the agent as an MCP server (one resident `qmd mcp --http`, steps/memory-service.ts),
 * which the pinned OpenClaw supports. Its project folder is installed from the lock this
 * binary ships for the architecture (runtime/locked-install.ts): the CPU build of its
 * native parts only (`--omit=optional` drops node-llama-cpp's GPU prebuilds, about 660 of
 * the 856 MB; the CPU ones are dependencies of the project). Staged beside and renamed in;
 * what else the folder holds (the refresh script) is carried over.
 * What it indexes and when: steps/memory-index.ts. docs/components.md has the details.
 */
const QMD_PREFIX: WrittenFolder = { path: LAYOUT.qmdPrefix, type: 'folder', mode: 0o755 };
const QMD_NEXT: WrittenFolder = { path: LAYOUT.qmdNext, type: 'folder', staged: true };
/** The project's package.json and lock, as shipped (recorded with the programs). */
const QMD_MANIFEST: WrittenFile = { path: `${LAYOUT.qmdPrefix}/package.json`, type: 'file', mode: 0o644 };
/** What npm owns in a project folder; the rest is ours and moves with the folder. */
const NPM_OWNED = new Set(['node_modules', 'package.json', 'package-lock.json']);

interface QmdPlan {
  state: PackageState;
  project: LockedProject;
}

export const memoryStep: Step = {
  id: 'memory',
  title: 'Memory daemon (QMD, as an MCP server, from the shipped lock)',
  needs: ['node-runtime'],
  // Nothing the gateway's first start waits for: its npm run yields the cores to those
  // steps. An installer killed mid-run leaves this npm running into qmd-next, slower when
  // niced: the re-run stops it before it installs there (installLockedProject).
  background: true,
  writes: [QMD_PREFIX, QMD_NEXT, QMD_MANIFEST, { type: 'programs', path: LAYOUT.qmdPrefix, files: (components) => qmdFiles(components.qmd.package) }],
  async check({ host, components }) {
    const { package: name, version: want } = components.qmd;
    const project = lockedProject('qmd', name, components.sources.qmdSpec);
    const have = await installedPackageVersion(host, `${LAYOUT.qmdPrefix}/node_modules`, name);
    const fromLock = have === want && (await projectIsCurrent(host, LAYOUT.qmdPrefix, project));
    const state = fromLock ? await lockedTreeState(host, LAYOUT.qmdPrefix, 'qmd', await packageState(host, have, want, qmdFiles(name))) : { install: true };
    if (!state.install) return { changes: [] };
    const how = `from the shipped lock (npm ${project.command}, CPU build)`;
    const summary = state.damaged
      ? `reinstall QMD ${have} ${how}: ${state.damaged}`
      : have === want ? `QMD ${want}: ${LAYOUT.qmdPrefix} is not the shipped lock's: install ${how}` : have ? `QMD ${have} -> ${want} ${how}` : `install QMD ${want} ${how}`;
    // The resident QMD MCP server runs this package; the gateway only talks to it over HTTP.
    const plan: QmdPlan = { state, project };
    return { changes: [{ target: name, summary }], notify: ['qmd-restart'], data: plan };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    const { project } = plan.data as QmdPlan;
    const doing = `npm ${project.command} ${components.sources.qmdSpec} (from the shipped lock, CPU build)`;
    ctx.progress(doing);
    try {
      await installLockedProject(host, LAYOUT.qmdNext, project, {
        // Where the CPU prebuild cannot load (an older glibc), node-llama-cpp's install
        // script would clone llama.cpp from GitHub and compile it: never on a customer's
        // server. QMD's search works without it; only local embeddings need it.
        env: { NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' },
        progress: (counts) => ctx.progress(`${doing}: ${counts}`),
      });
      const staged = await installedPackageVersion(host, `${LAYOUT.qmdNext}/node_modules`, components.qmd.package);
      if (staged !== components.qmd.version) throw new Error(`npm installed QMD ${staged ?? 'nothing'} from the lock, expected ${components.qmd.version}`);
      for (const entry of await host.files.list(LAYOUT.qmdPrefix)) {
        if (!NPM_OWNED.has(entry)) await host.files.copyTree(`${LAYOUT.qmdPrefix}/${entry}`, `${LAYOUT.qmdNext}/${entry}`);
      }
    } catch (error) {
      await host.files.remove(LAYOUT.qmdNext);
      throw error;
    }
    await switchProjectIn(host, LAYOUT.qmdNext, LAYOUT.qmdPrefix);
    await host.files.chmod(LAYOUT.qmdPrefix, QMD_PREFIX.mode!);
    await recordProgramFiles(host, qmdFiles(components.qmd.package));
  },
  async verify({ host, components }) {
    const have = await installedPackageVersion(host, `${LAYOUT.qmdPrefix}/node_modules`, components.qmd.package);
    if (have !== components.qmd.version) throw new Error(`QMD ${have ?? 'missing'} after install, expected ${components.qmd.version}`);
    if (!(await host.files.exists(LAYOUT.qmdBin))) throw new Error(`${LAYOUT.qmdBin} is missing after the QMD install`);
  },
};

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
