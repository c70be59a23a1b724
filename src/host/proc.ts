import { accessSync, readFileSync } from 'node:fs';
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
