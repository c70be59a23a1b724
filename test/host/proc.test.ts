import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHost, readOnlyHost } from '../../src/host/index.js';
import { Proc } from '../../src/host/proc.js';
import { budget, waitUntil } from '../helpers/budget.js';

/**
 * Proc.workingIn / stopWorkingIn against real processes: what a re-run does to an
 * earlier, killed installer's npm still writing into a staging folder.
 */
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-proc-'));
const folder = path.join(base, 'qmd-next');
const sibling = path.join(base, 'qmd-next-other');
fs.mkdirSync(path.join(folder, 'node_modules'), { recursive: true });
fs.mkdirSync(sibling);
const started: ChildProcess[] = [];

function start(command: string, args: string[], cwd: string): ChildProcess {
  const child = spawn(command, args, { cwd, stdio: 'ignore' });
  started.push(child);
  return child;
}

const alive = (pid: number | undefined) => pid !== undefined && fs.existsSync(`/proc/${pid}`) && !/^\d+ \(.*\) [ZX] /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));

/** The pid of the only child of `parent` (a shell's `sleep`), once it has started it. */
async function childOf(parent: number): Promise<number> {
  let found: number | undefined;
  await waitUntil(`a child of ${parent}`, () => {
    const kids = fs.readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim();
    found = kids ? Number(kids.split(' ')[0]) : undefined;
    return found !== undefined;
  });
  return found!;
}

afterAll(() => {
  for (const child of started) child.kill('SIGKILL');
  fs.rmSync(base, { recursive: true, force: true });
});

describe('Proc: the processes working in a folder', () => {
  it('finds those whose working directory or arguments are in it, and what they started; stops only those', async () => {
    const inside = start('sleep', ['300'], path.join(folder, 'node_modules'));
    // An npm-like process elsewhere naming the folder, with a child that names nothing.
    const naming = start('sh', ['-c', 'sleep 301 & wait', 'npm', 'ci', '--prefix', folder], base);
    const grandchild = await childOf(naming.pid!);
    const unrelated = start('sleep', ['302'], base);
    const neighbour = start('sh', ['-c', 'sleep 303', 'npm', '--prefix', sibling], sibling);
    await waitUntil('the processes started', () => [inside, naming, unrelated, neighbour].every((c) => alive(c.pid)));

    const proc = new Proc();
    const found = (await proc.workingIn(folder)).map((p) => p.pid).sort((a, b) => a - b);
    expect(found).toEqual([inside.pid!, naming.pid!, grandchild].sort((a, b) => a - b));
    expect(found).not.toContain(process.pid);

    const stopped = await proc.stopWorkingIn(folder, budget(10_000));
    expect(stopped.map((p) => p.pid).sort((a, b) => a - b)).toEqual(found);
    for (const pid of found) expect(alive(pid), `pid ${pid} still alive`).toBe(false);
    expect(alive(unrelated.pid)).toBe(true);
    expect(alive(neighbour.pid)).toBe(true);
    expect(await proc.workingIn(folder)).toEqual([]);
    // Nothing left to stop: nothing is signalled.
    expect(await proc.stopWorkingIn(folder)).toEqual([]);
  });

  it('check mode may look but not stop', async () => {
    const host = readOnlyHost(createHost({ env: { PATH: process.env.PATH } }));
    await expect(host.proc.workingIn(folder)).resolves.toEqual([]);
    expect(() => host.proc.stopWorkingIn(folder)).toThrow(/check mode: proc\.stopWorkingIn/);
  });
});
