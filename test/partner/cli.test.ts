import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { main } from '../../src/cli.js';
import { PartnerStandin, STANDIN_KEY } from '../helpers/partner-standin.js';
import { tempDir } from '../helpers/tmp.js';
import { errorEnvelope, jsonOutput } from '../helpers/json-schemas.js';

/**
 * The partner commands through the real CLI entry (`main` from src/cli.ts), in process,
 * against the loopback stand-in. stdout and stderr are captured, and every captured byte
 * of every test is checked for the API key at the end.
 */

const everything: string[] = [];
let standin: PartnerStandin;

interface Run {
  code: number | undefined;
  stdout: string;
  stderr: string;
}

async function cli(...args: string[]): Promise<Run> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const capture = (into: string[]) => (chunk: string | Uint8Array) => {
    into.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  };
  const outSpy = vi.spyOn(process.stdout, 'write').mockImplementation(capture(stdout) as typeof process.stdout.write);
  const errSpy = vi.spyOn(process.stderr, 'write').mockImplementation(capture(stderr) as typeof process.stderr.write);
  process.exitCode = undefined;
  try {
    await main(args);
  } finally {
    outSpy.mockRestore();
    errSpy.mockRestore();
  }
  const code = process.exitCode as number | undefined;
  process.exitCode = undefined;
  everything.push(...args, ...stdout, ...stderr);
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}

const customerFlags = ['--email', 'ana@example.com', '--first-name', 'Ana', '--last-name', 'Diaz', '--phone', '+1 415 555 2671', '--company', 'Diaz Dental'];
const agentFlags = ['--provider', 'voice-one', '--agent-id', 'agent-1', '--profit-multiplier', '1.5'];

beforeEach(async () => {
  standin = await new PartnerStandin({ maxTeamMembers: 2 }).start();
  vi.stubEnv('SERVICE_PARTNER_API_URL', standin.url);
  vi.stubEnv('SERVICE_PARTNER_API_KEY', STANDIN_KEY);
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await standin.close();
});
afterAll(() => {
  // The acceptance rule: the key appears in no argv we built and no output we captured.
  expect(everything.length).toBeGreaterThan(100);
  expect(everything.filter((text) => text.includes(STANDIN_KEY))).toEqual([]);
});

describe('onboard', () => {
  test('prints the customer id; --quick and --portal-access set the two booleans', async () => {
    const run = await cli('partner', 'onboard', ...customerFlags, '--quick', '--portal-access');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('cus_0001\n');
    expect(standin.requests[0]!.body).toEqual({
      basic: { email: 'ana@example.com', firstName: 'Ana', lastName: 'Diaz', businessPhone: '+14155552671' },
      business: { companyName: 'Diaz Dental' },
      isQuickOnboarding: true,
      allowPortalAccess: true,
    });
  });

  test('without the flags neither boolean is sent; --json prints the whole answer', async () => {
    const run = await cli('partner', 'onboard', ...customerFlags, '--json');
    expect(run.code).toBe(0);
    expect(jsonOutput('partner-onboard', run.stdout)).toEqual({ schemaVersion: 1, ok: true, customerId: 'cus_0001', customer: { id: 'cus_0001', email: 'ana@example.com', portalInviteSent: false } });
    expect(standin.requests[0]!.body).not.toHaveProperty('isQuickOnboarding');
    expect(standin.requests[0]!.body).not.toHaveProperty('allowPortalAccess');
  });

  test('--body file.json', async () => {
    const file = path.join(tempDir(), 'customer.json');
    fs.writeFileSync(file, JSON.stringify({ basic: { email: 'bo@example.com', firstName: 'Bo', lastName: 'Li', businessPhone: '+442079460958' }, business: { companyName: 'Li Ltd' } }));
    const run = await cli('partner', 'onboard', '--body', file);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('cus_0001');
  });

  test('an existing e-mail is exit 10', async () => {
    await cli('partner', 'onboard', ...customerFlags);
    const run = await cli('partner', 'onboard', ...customerFlags);
    expect(run.code).toBe(10);
    expect(run.stderr).toMatch(/already exists/);
    expect(standin.customers.size).toBe(1);
  });

  test('a wrong key is exit 11 and the hint names the portal page where keys are made', async () => {
    vi.stubEnv('SERVICE_PARTNER_API_KEY', 'pkt_revoked_0000000000');
    const run = await cli('partner', 'onboard', ...customerFlags);
    expect(run.code).toBe(11);
    expect(run.stderr).toContain('Partner Portal > Settings > API Keys');
    expect(run.stderr).not.toContain('pkt_revoked_0000000000');
  });

  test('a timeout is exit 15 and says the customer may exist', async () => {
    standin.delayNext(1500);
    const run = await cli('partner', 'onboard', ...customerFlags, '--timeout', '0.2');
    expect(run.code).toBe(15);
    expect(run.stderr).toMatch(/MAY have been created/);
  });
});

describe('invalid input never reaches the server', () => {
  test.each([
    [['partner', 'onboard', ...customerFlags.slice(0, 6), '--phone', '415 555 2671', '--company', 'X'], /basic\.businessPhone \(--phone\)/],
    [['partner', 'onboard', '--email', 'ana@', '--first-name', 'A', '--last-name', 'D', '--phone', '+14155552671', '--company', 'X'], /basic\.email \(--email\)/],
    [['partner', 'onboard', '--email', 'ana@example.com'], /basic\.firstName \(--first-name\): is required/],
    [['partner', 'map-agent', '--provider', 'voice-three', '--agent-id', 'a', '--customer-id', 'c', '--profit-multiplier', '1'], /provider \(--provider\): must be one of: voice-one, voice-two/],
    [['partner', 'map-agent', '--provider', 'voice-one', '--agent-id', 'a', '--customer-id', 'c', '--profit-multiplier', '-2'], /profitMultiplier \(--profit-multiplier\): must be a positive finite number/],
    [['partner', 'map-agent', '--provider', 'voice-one', '--agent-id', 'a', '--customer-id', 'c', '--profit-multiplier', 'lots'], /profitMultiplier \(--profit-multiplier\)/],
    [['partner', 'add-member', '--email', 'bo@example.com', '--name', 'Bo'], /customerId \(--customer-id\): is required/],
    [['partner', 'add-member', '--customer-id', 'c', '--email', 'bo@example.com', '--name', 'Bo', '--role', 'Boss Man'], /role \(--role\)/],
    [['partner', 'onboard-flow', ...customerFlags, ...agentFlags, '--member', 'not-an-email:Bo'], /members\.0\.email/],
    [['partner', 'onboard', ...customerFlags, '--body', 'x.json'], /--body cannot be combined with --email/],
    [['partner', 'onboard', ...customerFlags, '--timeout', '0'], /--timeout "0": must be a number above 0, at most 600 \(seconds\)/],
    [['partner'], /name a partner subcommand: onboard, map-agent, add-member or onboard-flow/],
    [['partner', 'frob'], /unexpected argument "frob" for `partner`/],
  ])('%j', async (args, reason) => {
    const run = await cli(...args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(reason);
    expect(standin.requests).toEqual([]);
  });

  test('a body file with a typo in a field name is refused, naming the field it resembles', async () => {
    const file = path.join(tempDir(), 'customer.json');
    fs.writeFileSync(file, JSON.stringify({ basic: { email: 'bo@example.com', firstName: 'Bo', lastName: 'Li', businessPhone: '+442079460958' }, business: { companyName: 'L' }, allowPortalAcess: true }));
    const run = await cli('partner', 'onboard', '--body', file);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/allowPortalAcess: unknown field; did you mean allowPortalAccess\?/);
    expect(standin.requests).toEqual([]);
  });

  test.each([
    ['basic', 'firstname', /basic\.firstname: unknown field; did you mean basic\.firstName/],
    ['', 'isQuickOnbaording', /isQuickOnbaording: unknown field; did you mean isQuickOnboarding/],
    ['business', 'compnyName', /business\.compnyName: unknown field; did you mean business\.companyName/],
  ])('a typo in %s.%s is refused', async (level, field, reason) => {
    const file = path.join(tempDir(), 'customer.json');
    const body: Record<string, any> = { basic: { email: 'bo@example.com', firstName: 'Bo', lastName: 'Li', businessPhone: '+442079460958' }, business: { companyName: 'L' } };
    (level ? body[level] : body)[field] = 'x';
    fs.writeFileSync(file, JSON.stringify(body));
    const run = await cli('partner', 'onboard', '--body', file);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(reason);
    expect(standin.requests).toEqual([]);
  });

  test('fields the spec does not show pass through from --body, with a notice', async () => {
    const file = path.join(tempDir(), 'customer.json');
    const body = {
      basic: { email: 'bo@example.com', firstName: 'Bo', lastName: 'Li', businessPhone: '+44 20 7946 0958', title: 'Dr' },
      business: { companyName: 'L', website: 'https://l.example', address: { city: 'Leeds' } },
      referralSource: 'crm',
    };
    fs.writeFileSync(file, JSON.stringify(body));
    const run = await cli('partner', 'onboard', '--body', file);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/note: sending field\(s\) the spec does not show, as given: basic\.title, business\.website, business\.address, referralSource/);
    expect(standin.requests[0]!.body).toEqual({ ...body, basic: { ...body.basic, businessPhone: '+442079460958' } });
  });

  test('onboard-flow passes unknown customer fields through too, and still refuses typos', async () => {
    const file = path.join(tempDir(), 'flow.json');
    const customer = { basic: { email: 'bo@example.com', firstName: 'Bo', lastName: 'Li', businessPhone: '+442079460958' }, business: { companyName: 'L' }, timezone: 'Europe/London' };
    fs.writeFileSync(file, JSON.stringify({ customer, agent: { provider: 'voice-one', agentId: 'agent-1', profitMultiplier: 2 } }));
    const run = await cli('partner', 'onboard-flow', '--body', file);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/as given: customer\.timezone/);
    expect(standin.requests[0]!.body).toMatchObject({ timezone: 'Europe/London' });
    fs.writeFileSync(file, JSON.stringify({ customer: { ...customer, allowPortalAccesss: true }, agent: { provider: 'voice-one', agentId: 'agent-1', profitMultiplier: 2 } }));
    const typo = await cli('partner', 'onboard-flow', '--body', file);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/customer\.allowPortalAccesss: unknown field; did you mean customer\.allowPortalAccess/);
    expect(standin.requests).toHaveLength(2); // only the first flow's onboard and map-agent
  });

  test('a phone extension is refused (never dropped): exit 2, naming the field', async () => {
    const run = await cli('partner', 'onboard', ...customerFlags.slice(0, 6), '--phone', '+1 415 555 2671 ext. 12', '--company', 'Diaz Dental');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/basic\.businessPhone \(--phone\): .*has an extension \(12\)/);
    expect(standin.requests).toEqual([]);
  });

  test('a base URL ending in /api/v1 is normalised, with a note', async () => {
    vi.stubEnv('SERVICE_PARTNER_API_URL', `${standin.url}/api/v1/`);
    const run = await cli('partner', 'onboard', ...customerFlags);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/ends in \/api\/v1; using http:\/\/127\.0\.0\.1:\d+ /);
    expect(standin.requests.map((request) => request.path)).toEqual(['/api/v1/mcp/customers/onboard']);
  });

  test.each(['/api', '/api/v1/mcp', '/api/v2'])('a base URL ending in %s is refused: exit 2 naming it, nothing sent', async (tail) => {
    vi.stubEnv('SERVICE_PARTNER_API_URL', `${standin.url}${tail}`);
    const run = await cli('partner', 'map-agent', '--provider', 'voice-one', '--agent-id', 'agent-1', '--customer-id', 'c', '--profit-multiplier', '1');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`SERVICE_PARTNER_API_URL ${standin.url}${tail} ends in a part of the API path`);
    expect(run.stderr).not.toMatch(/not imported/);
    expect(standin.requests).toEqual([]);
  });

  test('a key without pkt_ is refused before any request (exit 11)', async () => {
    vi.stubEnv('SERVICE_PARTNER_API_KEY', 'sk_live_123456789');
    const run = await cli('partner', 'onboard', ...customerFlags);
    expect(run.code).toBe(11);
    expect(run.stderr).toMatch(/must start with pkt_/);
    expect(run.stderr).not.toContain('sk_live_123456789');
    expect(standin.requests).toEqual([]);
  });

  test('--api-key on the command line is refused', async () => {
    const run = await cli('partner', 'onboard', ...customerFlags, '--api-key', 'pkt_given_on_argv_123');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--api-key is not accepted/);
    expect(run.stderr).not.toContain('pkt_given_on_argv_123');
    expect(standin.requests).toEqual([]);
    everything.pop(); // this test's own argv holds a (fake) key on purpose; its outputs were checked above
  });
});

describe('map-agent and add-member', () => {
  test('map-agent works and is exit 12 for an agent not imported', async () => {
    await cli('partner', 'onboard', ...customerFlags);
    const ok = await cli('partner', 'map-agent', ...agentFlags, '--customer-id', 'cus_0001', '--json');
    expect(ok.code).toBe(0);
    expect(jsonOutput('partner-map-agent', ok.stdout)).toMatchObject({ ok: true, provider: 'voice-one', agentId: 'agent-1', customerId: 'cus_0001', profitMultiplier: 1.5, response: { customerId: 'cus_0001', profitMultiplier: 1.5 } });
    const missing = await cli('partner', 'map-agent', '--provider', 'voice-two', '--agent-id', 'agent-1', '--customer-id', 'cus_0001', '--profit-multiplier', '2');
    expect(missing.code).toBe(12);
    expect(missing.stderr).toMatch(/voice-two agent agent-1 is not imported/);
  });

  test('add-member: role defaults to member; the limit is exit 13', async () => {
    await cli('partner', 'onboard', ...customerFlags);
    for (const name of ['one', 'two']) {
      expect((await cli('partner', 'add-member', '--customer-id', 'cus_0001', '--email', `${name}@example.com`, '--name', name)).code).toBe(0);
    }
    expect(standin.customers.get('cus_0001')!.members.map((member) => member.role)).toEqual(['member', 'member']);
    const full = await cli('partner', 'add-member', '--customer-id', 'cus_0001', '--email', 'three@example.com', '--name', 'Three', '--role', 'member');
    expect(full.code).toBe(13);
    expect(full.stderr).toMatch(/maxTeamMembers/);
  });

  test('--verbose shows each request but never the key', async () => {
    const run = await cli('partner', 'onboard', ...customerFlags, '--verbose');
    expect(run.stderr).toMatch(/POST \/api\/v1\/mcp\/customers\/onboard -> 201/);
    expect(run.stderr).not.toContain(STANDIN_KEY);
  });

  test('5xx on map-agent is retried (idempotent) and reported on stderr', async () => {
    await cli('partner', 'onboard', ...customerFlags);
    standin.failNext({ status: 503, path: /map-customer/ });
    const run = await cli('partner', 'map-agent', ...agentFlags, '--customer-id', 'cus_0001');
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/HTTP 503; retrying in/);
    expect(standin.requestsTo(/map-customer/)).toHaveLength(2);
  });
});

describe('--json: one document on stdout whatever happens (schemas/)', () => {
  test('add-member answers its document; failures and refusals print the error envelope with the exit code', async () => {
    await cli('partner', 'onboard', ...customerFlags);
    const added = await cli('partner', 'add-member', '--customer-id', 'cus_0001', '--email', 'one@example.com', '--name', 'One', '--json');
    expect(added.code).toBe(0);
    expect(jsonOutput('partner-add-member', added.stdout)).toMatchObject({ ok: true, customerId: 'cus_0001', email: 'one@example.com', role: 'member' });

    standin.failNext({ status: 503, path: /team-members/, count: 10 });
    const unavailable = await cli('partner', 'add-member', '--customer-id', 'cus_0001', '--email', 'two@example.com', '--name', 'Two', '--json');
    expect(unavailable.code).toBe(14);
    expect(errorEnvelope(unavailable.stdout, unavailable.code).error).toMatchObject({ code: 'unavailable', exitCode: 14 });

    const exists = await cli('partner', 'onboard', ...customerFlags, '--json');
    expect(exists.code).toBe(10);
    expect(errorEnvelope(exists.stdout, exists.code).error.code).toBe('email-exists');

    const bad = await cli('partner', 'onboard', '--email', 'not-an-email', '--json');
    expect(bad.code).toBe(2);
    expect(errorEnvelope(bad.stdout, bad.code).error).toMatchObject({ code: 'refused', message: expect.stringContaining('--email') });

    const flag = await cli('partner', 'onboard', '--frob', '--json');
    expect(flag.code).toBe(2);
    expect(errorEnvelope(flag.stdout, flag.code).error).toMatchObject({ code: 'usage', message: '--frob is not an option of `partner onboard`' });
  });

  test('an onboard-flow failure is its own document (ok false, with what to resume), printed once', async () => {
    standin.failNext({ status: 401, path: /onboard/ });
    const run = await cli('partner', 'onboard-flow', ...customerFlags, ...agentFlags, '--json');
    expect(run.code).toBe(11);
    const doc = jsonOutput('partner-onboard-flow', run.stdout);
    expect(doc).toMatchObject({ ok: false, customerId: null, error: { code: 'unauthorized', exitCode: 11 } });
  });
});

describe('onboard-flow', () => {
  const members = ['--member', 'one@example.com:One', '--member', "two@example.com:Two O'Neil:admin"];

  test('the recommended order end to end', async () => {
    const run = await cli('partner', 'onboard-flow', ...customerFlags, ...agentFlags, ...members);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('cus_0001\n');
    expect(run.stderr.split('\n').filter((line) => /^[✓✗]/.test(line))).toEqual([
      '✓ onboard: customer cus_0001 created for ana@example.com',
      '✓ map-agent: voice-one agent agent-1 mapped to cus_0001 (profit multiplier 1.5)',
      '✓ add-member one@example.com: added as member',
      '✓ add-member two@example.com: added as admin',
    ]);
    expect(standin.requests.map((request) => request.path)).toEqual([
      '/api/v1/mcp/customers/onboard',
      '/api/v1/mcp/voice-one-agents/agent-1/map-customer',
      '/api/v1/mcp/customers/cus_0001/team-members',
      '/api/v1/mcp/customers/cus_0001/team-members',
    ]);
    expect(standin.mappings.get('voice-one/agent-1')?.customerId).toBe('cus_0001');
  });

  test('map-agent fails: the customer id and exact resume commands are printed, and they work', async () => {
    const run = await cli('partner', 'onboard-flow', ...customerFlags, '--provider', 'voice-two', '--agent-id', 'late-agent', '--profit-multiplier', '2', ...members);
    expect(run.code).toBe(12);
    expect(run.stderr).toMatch(/customer cus_0001 WAS created; do not onboard again/);
    const resume = run.stderr.split('\n').filter((line) => line.trim().startsWith('service-deploy partner')).map((line) => line.trim());
    expect(resume).toEqual([
      'service-deploy partner map-agent --provider voice-two --agent-id late-agent --customer-id cus_0001 --profit-multiplier 2',
      'service-deploy partner add-member --customer-id cus_0001 --email one@example.com --name One --role member',
      `service-deploy partner add-member --customer-id cus_0001 --email two@example.com --name 'Two O'\\''Neil' --role admin`,
    ]);
    expect(standin.customers.size).toBe(1);

    // The partner imports the agent, then runs exactly what was printed.
    standin.importAgent('voice-two', 'late-agent');
    for (const command of resume) {
      expect((await cli(...shellWords(command).slice(1))).code).toBe(0);
    }
    expect(standin.requestsTo(/onboard/)).toHaveLength(1);
    expect(standin.mappings.get('voice-two/late-agent')).toEqual({ customerId: 'cus_0001', profitMultiplier: 2 });
    expect(standin.customers.get('cus_0001')!.members.map((member) => member.name)).toEqual(['One', "Two O'Neil"]);
  });

  test('a later member hits the team limit: only the remaining members are to resume, with --json', async () => {
    const run = await cli(
      'partner', 'onboard-flow', ...customerFlags, ...agentFlags, ...members, '--member', 'three@example.com:Three', '--json', '--timeout', '20',
    );
    expect(run.code).toBe(13);
    const report = jsonOutput('partner-onboard-flow', run.stdout);
    expect(report).toMatchObject({
      ok: false,
      customerId: 'cus_0001',
      completedSteps: ['onboard', 'map-agent', 'add-member one@example.com', 'add-member two@example.com'],
      failedStep: 'add-member three@example.com',
      error: { exitCode: 13 },
      resumeCommands: ['service-deploy partner add-member --customer-id cus_0001 --email three@example.com --name Three --role member --timeout 20'],
    });
    expect(run.stderr).toMatch(/service-deploy partner add-member --customer-id cus_0001 --email three@example\.com/);
  });

  test('onboarding itself fails: nothing to resume, and the flow stops there', async () => {
    await cli('partner', 'onboard', ...customerFlags);
    const run = await cli('partner', 'onboard-flow', ...customerFlags, ...agentFlags, '--json');
    expect(run.code).toBe(10);
    expect(jsonOutput('partner-onboard-flow', run.stdout)).toMatchObject({ ok: false, customerId: null, failedStep: 'onboard', resumeCommands: [] });
    expect(standin.requests.map((request) => request.path)).toEqual(['/api/v1/mcp/customers/onboard', '/api/v1/mcp/customers/onboard']);
  });

  test('--body file with {customer, agent, members} and --api-key-file', async () => {
    vi.stubEnv('SERVICE_PARTNER_API_KEY', '');
    const dir = tempDir();
    const keyFile = path.join(dir, 'key');
    fs.writeFileSync(keyFile, `${STANDIN_KEY}\n`, { mode: 0o600 });
    const bodyFile = path.join(dir, 'flow.json');
    fs.writeFileSync(
      bodyFile,
      JSON.stringify({
        customer: { basic: { email: 'bo@example.com', firstName: 'Bo', lastName: 'Li', businessPhone: '+61 2 9374 4000' }, business: { companyName: 'Li' }, allowPortalAccess: true },
        agent: { provider: 'voice-two', agentId: 'vt-agent-9', profitMultiplier: 1.25 },
        members: [{ email: 'one@example.com', name: 'One' }],
      }),
    );
    const run = await cli('partner', 'onboard-flow', '--body', bodyFile, '--api-key-file', keyFile, '--json');
    expect(run.code).toBe(0);
    expect(jsonOutput('partner-onboard-flow', run.stdout)).toMatchObject({ ok: true, customerId: 'cus_0001', members: [{ email: 'one@example.com', role: 'member' }] });
    expect(standin.requests.every((request) => request.headers['x-api-key'] === STANDIN_KEY)).toBe(true);
    expect(standin.mappings.get('voice-two/vt-agent-9')).toEqual({ customerId: 'cus_0001', profitMultiplier: 1.25 });
  });
});

/** Splits a POSIX shell command line as printed by shellCommand: plain words, '…' quoting and \' escapes. */
function shellWords(line: string): string[] {
  return [...line.matchAll(/(?:\\.|[^\s'\\]+|'[^']*')+/g)].map(([word]) =>
    [...word.matchAll(/\\(.)|'([^']*)'|([^'\\]+)/g)].map(([, escaped, quoted, plain]) => escaped ?? quoted ?? plain).join(''),
  );
}
