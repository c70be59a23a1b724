import { describe, expect, it } from 'vitest';
import { CommandError } from '../../src/errors.js';
import { createHost } from '../../src/host/index.js';
import { Redactor, maskSecret } from '../../src/host/redact.js';

const SECRET = 'pkt_live_9f8e7d6c5b4a39281706';

describe('secret redaction', () => {
  it('masks every occurrence, longest secret first', () => {
    const r = new Redactor();
    r.add('abcdef', 'abcdefghij');
    expect(r.redact('x abcdefghij y abcdef z')).toBe('x **** y **** z');
  });

  it('ignores values too short to be secrets', () => {
    const r = new Redactor();
    r.add('ab', '', undefined);
    expect(r.size).toBe(0);
    expect(r.redact('ab ab')).toBe('ab ab');
  });

  it('refuses to start a process with a secret in its arguments', async () => {
    const lines: string[] = [];
    const host = createHost({ stderr: (l) => lines.push(l), verbose: true });
    host.redactor.add(SECRET);
    await expect(host.exec.run('echo', [`--key=${SECRET}`])).rejects.toThrow(/secret would appear in its arguments/);
    expect(lines.join('\n')).not.toContain(SECRET);
  });

  it('redacts command output and error messages', async () => {
    const lines: string[] = [];
    const host = createHost({ stderr: (l) => lines.push(l), verbose: true });
    host.redactor.add(SECRET);
    const error = await host.exec
      // secretEnv: a child may hold a secret in its environment only when the call says so.
      .run('sh', ['-c', 'echo "key is $K" >&2; exit 3'], { env: { K: SECRET }, secretEnv: ['K'] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    const message = (error as CommandError).message;
    expect(message).toContain('key is ****');
    expect(message).toContain('exit code 3');
    expect(message).not.toContain(SECRET);
    expect((error as CommandError).result.stderr).not.toContain(SECRET);
    expect(lines.join('\n')).not.toContain(SECRET);
  });

  it('passes secrets through stdin', async () => {
    const host = createHost({ stderr: () => undefined });
    host.redactor.add(SECRET);
    const result = await host.exec.run('sh', ['-c', 'read -r v; [ "$v" = "$EXPECTED" ] && echo same'], {
      input: `${SECRET}\n`,
      env: { EXPECTED: SECRET },
      secretEnv: ['EXPECTED'],
    });
    expect(result.stdout.trim()).toBe('same');
  });

  it('logs through the redactor, to stderr and the log file', async () => {
    const { tempDir } = await import('../helpers/tmp.js');
    const fs = await import('node:fs');
    const lines: string[] = [];
    const host = createHost({ stderr: (l) => lines.push(l) });
    host.redactor.add(SECRET);
    const logFile = `${tempDir()}/install.log`;
    host.log.attachFile(logFile);
    host.log.info(`using key ${SECRET}`);
    host.log.close();
    expect(lines).toEqual(['using key ****']);
    expect(fs.readFileSync(logFile, 'utf8')).toContain('using key ****');
    expect(fs.statSync(logFile).mode & 0o777).toBe(0o600);
  });

  it('shows a secret is set without showing it', () => {
    expect(maskSecret(SECRET)).toBe('pkt_****1706');
    expect(maskSecret('short')).toBe('****');
    expect(maskSecret(undefined)).toBe('(unset)');
  });
});
