import type { Change, Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { renderTemplate } from '../render/template.js';
import { planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { recordProgramFiles } from '../pipeline/manifest.js';
import { desired, type WrittenFile, type WrittenFolder } from '../pipeline/writes.js';
import { packageState, type PackageState } from './package-files.js';
import { OPENCLAW_ENTRY, openclawFiles } from '../runtime/openclaw.js';
import { installLockedProject, lockedProject, lockedTreeState, projectIsCurrent, switchProjectIn, type LockedProject } from '../runtime/locked-install.js';
import { GLOBAL_BIN_LINK, currentLinkTarget, globalPackageDir, livePackageDir, lockedPackageDir, packageVersionAt, pointCurrentAt } from '../runtime/openclaw-place.js';
import type { Host } from '../host/index.js';

export const OPENCLAW_WRAPPER: WrittenFile = { path: LAYOUT.openclawWrapper, type: 'file', mode: 0o755, check: 'sha256', rewrite: { from: async () => openclawWrapper() } };
/** OpenClaw's project folder (runtime/locked-install.ts), staged beside and renamed into place. */
const OPENCLAW_PROJECT: WrittenFolder = { path: LAYOUT.openclawProject, type: 'folder', mode: 0o755, staged: true };
/** The link to the package that runs (runtime/openclaw-place.ts): replaced by rename, never written through. */
const OPENCLAW_CURRENT: WrittenFile = { path: LAYOUT.openclawCurrent, type: 'file', mode: 0o777, writtenBy: 'a symbolic link to the package that runs' };

export function openclawWrapper(): DesiredFile {
  return desired(OPENCLAW_WRAPPER, renderTemplate('openclaw-wrapper.sh', { nodeBin: `${LAYOUT.nodePrefix}/bin`, openclawEntry: OPENCLAW_ENTRY, secretsEnv: LAYOUT.runtimeSecretsEnv }));
}

interface RuntimePlan {
  state: PackageState;
  project: LockedProject;
  link: boolean;
  /** The global package of the releases before the locks is still there (removed once the project runs). */
  global: boolean;
}

async function hasGlobalInstall(host: Host, name: string): Promise<boolean> {
  return (await host.files.exists(globalPackageDir(name))) || (await host.files.readLink(GLOBAL_BIN_LINK)) !== undefined;
}

/**
 * OpenClaw at the pinned version, installed from the lock this binary ships into a
 * project folder of its own (`npm ci`: exact versions, integrity checked; the project is
 * staged beside and renamed in), LAYOUT.openclawCurrent pointing at it, and
 * /usr/local/bin/openclaw so `openclaw ...` works for support staff. A server of the
 * earlier layout (a global install in the Node prefix) converges here: the project is
 * installed, the link switched, the global package removed; its state is not touched.
 */
export const agentRuntimeStep: Step = {
  id: 'agent-runtime',
  title: 'Agent runtime (OpenClaw, from the shipped lock)',
  needs: ['node-runtime'],
  writes: [OPENCLAW_PROJECT, OPENCLAW_CURRENT, { type: 'programs', path: LAYOUT.openclawProject, files: (components) => openclawFiles(components.openclaw.package) }, OPENCLAW_WRAPPER],
  async check({ host, components }) {
    const { package: name, version: want } = components.openclaw;
    const project = lockedProject('openclaw', name, components.sources.openclawSpec);
    const live = await livePackageDir(host, name);
    const projectPackage = lockedPackageDir(LAYOUT.openclawProject, name);
    const have = live ? await packageVersionAt(host, live) : undefined;
    // What runs is the project's package on a converged server: its version is read once.
    const inProject = live === projectPackage ? have : await packageVersionAt(host, projectPackage);
    const fromLock = inProject === want && (await projectIsCurrent(host, LAYOUT.openclawProject, project));
    // The right tree with a file missing or changed since npm wrote it: install again.
    const state = fromLock ? await lockedTreeState(host, LAYOUT.openclawProject, 'openclaw', await packageState(host, inProject, want, openclawFiles(name))) : { install: true };
    const link = (await host.files.readLink(LAYOUT.openclawCurrent)) !== currentLinkTarget(lockedPackageDir(LAYOUT.openclawProject, name));
    const global = await hasGlobalInstall(host, name);
    const changes: Change[] = [];
    if (have !== want && have) {
      changes.push({ target: 'openclaw', summary: `OpenClaw ${have} -> ${want} (upgrade: verified backup first, the new release installed from the lock beside the old one and switched in, openclaw doctor --fix migrations, /healthz; rolled back by itself on any failure)` });
    } else if (!have) changes.push({ target: 'openclaw', summary: `install OpenClaw ${want} from the shipped lock (npm ${project.command}) into ${LAYOUT.openclawProject}` });
    else if (global && !fromLock) changes.push({ target: 'openclaw', summary: `OpenClaw ${want}: from the global install to the shipped lock (npm ${project.command} into ${LAYOUT.openclawProject}); the agent's state stays` });
    else if (state.damaged) changes.push({ target: 'openclaw', summary: `reinstall OpenClaw ${want} from the shipped lock: ${state.damaged}` });
    else if (state.install) changes.push({ target: 'openclaw', summary: `reinstall OpenClaw ${want}: ${LAYOUT.openclawProject} is not the shipped lock's` });
    if (link && !state.install) changes.push({ target: LAYOUT.openclawCurrent, summary: `point ${LAYOUT.openclawCurrent} at ${lockedPackageDir(LAYOUT.openclawProject, name)}` });
    if (global) changes.push({ target: globalPackageDir(name), summary: `remove the global OpenClaw of the earlier layout (${globalPackageDir(name)}) once the gateway runs the project's` });
    const wrapper = await planFile(host, openclawWrapper());
    if (wrapper) changes.push(wrapper);
    const plan: RuntimePlan = { state, project, link, global };
    return { changes, notify: state.install || link ? ['gateway-restart'] : [], data: plan };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    const { package: name } = components.openclaw;
    const todo = plan.data as RuntimePlan;
    if (todo.state.install) {
      const doing = `npm ${todo.project.command} ${components.sources.openclawSpec} (from the shipped lock)`;
      ctx.progress(`${doing} (this takes a minute)`);
      try {
        await installLockedProject(host, LAYOUT.openclawNext, todo.project, { progress: (counts) => ctx.progress(`${doing}: ${counts}`) });
        const staged = await packageVersionAt(host, lockedPackageDir(LAYOUT.openclawNext, name));
        if (staged !== components.openclaw.version) throw new Error(`npm installed OpenClaw ${staged ?? 'nothing'} from the lock, expected ${components.openclaw.version}`);
      } catch (error) {
        await host.files.remove(LAYOUT.openclawNext);
        throw error;
      }
      // The running gateway keeps its files: the project it runs (if any) is renamed aside only now.
      await switchProjectIn(host, LAYOUT.openclawNext, LAYOUT.openclawProject);
      await recordProgramFiles(host, openclawFiles(name));
    }
    await pointCurrentAt(host, lockedPackageDir(LAYOUT.openclawProject, name));
    if (todo.global) {
      // The gateway may still run the global package (its unit named it): stopped first,
      // so no turn loads a file that is gone; the gateway step starts it on the project.
      await host.services.stop('user', LAYOUT.gatewayUnit).catch(() => undefined);
      await host.files.remove(globalPackageDir(name));
      if ((await host.files.readLink(GLOBAL_BIN_LINK)) !== undefined) await host.files.remove(GLOBAL_BIN_LINK);
    }
    await writeDesired(host, openclawWrapper());
  },
  async verify({ host, components }) {
    const live = await livePackageDir(host, components.openclaw.package);
    const have = live ? await packageVersionAt(host, live) : undefined;
    if (have !== components.openclaw.version || live !== lockedPackageDir(LAYOUT.openclawProject, components.openclaw.package)) {
      throw new Error(`OpenClaw ${have ?? 'missing'} runs from ${live ?? 'nowhere'} after the install, expected ${components.openclaw.version} from ${LAYOUT.openclawProject}`);
    }
  },
};
