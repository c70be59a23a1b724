import { execa } from 'execa';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BINARY, REPO } from '../helpers/binary.js';
import { SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const PTY = path.join(REPO, 'test/fixtures/pty-run.py');
const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

/** Runs the binary in a real pseudo-terminal, answering the prompts in order. */
function onTerminal(sb: Sandbox, args: string[], script: Array<[string, string]>) {
  return execa('python3', [PTY, JSON.stringify(script), BINARY, ...args], {
    env: { ...sb.env(), TERM: 'xterm-256color', COLUMNS: '100', LINES: '40' },
    extendEnv: false,
    reject: false,
    timeout: 120_000,
  });
}

describe('interactive install on a terminal', () => {
  it('asks the six questions in order, masks secrets, then deploys', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    const result = await onTerminal(sb, ['install'], [
      ['Customer name', 'Praxis Sonne'],
      ['Service API key', SECRETS.apiKey],
      ['Model ID', ''],
      ['Mesh network auth key', SECRETS.meshAuthKey],
      ['Mesh network hostname', ''],
      ['Service MCP token', SECRETS.mcpToken],
    ]);
    const screen = result.stdout;
    expect(result.exitCode, screen).toBe(0);
    // Secrets are echoed as *, never in clear.
    for (const secret of Object.values(SECRETS)) expect(screen).not.toContain(secret);
    expect(screen).toContain('*'.repeat(SECRETS.apiKey.length));
    // Defaults offered: the profile's model and the slug-derived hostname.
    expect(screen).toContain('claude-sonnet-4-5');
    expect(screen).toContain('openclaw-praxis-sonne');
    expect(screen).toMatch(/recap: ok=\d+ changed=\d+ skipped=\d+ failed=0/);
    expect(sb.read('var/lib/service-deploy/answers.json')).toContain('"customerName": "Praxis Sonne"');
  });

  it('a bad answer is refused at the prompt with the reason, and can be corrected', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    // A real run: --check would not ask the model or the hostname (both have defaults).
    const result = await onTerminal(sb, ['install'], [
      ['Customer name', 'Nord GmbH'],
      ['Service API key', 'sk_wrong_prefix_123'],
      ['must start with pkt_', `\u0015${SECRETS.apiKey}`], // Ctrl-U clears the line, then the right key
      ['Model ID', ''],
      ['Mesh network auth key', SECRETS.meshAuthKey],
      ['Mesh network hostname', 'Bad_Name'],
      ['DNS label', '\u0015nord-box'],
      ['Service MCP token', SECRETS.mcpToken],
    ]);
    expect(result.exitCode, result.stdout).toBe(0);
    expect(result.stdout).toMatch(/recap: ok=\d+ changed=\d+ skipped=\d+ failed=0/);
    expect(sb.read('var/lib/service-deploy/answers.json')).toContain('"meshHostname": "nord-box"');
  });
});
