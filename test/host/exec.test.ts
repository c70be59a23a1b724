import { describe, expect, it } from 'vitest';
import { Exec } from '../../src/host/exec.js';
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
