// The host's cgroups around the e2e's containers. systemd-nspawn with --keep-unit (no
// systemd on the host to register with) keeps the container in the cgroup it was
// started in, split into "payload" (the container) and "supervisor" (nspawn itself)
// below it. Started from the same cgroup (the host's root here), every container got
// the same /payload: the inits of four containers shared one init.scope, and their
// systemds one unit tree, so the soak's "gateway unit" held the gateways of the other
// e2e jobs running at the same time, a browser of one of them included (issue 26). Each
// container therefore starts in a cgroup of its own in every hierarchy nspawn places it
// in, and the probes check that what they count is the container's own.
import fs from 'node:fs';
import path from 'node:path';

interface Mount {
  point: string;
  type: string;
  options: string[];
}

export function mounts(): Mount[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [left, right] = line.split(' - ');
      const fields = left!.split(' ');
      const [type, , superOptions] = right!.split(' ');
      return { point: fields[4]!, type: type!, options: (superOptions ?? '').split(',') };
    });
}

/** `hierarchy-id:controllers:path` lines of /proc/<pid>/cgroup. */
export function cgroupsOf(pid: number | 'self'): Array<{ controllers: string[]; path: string }> {
  return fs
    .readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [, controllers, ...rest] = line.split(':');
      return { controllers: controllers ? controllers.split(',') : [], path: rest.join(':') };
    });
}

/**
 * The hierarchies systemd-nspawn places a container in, as the host folder of this
 * process's cgroup in each: the unified one (cgroup v2) and, on a hybrid or legacy host
 * (this development machine), systemd's named v1 hierarchy.
 */
function ownHierarchies(): string[] {
  const all = mounts();
  const own = cgroupsOf('self');
  const out: string[] = [];
  const unified = all.find((m) => m.type === 'cgroup2');
  const unifiedPath = own.find((c) => c.controllers.length === 0)?.path;
  if (unified && unifiedPath !== undefined) out.push(path.join(unified.point, unifiedPath));
  const named = all.find((m) => m.type === 'cgroup' && m.options.includes('name=systemd'));
  const namedPath = own.find((c) => c.controllers.includes('name=systemd'))?.path;
  if (named && namedPath !== undefined) out.push(path.join(named.point, namedPath));
  return out;
}

/**
 * Makes the cgroup folders a container starts in: `given` (the soak's memory limit)
 * and a new folder `name` in every other hierarchy nspawn uses. The caller moves the
 * process that becomes systemd-nspawn into all of them (cgroup.procs) and removes them
 * once the container is gone (removeCgroups).
 */
export function containerCgroups(name: string, given?: string): string[] {
  const dirs = given ? [given] : [];
  for (const parent of ownHierarchies()) {
    // The soak's limit on a cgroup v2 host already is the container's unified cgroup.
    if (given && (given + '/').startsWith(parent.replace(/\/?$/, '/'))) continue;
    const dir = path.join(parent, name);
    fs.mkdirSync(dir);
    dirs.push(dir);
  }
  return dirs;
}

/** Removes cgroup folders and what the container's systemd left below them, deepest first (a few tries: the last processes may still be exiting). */
export async function removeCgroups(dirs: string[]): Promise<void> {
  const removeTree = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeTree(path.join(dir, entry.name));
    fs.rmdirSync(dir);
  };
  for (const dir of dirs) {
    for (let attempt = 0; ; attempt++) {
      try {
        removeTree(dir);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
        if (attempt >= 20) throw new Error(`cannot remove the container's cgroup ${dir}: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }
}

/**
 * The cgroup the harness's commands run in inside a container, beside its init.scope:
 * on a real server a command runs in a cgroup its systemd knows (an ssh session's scope,
 * cloud-final.service). A process left in the harness's own cgroup, outside the
 * container's tree (`0::/../..` as the container sees it), is refused by systemd 257's
 * logind: `loginctl enable-linger root` failed with "Protocol driver not attached"
 * (EUNATCH) for the whole install on Debian 13, and worked from this cgroup.
 */
export const EXEC_CGROUP = 'e2e-exec';

/** Makes EXEC_CGROUP in each hierarchy the container's systemd runs in; [] before its init sits in init.scope. */
export function execCgroups(initPid: number): string[] {
  const all = mounts();
  const out: string[] = [];
  for (const c of cgroupsOf(initPid)) {
    const mount = c.controllers.length === 0 ? all.find((m) => m.type === 'cgroup2') : c.controllers.includes('name=systemd') ? all.find((m) => m.type === 'cgroup' && m.options.includes('name=systemd')) : undefined;
    if (!mount || !c.path.endsWith('/init.scope')) continue;
    const dir = path.join(mount.point, path.dirname(c.path), EXEC_CGROUP);
    fs.mkdirSync(dir, { recursive: true });
    out.push(dir);
  }
  return out;
}

/** The host folder of a process's cgroup in the unified hierarchy (cgroup v2), if the host has one. */
export function unifiedCgroupOf(pid: number): string | undefined {
  const unified = mounts().find((m) => m.type === 'cgroup2');
  const own = cgroupsOf(pid).find((c) => c.controllers.length === 0)?.path;
  return unified && own !== undefined ? path.join(unified.point, own) : undefined;
}

export function pidNamespace(pid: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * The processes in a cgroup folder (and below it) that are not in the given PID
 * namespace: another container's. A container's cgroups hold only its own processes;
 * anything else here means they are shared and every count of them is wrong.
 */
export function foreignProcesses(pids: number[], namespace: string): number[] {
  return pids.filter((pid) => {
    const ns = pidNamespace(pid);
    return ns !== undefined && ns !== namespace;
  });
}
