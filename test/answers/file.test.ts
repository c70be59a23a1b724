import { describe, expect, it } from 'vitest';
import { answersFileProblem, parseAnswersFile } from '../../src/answers/file.js';
import { resolveAnswers, type AnswerInputs } from '../../src/answers/index.js';
import { UsageError } from '../../src/errors.js';

const W = '--answers /root/answers.env';

describe('the answers file', () => {
  it('reads environment lines: bare, quoted the way a shell quotes, export, comments', async () => {
    const text = [
      '# answers for Acme',
      'SERVICE_CUSTOMER_NAME="Acme Dental GmbH"   # prompt 1',
      "export SERVICE_API_KEY='pkt_0123456789abcdef'",
      'SERVICE_MESH_AUTH_KEY=tskey-auth-0123',
      "SERVICE_MCP_TOKEN='mcp'\\''tok'",
      '  SERVICE_MODEL=model\\ one',
      '',
    ].join('\n');
    expect(await parseAnswersFile(text, W)).toEqual({
      customerName: 'Acme Dental GmbH',
      apiKey: 'pkt_0123456789abcdef',
      meshAuthKey: 'tskey-auth-0123',
      mcpToken: "mcp'tok",
      modelId: 'model one',
    });
  });

  it('still reads the JSON form (cloud-init, Ansible), comments before the object included', async () => {
    expect(await parseAnswersFile('// generated\n{ customerName: "Beta", apiKey: "pkt_x" }', W)).toEqual({ customerName: 'Beta', apiKey: 'pkt_x' });
  });

  it('is data, never run: expansions, commands and unknown names are refused naming the line, never the value', async () => {
    const cases: Array<[string, RegExp]> = [
      ['SERVICE_API_KEY=$(cat /etc/shadow)', /line 1 \(SERVICE_API_KEY\): has an unquoted \$/],
      ['SERVICE_API_KEY="pkt_$HOME"', /line 1 \(SERVICE_API_KEY\): has \$ or ` in double quotes/],
      ['\nSERVICE_API_KEY=pkt_abc; rm -rf /', /line 2 \(SERVICE_API_KEY\): has an unquoted ;/],
      ['SERVICE_API_KEY=pkt_abc extra', /has text after the value/],
      ["SERVICE_MCP_TOKEN='unclosed", /a single quote is not closed/],
      ['SERVICE_SETUP_URL=https://x.example', /line 1: SERVICE_SETUP_URL is not an answer/],
      ['PATH=/tmp', /line 1: PATH is not an answer/],
      ['just some text', /line 1: expected NAME=value/],
      ['SERVICE_MODEL=a\nSERVICE_MODEL=b', /line 2: SERVICE_MODEL is given twice/],
    ];
    for (const [text, message] of cases) {
      let thrown: unknown;
      try {
        await parseAnswersFile(text, W);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, text).toBeInstanceOf(UsageError);
      expect((thrown as Error).message, text).toMatch(message);
      expect((thrown as Error).message).not.toContain('pkt_abc');
      expect((thrown as Error).message).not.toContain('/etc/shadow');
    }
  });

  it('must be the caller\'s and readable by nobody else', () => {
    expect(answersFileProblem({ uid: 0, mode: 0o100600 }, 0)).toBeUndefined();
    expect(answersFileProblem({ uid: 0, mode: 0o100400 }, 0)).toBeUndefined();
    expect(answersFileProblem({ uid: 0, mode: 0o100644 }, 0)).toBe('its mode is 0644: group or other users can read its secrets (0600 wanted)');
    expect(answersFileProblem({ uid: 0, mode: 0o100606 }, 0)).toMatch(/0606: group or other users can change/);
    expect(answersFileProblem({ uid: 1000, mode: 0o100600 }, 0)).toBe('it belongs to uid 1000, not to root who runs service-deploy');
  });

  it('SERVICE_ANSWERS_FILE names it when --answers does not; --answers wins; env and flags still override it', async () => {
    const files: Record<string, string> = {
      'env.answers': 'SERVICE_CUSTOMER_NAME=FromEnvFile\nSERVICE_API_KEY=pkt_envfile_0001\nSERVICE_MCP_TOKEN=mcp-envfile\nSERVICE_MESH_AUTH_KEY=tskey-auth-1',
      'flag.answers': '{ "customerName": "FromFlagFile", "apiKey": "pkt_flagfile_001", "mcpToken": "mcp-flag", "meshAuthKey": "tskey-auth-2" }',
    };
    const asked: Array<{ path: string; private?: boolean }> = [];
    const base: AnswerInputs = {
      flags: {},
      env: { SERVICE_ANSWERS_FILE: 'env.answers' },
      defaultModelId: 'm-default',
      readUserFile: async (p, options) => {
        asked.push({ path: p, private: options?.private });
        return files[p]!;
      },
    };
    expect(await resolveAnswers(base)).toMatchObject({ customerName: 'FromEnvFile', apiKey: 'pkt_envfile_0001', mcpToken: 'mcp-envfile' });
    expect(asked).toEqual([{ path: 'env.answers', private: true }]);
    expect(await resolveAnswers({ ...base, flags: { answers: 'flag.answers' } })).toMatchObject({ customerName: 'FromFlagFile' });
    const over = await resolveAnswers({ ...base, env: { ...base.env, SERVICE_MODEL: 'm-env' }, flags: { customerName: 'Flag Co' } });
    expect(over).toMatchObject({ customerName: 'Flag Co', modelId: 'm-env', apiKey: 'pkt_envfile_0001' });
    const bad = resolveAnswers({ ...base, env: { SERVICE_ANSWERS_FILE: 'env.answers' }, readUserFile: async () => 'SERVICE_API_KEY=short' });
    await expect(bad).rejects.toThrow(/service API key \(from SERVICE_ANSWERS_FILE\)/);
  });

  it('a file refused for its mode names the flag and why, with the fix', async () => {
    const refused = resolveAnswers({
      flags: { answers: 'a.env' },
      env: {},
      defaultModelId: 'm',
      readUserFile: async () => {
        throw new UsageError('refused: its mode is 0644: group or other users can read its secrets (0600 wanted)', 'chmod 600 a.env');
      },
    });
    await expect(refused).rejects.toThrow(/^--answers a\.env: refused: its mode is 0644/);
  });
});
