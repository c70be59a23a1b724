import { LAYOUT } from '../../layout.js';
import { treeFindings } from '../../runtime/locked-install.js';
import { lockIndex, type LockedComponent } from '../../runtime/locks.js';
import { describeFinding } from '../../runtime/npm-lock.js';
import { layoutOf, livePackageDir } from '../../runtime/openclaw-place.js';
import { fail, pass, skip, type Check } from '../types.js';

/** At most this many packages named in one finding (the rest counted): a tree replaced whole would name hundreds. */
const NAMED = 8;

/**
 * The installed runtime trees against the locks this binary ships (issue 29): every
 * package folder under OpenClaw's and QMD's project is the lock's, at the lock's
 * version; a package changed, missing or not in the lock is a finding naming it. A tree
 * this binary ships no lock for (lossless-claw, absent from the registry the locks were
 * made with) is said in the detail.
 */
export const runtimeTreesCheck: Check = {
  id: 'runtime-trees',
  title: 'OpenClaw and QMD trees are the shipped locks',
  async run({ host, components }) {
    const index = lockIndex();
    const trees: Array<{ component: LockedComponent; label: string; folder: string }> = [];
    const live = await livePackageDir(host, components.openclaw.package);
    if (live && layoutOf(live) === 'locked') trees.push({ component: 'openclaw', label: 'OpenClaw', folder: LAYOUT.openclawProject });
    if (await host.files.exists(`${LAYOUT.qmdPrefix}/node_modules`)) trees.push({ component: 'qmd', label: 'QMD', folder: LAYOUT.qmdPrefix });
    if (trees.length === 0) return skip('no locked tree is installed (see agent-runtime and plugins)');
    const problems: string[] = [];
    const counted: string[] = [];
    for (const tree of trees) {
      const findings = await treeFindings(host, tree.folder, tree.component);
      const packages = (await host.files.list(`${tree.folder}/node_modules`)).length;
      if (findings.length === 0) {
        counted.push(`${tree.label} ${components[tree.component].version}: the lock's tree (${packages} top-level entries)`);
        continue;
      }
      const named = findings.slice(0, NAMED).map(describeFinding);
      const more = findings.length > NAMED ? `; and ${findings.length - NAMED} more` : '';
      problems.push(`${tree.label} (${tree.folder}) differs from the shipped lock in ${findings.length} package${findings.length === 1 ? '' : 's'}: ${named.join('; ')}${more}`);
    }
    const unlocked = index.trees.losslessClaw.folders ? '' : '; lossless-claw has no shipped lock (docs/components.md, "Locks")';
    if (problems.length > 0) {
      return fail(problems.join(' | '), 'run the install again: it installs the tree from the shipped lock (npm ci) beside the one in place and switches it in', { commands: ['service-deploy install'] });
    }
    return pass(`${counted.join('; ')}${unlocked}`);
  },
};
