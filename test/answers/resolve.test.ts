import { describe, expect, it } from 'vitest';
import { slugify, defaultMeshHostname } from '../../src/answers/index.js';
import { UsageError } from '../../src/errors.js';
import { resolveAnswers, type AnswerInputs, type Prompter } from '../../src/answers/index.js';

const CURRENT = { customerName: 'Acme', apiKey: 'pkt_current_key_0001', modelId: 'm-current', meshHostname: 'openclaw-acme', mcpToken: 'mcp-current-0001' };

function inputs(over: Partial<AnswerInputs> = {}): AnswerInputs {
  return { flags: {}, env: {}, defaultModelId: 'm-default', readUserFile: async () => '', ...over };
}

/** A prompter that answers from a script and records what it was asked. */
function scripted(answers: string[]): Prompter & { asked: string[] } {
  const asked: string[] = [];
  // Like inquirer: an empty input takes the default, then the answer is validated.
  const next = async (q: { message: string; default?: string; validate: (v: string) => true | string }) => {
    asked.push(q.message);
    const a = (answers.shift() ?? '') || q.default || '';
    const ok = q.validate(a);
    if (ok !== true) throw new Error(`prompt rejected "${a}": ${ok}`);
    return a;
  };
  return { asked, input: next, secret: next };
}

describe('resolveAnswers', () => {
  it('asks the six questions in the spec order, with derived defaults', async () => {
    const p = scripted(['Zahnarztpraxis Dr. Müller', 'pkt_abcdefghijkl', '', 'tskey-auth-abc', '', 'mcp-tok-xyz']);
    const a = await resolveAnswers(inputs({ prompter: p }));
    expect(p.asked.map((m) => m.split(' (')[0])).toEqual(['Customer name', 'Service API key', 'Model ID', 'Mesh network auth key', 'Mesh network hostname', 'Service MCP token']);
    expect(a).toEqual({
      customerName: 'Zahnarztpraxis Dr. Müller',
      customerSlug: 'zahnarztpraxis-dr-muller',
      apiKey: 'pkt_abcdefghijkl',
      modelId: 'm-default',
      meshAuthKey: 'tskey-auth-abc',
      meshHostname: 'openclaw-zahnarztpraxis-dr-muller',
      mcpToken: 'mcp-tok-xyz',
    });
  });

  it('on a re-run, Enter keeps current values, secrets included, and the mesh key may be skipped', async () => {
    const p = scripted(['', '', 'm-new', '', '', '']);
    const a = await resolveAnswers(inputs({ prompter: p, current: CURRENT }));
    expect(a).toMatchObject({ customerName: 'Acme', apiKey: 'pkt_current_key_0001', modelId: 'm-new', meshHostname: 'openclaw-acme', mcpToken: 'mcp-current-0001' });
    expect(a.meshAuthKey).toBeUndefined();
    expect(p.asked.find((m) => m.startsWith('Service API key'))).toContain('Enter keeps the current one');
  });

  it('asks only what flags and env did not answer', async () => {
    const p = scripted(['tskey-auth-only']);
    const a = await resolveAnswers(
      inputs({
        prompter: p,
        flags: { customerName: 'Beta', model: 'm-flag', meshHostname: 'beta-box' },
        env: { SERVICE_API_KEY: 'pkt_from_env_0000', SERVICE_MCP_TOKEN: 'mcp-env' },
      }),
    );
    expect(p.asked).toEqual(['Mesh network auth key']);
    expect(a).toMatchObject({ modelId: 'm-flag', meshHostname: 'beta-box', apiKey: 'pkt_from_env_0000' });
  });

  it('precedence: current < answers file < env < flags', async () => {
    const a = await resolveAnswers(
      inputs({
        current: CURRENT,
        flags: { answers: 'a.json', model: 'm-flag' },
        env: { SERVICE_MODEL: 'm-env', SERVICE_CUSTOMER_NAME: 'Env Name' },
        readUserFile: async () => JSON.stringify({ modelId: 'm-file', customerName: 'File Name', mcpToken: 'mcp-file' }),
      }),
    );
    expect(a).toMatchObject({ modelId: 'm-flag', customerName: 'Env Name', mcpToken: 'mcp-file', apiKey: 'pkt_current_key_0001' });
  });

  it('collects every invalid answer into one usage error', async () => {
    const error = await resolveAnswers(
      inputs({ flags: { customerName: '', meshHostname: '-bad-' }, env: { SERVICE_API_KEY: 'nope_123456789', SERVICE_MCP_TOKEN: 'has space' } }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    const message = (error as Error).message;
    expect(message).toContain('customer name (from --customer-name)');
    expect(message).toContain('service API key (from SERVICE_API_KEY): service API key must start with pkt_');
    expect(message).toContain('mesh network hostname (from --mesh-hostname)');
    expect(message).toContain('service MCP token (from SERVICE_MCP_TOKEN): service MCP token must not contain spaces');
  });

  it('rejects unknown fields in an answers file', async () => {
    await expect(resolveAnswers(inputs({ flags: { answers: 'a.json' }, readUserFile: async () => '{"apikey":"x"}' }))).rejects.toThrow(/unknown field "apikey"/);
  });
});

describe('slugs and hostnames', () => {
  it('derives ASCII slugs and valid DNS labels', () => {
    expect(slugify('  Café & Co. — Berlin  ')).toBe('cafe-co-berlin');
    expect(slugify('日本')).toBe('');
    expect(defaultMeshHostname('A'.repeat(100))).toMatch(/^openclaw-a{40}$/);
  });
});
