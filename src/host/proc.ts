import { accessSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { isMissing } from './files.js';

/**
 * Live processes, read from /proc. Deliberately NOT mapped under SERVICE_DEPLOY_ROOT:
 * a process is machine state that a sandbox folder cannot stand in for, so sandbox
 * tests point the stand-in systemctl at a real process they started.
 */
export class Proc {
  constructor(private readonly procRoot = '/proc') {}

  /**
   * The environment a process was started with (`/proc/<pid>/environ`), or undefined
   * when the process is gone. Values can be secrets: callers compare them, never print them.
   */
  async environ(pid: number): Promise<Map<string, string> | undefined> {
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    let raw: string;
    try {
      raw = readFileSync(`${this.procRoot}/${pid}/environ`, 'utf8'); // synchronous: see Files.read
    } catch (error) {
      if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
      throw error;
    }
    const env = new Map<string, string>();
    for (const entry of raw.split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
    }
    return env;
  }

  async alive(pid: number): Promise<boolean> {
    if (!Number.isInteger(pid) || pid <= 0) return false;
    try {
      accessSync(`${this.procRoot}/${pid}`);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The processes above `pid` (its parent first, up to the namespace's init), each with
   * its arguments; a process that is gone ends the chain.
   */
  async ancestors(pid: number = process.pid): Promise<Array<{ pid: number; argv: string[] }>> {
    const out: Array<{ pid: number; argv: string[] }> = [];
    for (let current = await this.parentOf(pid); current !== undefined && current > 0 && out.length < 64; current = await this.parentOf(current)) {
      let raw: string;
      try {
        raw = readFileSync(`${this.procRoot}/${current}/cmdline`, 'utf8');
      } catch {
        break;
      }
      out.push({ pid: current, argv: raw.split('\0').filter(Boolean) });
    }
    return out;
  }

  /**
   * The processes working in `folder` (a real path): their working directory is in it, or
   * one of their arguments is it or a path in it (`npm ci --prefix FOLDER`); with every
   * process they started. Never this process nor its ancestors. Zombies are left out:
   * they write nothing.
   */
  async workingIn(folder: string): Promise<WorkingProcess[]> {
    const inFolder = (p: string) => p === folder || p.startsWith(`${folder}/`);
    const spared = new Set([process.pid, ...(await this.ancestors()).map((a) => a.pid)]);
    const table = this.table();
    const found = new Set<number>();
    for (const entry of table.values()) {
      if (spared.has(entry.pid)) continue;
      const cwd = this.cwdOf(entry.pid);
      if ((cwd !== undefined && inFolder(cwd)) || entry.argv.some(inFolder)) found.add(entry.pid);
    }
    // What they started (an install script's shell, node-gyp): by parent, until nothing new.
    for (let grew = true; grew; ) {
      grew = false;
      for (const entry of table.values()) {
        if (!found.has(entry.pid) && found.has(entry.ppid) && !spared.has(entry.pid)) {
          found.add(entry.pid);
          grew = true;
        }
      }
    }
    return [...found].map((pid) => {
      const { argv, startTime } = table.get(pid)!;
      return { pid, argv, startTime };
    });
  }

  /**
   * Stops (SIGKILL) what workingIn(folder) finds and waits until it is gone, up to
   * `timeoutMs`: before an install empties a staging folder that an earlier, killed
   * installer's npm may still be writing into (orphaned, it outlives its parent). A
   * process is signalled only if it is still the one found (same start time).
   */
  async stopWorkingIn(folder: string, timeoutMs = 10_000): Promise<WorkingProcess[]> {
    const found = await this.workingIn(folder);
    const now = found.length > 0 ? this.table() : new Map<number, ProcessEntry>();
    for (const p of found) {
      if (now.get(p.pid)?.startTime !== p.startTime) continue;
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const live = this.table();
      const left = found.filter((p) => live.get(p.pid)?.startTime === p.startTime);
      if (left.length === 0) return found;
      if (Date.now() >= deadline) throw new Error(`processes still working in ${folder} did not stop: ${left.map((p) => `${p.pid} ${p.argv.slice(0, 4).join(' ')}`).join('; ')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Every live (not zombie) process: pid, parent, start time (clock ticks since boot) and arguments. */
  private table(): Map<number, ProcessEntry> {
    const out = new Map<number, ProcessEntry>();
    let names: string[];
    try {
      names = readdirSync(this.procRoot);
    } catch {
      return out;
    }
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      const pid = Number(name);
      try {
        const stat = readFileSync(`${this.procRoot}/${pid}/stat`, 'utf8');
        // pid (comm) state ppid ... starttime (field 22): the command name may hold spaces and parentheses.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (fields[0] === 'Z' || fields[0] === 'X') continue;
        const argv = readFileSync(`${this.procRoot}/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        out.set(pid, { pid, ppid: Number(fields[1]), startTime: fields[19] ?? '', argv });
      } catch {
        // Gone while read.
      }
    }
    return out;
  }

  private cwdOf(pid: number): string | undefined {
    try {
      return readlinkSync(`${this.procRoot}/${pid}/cwd`).replace(/ \(deleted\)$/, '');
    } catch {
      return undefined;
    }
  }

  private async parentOf(pid: number): Promise<number | undefined> {
    try {
      const stat = readFileSync(`${this.procRoot}/${pid}/stat`, 'utf8');
      // pid (comm) state ppid ...: the command name may hold spaces and parentheses.
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return undefined;
    }
  }
}

export interface WorkingProcess {
  pid: number;
  argv: string[];
  /** Clock ticks since boot (/proc/<pid>/stat field 22): tells a reused pid apart. */
  startTime: string;
}

interface ProcessEntry extends WorkingProcess {
  ppid: number;
}
