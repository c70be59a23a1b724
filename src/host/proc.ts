import fs from 'node:fs/promises';
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
      raw = await fs.readFile(`${this.procRoot}/${pid}/environ`, 'utf8');
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
      await fs.access(`${this.procRoot}/${pid}`);
      return true;
    } catch {
      return false;
    }
  }
}
