import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Exec, currentLowering, runLowered } from '../../src/host/exec.js';
import { Logger } from '../../src/host/log.js';
import { Redactor } from '../../src/host/redact.js';
import { CommandError } from '../../src/errors.js';

const exec = () => {
  const redactor = new Redactor();
  return new Exec(redactor, new Logger(redactor, { quiet: true }), { PATH: process.env.PATH });
};

describe('Exec.run: a command killed at its time limit', () => {
  it('says it timed out (a verdict nobody gave), apart from a command that failed by itself', async () => {
    const killed = await exec().run('sleep', ['60'], { timeoutMs: 200, allowFailure: true });
    expect(killed).toMatchObject({ failed: true, timedOut: true });
    const failed = await exec().run('sh', ['-c', 'exit 3'], { allowFailure: true });
    expect(failed).toMatchObject({ failed: true, timedOut: false, exitCode: 3 });
    const fine = await exec().run('true', []);
    expect(fine).toMatchObject({ failed: false, timedOut: false, exitCode: 0 });
  });

  it('throws a CommandError naming the limit when failure is not allowed', async () => {
    const error = await exec().run('sleep', ['60'], { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as Error).message).toContain('timed out after 200 ms');
  });
});

describe('runLowered: commands at a lower CPU priority', () => {
  it('a command started inside runs (with what it starts) at our nice value plus the amount; outside, at ours', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-nice-'));
    const go = path.join(dir, 'go');
    try {
      // The child says "ready", then waits for the file: by then it has been reniced (at
      // spawn, before any of its output is read). Its own child reports the nice value it inherited.
      const result = await runLowered(5, async () => {
        expect(currentLowering()).toBe(5);
        return exec().run('sh', ['-c', `echo ready; n=0; while [ ! -e ${go} ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; sh -c 'cut -d" " -f19 /proc/$$/stat'`], {
          timeoutMs: 60_000,
          onOutputLine: (line) => {
            if (line.trim() === 'ready') fs.writeFileSync(go, '');
          },
        });
      });
      expect(result.stdout.trim().split('\n').at(-1)).toBe(String(Math.min(19, os.getPriority() + 5)));
      expect(currentLowering()).toBe(0);
      const plain = await exec().run('sh', ['-c', `sh -c 'cut -d" " -f19 /proc/$$/stat'`]);
      expect(plain.stdout.trim()).toBe(String(os.getPriority()));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
