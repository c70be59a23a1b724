import type { Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import { renderTemplate } from '../render/template.js';
import { planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { recordProgramFiles } from '../pipeline/manifest.js';
import { desired, type WrittenFile } from '../pipeline/writes.js';
import { installAfresh, packageState, type PackageState } from './package-files.js';
import { GLOBAL_MODULES, OPENCLAW_ENTRY, installedPackageVersion, npm, openclawFiles } from '../runtime/openclaw.js';

export const OPENCLAW_WRAPPER: WrittenFile = { path: LAYOUT.openclawWrapper, type: 'file', mode: 0o755, check: 'sha256', rewrite: { from: async () => openclawWrapper() } };

export function openclawWrapper(): DesiredFile {
  return desired(OPENCLAW_WRAPPER, renderTemplate('openclaw-wrapper.sh', { nodeBin: `${LAYOUT.nodePrefix}/bin`, openclawEntry: OPENCLAW_ENTRY, secretsEnv: LAYOUT.runtimeSecretsEnv }));
}

/**
 * OpenClaw at the pinned version, installed with the pinned Node's npm (npm checks
 * every tarball against the registry's integrity), plus /usr/local/bin/openclaw so
 * `openclaw ...` works for support staff.
 */
export const agentRuntimeStep: Step = {
  id: 'agent-runtime',
  title: 'Agent runtime (OpenClaw)',
  needs: ['node-runtime'],
  writes: [{ type: 'programs', path: LAYOUT.nodePrefix, files: (components) => openclawFiles(components.openclaw.package) }, OPENCLAW_WRAPPER],
  async check({ host, components }) {
    const want = components.openclaw.version;
    const have = await installedPackageVersion(host, GLOBAL_MODULES, components.openclaw.package);
    // The right version with a file missing or changed since npm wrote it: install again.
    const state = await packageState(host, have, want, openclawFiles(components.openclaw.package));
    const changes = [];
    if (have !== want) {
      const upgrade = `OpenClaw ${have} -> ${want} (upgrade: verified backup first, the new package installed beside the old one and switched in, openclaw doctor --fix migrations, /healthz; rolled back by itself on any failure)`;
      changes.push({ target: 'openclaw', summary: have ? upgrade : `install OpenClaw ${want}` });
    }
    else if (state.damaged) changes.push({ target: 'openclaw', summary: `reinstall OpenClaw ${want}: ${state.damaged}` });
    const wrapper = await planFile(host, openclawWrapper());
    if (wrapper) changes.push(wrapper);
    return { changes, notify: state.install ? ['gateway-restart'] : [], data: state };
  },
  async apply(ctx, plan) {
    const { host, components } = ctx;
    const state = plan.data as PackageState;
    if (state.install) {
      const doing = `npm install ${components.sources.openclawSpec}`;
      ctx.progress(`${doing} (this takes a minute)`);
      await installAfresh(host, `${GLOBAL_MODULES}/${components.openclaw.package}`, Boolean(state.damaged), async () => {
        await npm(host, ['install', '--global', '--prefix', host.paths.real(LAYOUT.nodePrefix), '--no-audit', '--no-fund', '--allow-scripts=openclaw', components.sources.openclawSpec], {
          progress: (counts) => ctx.progress(`${doing}: ${counts}`),
        });
      });
      await recordProgramFiles(host, openclawFiles(components.openclaw.package));
    }
    await writeDesired(host, openclawWrapper());
  },
  async verify({ host, components }) {
    const have = await installedPackageVersion(host, GLOBAL_MODULES, components.openclaw.package);
    if (have !== components.openclaw.version) throw new Error(`OpenClaw ${have ?? 'missing'} after install, expected ${components.openclaw.version}`);
  },
};
