// The channel's public names (issue 30, item 5): `--channel-host NAME|ADDRESS`,
// SERVICE_CHANNEL_HOSTS and `channelHosts` in an answers file, checked like every answer
// (the field and where it came from named, nothing repeated that is not the user's),
// stored with the answers and kept on re-runs.
import { describe, expect, it } from 'vitest';
import { parseStoredAnswers, resolveAnswers, storedAnswersContent, type AnswerInputs } from '../../src/answers/index.js';
import { parseAnswersFile } from '../../src/answers/file.js';
import { environmentProblems } from '../../src/environment.js';
import { UsageError } from '../../src/errors.js';
import { MAX_CHANNEL_HOSTS, channelHost, parseChannelHosts } from '../../src/input.js';

const ANSWERS = { SERVICE_CUSTOMER_NAME: 'Acme', SERVICE_API_KEY: 'pkt_from_env_0000', SERVICE_MCP_TOKEN: 'mcp-env', SERVICE_MESH_AUTH_KEY: 'tskey-auth-abc' };
const CURRENT = { customerName: 'Acme', apiKey: 'pkt_current_key_0001', modelId: 'm', meshHostname: 'openclaw-acme', mcpToken: 'mcp-current-0001' };

function inputs(over: Partial<AnswerInputs> = {}): AnswerInputs {
  return { flags: {}, env: ANSWERS, defaultModelId: 'm-default', readUserFile: async () => '', ...over };
}

async function refusal(run: () => Promise<unknown>): Promise<string> {
  const error = await run().then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(UsageError);
  return (error as UsageError).message;
}

describe('one channel host: a DNS name or an IP address', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['Chat.Acme-Dental.example', 'chat.acme-dental.example'],
    ['chat.acme-dental.example.', 'chat.acme-dental.example'],
    ['agent', 'agent'],
    ['2001:DB8:0:0::7', '2001:db8::7'],
    ['[2001:db8::7]', '2001:db8::7'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['  198.51.100.20 ', '198.51.100.20'],
  ])('%s -> %s', (given, canonical) => {
    expect(channelHost(given)).toEqual({ host: canonical });
  });

  it.each([
    ['https://chat.acme.example', /is a URL: give only its host name/],
    ['203.0.113.7:18790', /has a port/],
    ['chat.acme.example:443', /has a port/],
    ['[2001:db8::7]:18790', /has a port/],
    ['fe80::1%eth0', /zone index/],
    ['bücher.example', /not ASCII: .* xn-- form/],
    ['*.acme.example', /wildcard/],
    ['under_score.example', /neither an IP address nor a DNS name/],
    ['-lead.example', /neither an IP address nor a DNS name/],
    ['a..b', /neither an IP address nor a DNS name/],
    ['10.1.2', /does not end in a number/],
    ['256.1.1.1', /does not end in a number/],
    ['01.2.3.4', /does not end in a number/],
    [`${'a'.repeat(64)}.example`, /neither an IP address nor a DNS name/],
    [`${'abcdefgh.'.repeat(29)}example`, /longer than 253/],
    ['chat\u202e.example', /bidirectional text control/],
    ['', /empty/],
  ])('%j is refused: %s', (given, why) => {
    const result = channelHost(given);
    expect('problem' in result && result.problem).toMatch(why);
  });

  it('a list: comma-separated or one by one, canonical, repeats dropped, in the order given; "none" alone clears it; bounded', () => {
    expect(parseChannelHosts('chat.acme.example, 203.0.113.7,CHAT.acme.example')).toEqual(['chat.acme.example', '203.0.113.7']);
    expect(parseChannelHosts(['203.0.113.7', 'chat.acme.example,agent'])).toEqual(['203.0.113.7', 'chat.acme.example', 'agent']);
    expect(parseChannelHosts('none')).toEqual([]);
    expect(parseChannelHosts([' NONE '])).toEqual([]);
    expect(() => parseChannelHosts('none,chat.acme.example')).toThrow(/"none" clears the list and goes alone/);
    expect(() => parseChannelHosts('a.example,,b.example')).toThrow(/an empty name/);
    // Every bad entry is named at once.
    expect(() => parseChannelHosts('https://a.example,b_c,203.0.113.7')).toThrow(/"https:\/\/a\.example" is a URL.*; "b_c" is neither/);
    const many = Array.from({ length: MAX_CHANNEL_HOSTS + 1 }, (_, i) => `h${i}.example`);
    expect(() => parseChannelHosts(many)).toThrow(`${MAX_CHANNEL_HOSTS + 1} names: at most ${MAX_CHANNEL_HOSTS}`);
    expect(parseChannelHosts(many.slice(1))).toHaveLength(MAX_CHANNEL_HOSTS);
  });
});

describe('where the channel hosts come from', () => {
  it('none given and none stored: the answers have no channelHosts', async () => {
    expect((await resolveAnswers(inputs())).channelHosts).toBeUndefined();
  });

  it('precedence: --channel-host > SERVICE_CHANNEL_HOSTS > answers file > stored', async () => {
    const file = async () => '{ "channelHosts": ["file.example", "198.51.100.1"] }';
    const stored = { ...CURRENT, channelHosts: ['stored.example'] };
    expect((await resolveAnswers(inputs({ current: stored }))).channelHosts).toEqual(['stored.example']);
    expect((await resolveAnswers(inputs({ current: stored, flags: { answers: '/f' }, readUserFile: file }))).channelHosts).toEqual(['file.example', '198.51.100.1']);
    const env = { ...ANSWERS, SERVICE_CHANNEL_HOSTS: 'env.example,203.0.113.9' };
    expect((await resolveAnswers(inputs({ current: stored, env, flags: { answers: '/f' }, readUserFile: file }))).channelHosts).toEqual(['env.example', '203.0.113.9']);
    expect((await resolveAnswers(inputs({ current: stored, env, flags: { answers: '/f', channelHost: ['flag.example', '203.0.113.10'] }, readUserFile: file }))).channelHosts).toEqual(['flag.example', '203.0.113.10']);
  });

  it('"none" clears the stored list; a run that names none keeps it', async () => {
    const stored = { ...CURRENT, channelHosts: ['stored.example'] };
    expect((await resolveAnswers(inputs({ current: stored, flags: { channelHost: ['none'] } }))).channelHosts).toBeUndefined();
    expect((await resolveAnswers(inputs({ current: stored, env: { ...ANSWERS, SERVICE_CHANNEL_HOSTS: 'none' } }))).channelHosts).toBeUndefined();
    expect((await resolveAnswers(inputs({ current: stored, flags: { model: 'other' } }))).channelHosts).toEqual(['stored.example']);
  });

  it('a bad name is refused with the other bad answers, naming the field and where it came from', async () => {
    const message = await refusal(() => resolveAnswers(inputs({ flags: { channelHost: ['203.0.113.7:18790'], customerName: '' } })));
    expect(message).toMatch(/^invalid answers:/);
    expect(message).toContain('customer name (from --customer-name): customer name is empty');
    expect(message).toContain('channel host (from --channel-host): "203.0.113.7:18790" has a port');
    const fromFile = await refusal(() => resolveAnswers(inputs({ flags: { answers: '/root/a.env' }, readUserFile: async () => "SERVICE_CHANNEL_HOSTS='https://chat.acme.example'\n" })));
    expect(fromFile).toContain('channel host (from --answers file): "https://chat.acme.example" is a URL');
  });

  it('the answers file: a JSON list or a comma-separated string; the env form SERVICE_CHANNEL_HOSTS; anything else refused naming the file', async () => {
    expect(await parseAnswersFile('{"channelHosts": ["a.example", "203.0.113.7"]}', 'F')).toEqual({ channelHosts: 'a.example,203.0.113.7' });
    expect(await parseAnswersFile('{"channelHosts": "a.example,203.0.113.7"}', 'F')).toEqual({ channelHosts: 'a.example,203.0.113.7' });
    expect(await parseAnswersFile("SERVICE_CHANNEL_HOSTS='a.example,203.0.113.7'\n", 'F')).toEqual({ channelHosts: 'a.example,203.0.113.7' });
    await expect(parseAnswersFile('{"channelHosts": [1]}', 'F')).rejects.toThrow('F: channelHosts must be a list of strings');
    await expect(parseAnswersFile('{"channelHosts": {"a": 1}}', 'F')).rejects.toThrow('F: channelHosts must be a string or a list of strings');
    await expect(parseAnswersFile('{"channelHost": "a"}', 'F')).rejects.toThrow('F: unknown field "channelHost"');
  });

  it('SERVICE_CHANNEL_HOSTS is checked with every other variable before any command runs', () => {
    expect(environmentProblems({ SERVICE_CHANNEL_HOSTS: 'chat.acme.example,203.0.113.7' })).toEqual([]);
    expect(environmentProblems({ SERVICE_CHANNEL_HOSTS: 'chat.acme.example:443' })).toEqual([
      'SERVICE_CHANNEL_HOSTS must be DNS names or IP addresses separated by commas, or none: "chat.acme.example:443" has a port: give the name only (the channel is always on port 18790)',
    ]);
  });
});

describe('stored with the answers', () => {
  it('answers.json carries the list when there is one, and a stored list is checked like a given one', () => {
    const answers = { ...CURRENT, customerSlug: 'acme', channelHosts: ['chat.acme.example', '203.0.113.7'] };
    const text = storedAnswersContent(answers, {}, undefined);
    expect(JSON.parse(text).channelHosts).toEqual(['chat.acme.example', '203.0.113.7']);
    expect(parseStoredAnswers(text, 'answers.json').channelHosts).toEqual(['chat.acme.example', '203.0.113.7']);
    expect(JSON.parse(storedAnswersContent({ ...answers, channelHosts: undefined }, {}, undefined))).not.toHaveProperty('channelHosts');
    const edited = JSON.stringify({ ...CURRENT, channelHosts: ['chat.acme.example', 'bad name'] });
    expect(() => parseStoredAnswers(edited, 'answers.json')).toThrow('answers.json: channelHosts: "bad name" is neither an IP address nor a DNS name');
  });
});
