import net from 'node:net';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { DeployError } from '../../src/errors.js';
import { PartnerClient, classifyNetworkError, resolveApiKey, type PartnerClientOptions } from '../../src/partner/client.js';
import {
  AgentNotFoundError,
  EmailExistsError,
  PartnerApiError,
  PartnerExitCode,
  PartnerOutcomeUnknownError,
  PartnerTimeoutError,
  PartnerUnavailableError,
  TeamLimitError,
  UnauthorizedError,
} from '../../src/partner/errors.js';
import { parseInput, OnboardBodySchema, type OnboardBody } from '../../src/partner/schemas.js';
import { PartnerStandin, STANDIN_KEY } from '../helpers/partner-standin.js';

const KEYS_PAGE = 'Partner Portal > Settings > API Keys';

function customer(email = 'ana@example.com'): OnboardBody {
  return parseInput(
    OnboardBodySchema,
    {
      basic: { email, firstName: 'Ana', lastName: 'Diaz', businessPhone: '+14155552671' },
      business: { companyName: 'Diaz Dental' },
      allowPortalAccess: true,
    },
    'body',
  );
}

let standin: PartnerStandin;
let sleeps: number[];
let warnings: string[];
let debugLines: string[];

function client(overrides: Partial<PartnerClientOptions> = {}): PartnerClient {
  return new PartnerClient({
    baseUrl: standin.url,
    apiKey: STANDIN_KEY,
    portalApiKeysPage: KEYS_PAGE,
    retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 50 },
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    log: { debug: (line) => debugLines.push(line), warn: (line) => warnings.push(line) },
    ...overrides,
  });
}

async function failure(promise: Promise<unknown>): Promise<DeployError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(DeployError);
    return error as DeployError;
  }
  throw new Error('expected the call to fail');
}

beforeEach(async () => {
  standin = await new PartnerStandin({ maxTeamMembers: 2 }).start();
  sleeps = [];
  warnings = [];
  debugLines = [];
});
afterEach(async () => {
  await standin.close();
});

describe('requests follow SPEC 4.3', () => {
  test('recommended order: onboard, map with the returned id, add a member', async () => {
    const api = client();
    const created = await api.onboard(customer());
    expect(created.id).toMatch(/^cus_/);
    await api.mapAgent('voice-one', 'agent-1', { customerId: created.id, profitMultiplier: 1.5 });
    await api.addTeamMember(created.id, { email: 'bo@example.com', name: 'Bo', role: 'member' });

    expect(standin.requests.map((r) => [r.method, r.path, r.status])).toEqual([
      ['POST', '/api/v1/mcp/customers/onboard', 201],
      ['POST', '/api/v1/mcp/voice-one-agents/agent-1/map-customer', 200],
      ['POST', `/api/v1/mcp/customers/${created.id}/team-members`, 201],
    ]);
    for (const request of standin.requests) {
      expect(request.headers['x-api-key']).toBe(STANDIN_KEY);
      expect(request.headers['content-type']).toBe('application/json');
    }
    expect(standin.mappings.get('voice-one/agent-1')).toEqual({ customerId: created.id, profitMultiplier: 1.5 });
    expect(standin.customers.get(created.id)?.members).toEqual([{ email: 'bo@example.com', name: 'Bo', role: 'member' }]);
    expect(standin.requests[0]!.body).toMatchObject({ allowPortalAccess: true, basic: { businessPhone: '+14155552671' } });
  });

  test('path parameters are encoded, so an id cannot change the path', async () => {
    const error = await failure(client().addTeamMember('../onboard', { email: 'bo@example.com', name: 'Bo', role: 'member' }));
    expect(standin.requests[0]!.path).toBe('/api/v1/mcp/customers/..%2Fonboard/team-members');
    expect(error).toBeInstanceOf(PartnerApiError);
    expect(error.exitCode).toBe(1);
    expect(error.message).toMatch(/customer not found/);
  });

  test('the key is never in the debug log', async () => {
    await client().onboard(customer());
    expect(debugLines.length).toBeGreaterThan(0);
    expect(debugLines.join('\n')).not.toContain(STANDIN_KEY);
  });
});

describe('errors of SPEC 7 map to distinct exit codes', () => {
  test('400 email already exists -> 10, and the customer store keeps one', async () => {
    await client().onboard(customer());
    const error = await failure(client().onboard(customer('ANA@example.com')));
    expect(error).toBeInstanceOf(EmailExistsError);
    expect(error.exitCode).toBe(PartnerExitCode.emailExists);
    expect(error.message).toMatch(/ANA@example\.com.*already exists/);
    expect(standin.customers.size).toBe(1);
  });

  test('401 -> 11, the hint says where keys are made, and the wrong key is not echoed', async () => {
    const wrongKey = 'pkt_not_a_real_key_123456';
    const error = await failure(client({ apiKey: wrongKey }).onboard(customer()));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error.exitCode).toBe(PartnerExitCode.unauthorized);
    expect(error.hint).toContain(KEYS_PAGE);
    expect(`${error.message} ${error.hint}`).not.toContain(wrongKey);
    expect(standin.customers.size).toBe(0);
  });

  test('404 on map-agent for an agent not imported -> 12', async () => {
    const { id } = await client().onboard(customer());
    const error = await failure(client().mapAgent('voice-two', 'agent-1', { customerId: id, profitMultiplier: 2 }));
    expect(error).toBeInstanceOf(AgentNotFoundError);
    expect(error.exitCode).toBe(PartnerExitCode.agentNotFound);
    expect(error.message).toContain('voice-two agent agent-1');
    expect(error.hint).toMatch(/import the agent/);
  });

  test('404 on map-agent for an unknown customer is not "agent not found"', async () => {
    const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'cus_nope', profitMultiplier: 2 }));
    expect(error).not.toBeInstanceOf(AgentNotFoundError);
    expect(error.exitCode).toBe(1);
    expect(error.hint).toMatch(/`id` that onboarding returned/);
  });

  test.each([400, 403, 409, 422])('team-member limit answered with %i -> 13', async (status) => {
    await standin.close();
    standin = await new PartnerStandin({ maxTeamMembers: 1, teamLimitStatus: status }).start();
    const { id } = await client().onboard(customer());
    await client().addTeamMember(id, { email: 'one@example.com', name: 'One', role: 'member' });
    const error = await failure(client().addTeamMember(id, { email: 'two@example.com', name: 'Two', role: 'member' }));
    expect(error).toBeInstanceOf(TeamLimitError);
    expect(error.exitCode).toBe(PartnerExitCode.teamLimit);
    expect(error.message).toMatch(/maxTeamMembers/);
  });

  test('a duplicate member e-mail -> 10 with a member-specific message', async () => {
    const { id } = await client().onboard(customer());
    await client().addTeamMember(id, { email: 'one@example.com', name: 'One', role: 'member' });
    const error = await failure(client().addTeamMember(id, { email: 'one@example.com', name: 'One', role: 'member' }));
    expect(error).toBeInstanceOf(EmailExistsError);
    expect(error.message).toMatch(/team member one@example\.com/);
  });

  test('a 500 that echoes the key shows the message with the key masked', async () => {
    standin.failNext({ status: 500, body: { error: { message: `internal error for key ${STANDIN_KEY}` } } });
    const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'x', profitMultiplier: 1 }));
    expect(error.message).toContain('internal error for key ****');
    expect(error.message).not.toContain(STANDIN_KEY);
  });
});

describe('retries never duplicate a customer', () => {
  test('onboarding answered 503 is NOT retried (the request reached the server)', async () => {
    standin.failNext({ status: 503, count: 5 });
    const error = await failure(client().onboard(customer()));
    expect(error).toBeInstanceOf(PartnerUnavailableError);
    expect(error.exitCode).toBe(PartnerExitCode.unavailable);
    expect(error.hint).toMatch(/MAY have been created.*ana@example\.com/);
    expect(standin.requestsTo(/onboard/)).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  test('the server created the customer but a gateway answered 502: still one customer, and the user is told', async () => {
    standin.failNext({ status: 502, when: 'after' });
    const error = await failure(client().onboard(customer()));
    expect(standin.customers.size).toBe(1);
    expect(standin.requestsTo(/onboard/)).toHaveLength(1);
    expect(error.hint).toMatch(/MAY have been created/);
  });

  test('onboarding that times out is not retried; the late customer is the only one', async () => {
    standin.delayNext(400);
    const error = await failure(client({ timeoutMs: 100 }).onboard(customer()));
    expect(error).toBeInstanceOf(PartnerTimeoutError);
    expect(error.exitCode).toBe(PartnerExitCode.timeout);
    expect(error.message).toMatch(/within 0\.1 s/);
    // The stand-in finishes the late request on its own time: wait for it, with a budget.
    await waitFor(() => standin.customers.size === 1, 'the delayed onboarding to create its customer');
    expect(standin.requestsTo(/onboard/)).toHaveLength(1);
  });

  test('onboarding IS retried when the connection was refused (nothing was sent), and creates one customer', async () => {
    const port = Number(new URL(standin.url).port);
    await standin.close();
    const revived = new PartnerStandin();
    const api = client({
      baseUrl: `http://127.0.0.1:${port}`,
      sleep: async (ms) => {
        sleeps.push(ms);
        if (sleeps.length === 2) await revived.start(port); // up before the third attempt
      },
    });
    try {
      const created = await api.onboard(customer());
      expect(created.id).toBe('cus_0001');
      expect(sleeps).toHaveLength(2);
      expect(sleeps.every((ms) => ms > 0 && ms <= 50)).toBe(true);
      expect(warnings[0]).toMatch(/ECONNREFUSED; retrying in .* \(attempt 2 of 3\)/);
      expect(revived.requests).toHaveLength(1);
      expect(revived.customers.size).toBe(1);
    } finally {
      await revived.close();
    }
  });

  test('a refused connection gives up after the bounded attempts with exit 14', async () => {
    const port = await freePort();
    const error = await failure(client({ baseUrl: `http://127.0.0.1:${port}` }).onboard(customer()));
    expect(error).toBeInstanceOf(PartnerUnavailableError);
    expect((error as PartnerUnavailableError).mayHaveApplied).toBe(false);
    expect(error.message).toMatch(/ECONNREFUSED.*after 3 attempts/);
    expect(sleeps).toHaveLength(2);
    expect(sleeps[1]!).toBeGreaterThanOrEqual(10); // doubled ceiling: [10, 20]
  });

  test('add-member answered 503 is not retried', async () => {
    const { id } = await client().onboard(customer());
    standin.failNext({ status: 503, path: /team-members/ });
    const error = await failure(client().addTeamMember(id, { email: 'bo@example.com', name: 'Bo', role: 'member' }));
    expect(error.exitCode).toBe(PartnerExitCode.unavailable);
    expect(standin.requestsTo(/team-members/)).toHaveLength(1);
  });

  test('map-agent (idempotent) is retried on 503 and succeeds', async () => {
    const { id } = await client().onboard(customer());
    standin.failNext({ status: 503, count: 2, path: /map-customer/ });
    await client().mapAgent('voice-one', 'agent-1', { customerId: id, profitMultiplier: 1.5 });
    expect(standin.requestsTo(/map-customer/).map((r) => r.status)).toEqual([503, 503, 200]);
    expect(sleeps).toHaveLength(2);
  });

  test('map-agent gives up after 3 attempts', async () => {
    standin.failNext({ status: 504, count: 10, path: /map-customer/ });
    const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'x', profitMultiplier: 1.5 }));
    expect(error.exitCode).toBe(PartnerExitCode.unavailable);
    expect(error.message).toMatch(/HTTP 504.*after 3 attempts/);
    expect(standin.requestsTo(/map-customer/)).toHaveLength(3);
  });

  test('429 with a short Retry-After is retried even for onboarding; a long one is not waited for', async () => {
    standin.failNext({ status: 429, headers: { 'Retry-After': '0.02' }, body: { message: 'slow down' } });
    await client().onboard(customer());
    expect(sleeps).toEqual([20]);
    expect(standin.customers.size).toBe(1);

    standin.failNext({ status: 429, headers: { 'Retry-After': '3600' }, body: { message: 'slow down' } });
    const error = await failure(client().onboard(customer('bo@example.com')));
    // Not "fix the request": try later (14), with the wait the server asked for.
    expect(error).toBeInstanceOf(PartnerUnavailableError);
    expect(error.exitCode).toBe(PartnerExitCode.unavailable);
    expect(error.message).toMatch(/HTTP 429\) and asks to wait 3600 s \(Retry-After: 3600\): slow down/);
    expect(error.hint).toMatch(/try again later, after 3600 s/);
    expect(error.hint).not.toMatch(/fix the request/);
    expect(sleeps).toEqual([20]);
  });

  test('429 on every safe retry ends with 14 (try later) and the Retry-After shown', async () => {
    standin.failNext({ status: 429, count: 3, headers: { 'Retry-After': '0.01' }, body: { error: 'rate limited' } });
    const error = await failure(client().onboard(customer()));
    expect(error.exitCode).toBe(PartnerExitCode.unavailable);
    expect(error.message).toMatch(/rate limiting .*Retry-After: 0\.01.*rate limited \(after 3 attempts\)/);
    expect(standin.requestsTo(/onboard/)).toHaveLength(3);
    expect(standin.customers.size).toBe(0);
  });

  test('a redirect is reported, not followed and not retried (even for idempotent map-agent)', async () => {
    const elsewhere = await new PartnerStandin().start();
    try {
      standin.failNext({ status: 307, count: 5, headers: { Location: `${elsewhere.url}/api/v1/mcp/voice-one-agents/agent-1/map-customer` }, body: {} });
      const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'x', profitMultiplier: 1 }));
      expect(error.exitCode).toBe(1);
      expect(error.message).toMatch(/HTTP 307, a redirect to http:\/\/127\.0\.0\.1:\d+\/api\/v1.*not followed/);
      expect(standin.requests).toHaveLength(1);
      expect(elsewhere.requests).toEqual([]); // the key never went there
      expect(sleeps).toEqual([]);
    } finally {
      await elsewhere.close();
    }
  });
});

describe("status first; the server's words verbatim; specific codes only on clear signals", () => {
  test('an onboarding 2xx without a findable id is "may have been created", exit 15, never 1', async () => {
    standin.failNext({ status: 201, when: 'after', body: { customer: { email: 'ana@example.com' }, ok: true } });
    const error = await failure(client().onboard(customer()));
    expect(error).toBeInstanceOf(PartnerOutcomeUnknownError);
    expect(error.exitCode).toBe(PartnerExitCode.outcomeUnknown);
    expect(error.exitCode).not.toBe(1);
    expect(error.message).toMatch(/no customer id could be found.*"ok":true/);
    expect(error.hint).toMatch(/may have been created: check before retrying/);
    expect(standin.customers.size).toBe(1);
    expect(standin.requestsTo(/onboard/)).toHaveLength(1);
  });

  test.each([
    [{ id: 'cus_top', email: 'x' }, 'cus_top'],
    [{ customer: { id: 'cus_nested', email: 'x' } }, 'cus_nested'],
    [{ data: { id: 42 } }, '42'],
  ])('onboarding answer %j: the id is found', async (body, id) => {
    standin.failNext({ status: 200, when: 'after', body });
    expect((await client().onboard(customer())).id).toBe(id);
  });

  test.each([
    [{ customer: { id: 'a' }, partner: { id: 'b' } }],
    [{ data: { customer: { id: 'too-deep' } } }],
    ['created'],
  ])('onboarding answer %j: no single id, so the outcome is unknown (15)', async (body) => {
    standin.failNext({ status: 201, when: 'after', ...(typeof body === 'string' ? { raw: body, headers: { 'Content-Type': 'text/plain' } } : { body }) });
    expect((await failure(client().onboard(customer()))).exitCode).toBe(15);
  });

  test('a 404 HTML page on map-agent is not "agent not imported"', async () => {
    standin.failNext({ status: 404, raw: '<!DOCTYPE html><html><body><h1>Not Found</h1><p>agent</p></body></html>' });
    const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'x', profitMultiplier: 1 }));
    expect(error).not.toBeInstanceOf(AgentNotFoundError);
    expect(error.exitCode).toBe(1);
    expect(error.message).toMatch(/HTTP 404 .* HTML answer, not the partner API's own: <!DOCTYPE html>/);
    expect(error.hint).toMatch(/check SERVICE_PARTNER_API_URL/);
  });

  test('a framework route 404 in JSON on map-agent is not "agent not imported"', async () => {
    standin.failNext({ status: 404, body: { message: 'Route POST:/api/v1/api/v1/mcp/voice-one-agents/agent-1/map-customer not found', error: 'Not Found', statusCode: 404 } });
    const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'x', profitMultiplier: 1 }));
    expect(error).not.toBeInstanceOf(AgentNotFoundError);
    expect(error.hint).toMatch(/SERVICE_PARTNER_API_URL/);
  });

  test('the API JSON 404 speaking of the agent, in other words, is 12', async () => {
    standin.failNext({ status: 404, body: { errors: [{ detail: 'No imported agent with that id in this account' }] } });
    const error = await failure(client().mapAgent('voice-one', 'agent-9', { customerId: 'x', profitMultiplier: 1 }));
    expect(error).toBeInstanceOf(AgentNotFoundError);
    expect(error.message).toContain('No imported agent with that id in this account');
  });

  test('another 4xx: the generic code, the message verbatim, and no advice that may be false', async () => {
    const said = 'profitMultiplier  exceeds the   partner cap (3.0)';
    standin.failNext({ status: 422, body: { error: { message: said } } });
    const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'x', profitMultiplier: 9 }));
    expect(error.exitCode).toBe(1);
    expect(error.message).toBe(`map-agent: the partner API refused the request with HTTP 422: ${said}`);
    expect(error.hint).toBeUndefined();
  });

  test.each([
    [403, 'Maximum of 5 members reached for this customer'],
    [422, 'This team cannot have more members: limit is 2'],
    [409, 'maxTeamMembers exceeded'],
  ])('add-member %i "%s" speaks of a member limit: 13', async (status, message) => {
    const { id } = await client().onboard(customer());
    standin.failNext({ status, body: { message }, path: /team-members/ });
    const error = await failure(client().addTeamMember(id, { email: 'bo@example.com', name: 'Bo', role: 'member' }));
    expect(error).toBeInstanceOf(TeamLimitError);
    expect(error.message).toContain(message);
  });

  test.each([
    [403, 'forbidden for this key'],
    [400, 'role must be one of: member, admin'],
  ])('add-member %i "%s" is not a member limit: exit 1', async (status, message) => {
    const { id } = await client().onboard(customer());
    standin.failNext({ status, body: { message }, path: /team-members/ });
    const error = await failure(client().addTeamMember(id, { email: 'bo@example.com', name: 'Bo', role: 'member' }));
    expect(error.exitCode).toBe(1);
    expect(error.message).toContain(message);
  });

  test.each([
    [409, 'A customer with this e-mail is already registered', 10],
    [400, 'duplicate request id', 1],
    [400, 'companyName already exists in another account', 1],
  ])('onboarding %i "%s" -> exit %i', async (status, message, code) => {
    standin.failNext({ status, body: { message } });
    expect((await failure(client().onboard(customer()))).exitCode).toBe(code);
  });
});

describe('network error classification', () => {
  const fetchFailed = (cause: unknown) => Object.assign(new TypeError('fetch failed'), { cause });
  test.each([
    ['ECONNREFUSED', true, true],
    ['EAI_AGAIN', true, true],
    ['ENOTFOUND', true, false],
    ['ECONNRESET', false, true],
    ['UND_ERR_SOCKET', false, true],
  ])('%s: neverSent=%s transient=%s', (code, neverSent, transient) => {
    const failure = classifyNetworkError(fetchFailed(Object.assign(new Error(`connect ${code}`), { code })));
    expect([failure.code, failure.neverSent, failure.transient]).toEqual([code, neverSent, transient]);
  });

  test('an AggregateError of refused addresses (IPv6 and IPv4) counts as never sent', () => {
    const refused = (address: string) => Object.assign(new Error(`connect ECONNREFUSED ${address}`), { code: 'ECONNREFUSED' });
    const aggregate = Object.assign(new AggregateError([refused('::1'), refused('127.0.0.1')]), { code: 'ECONNREFUSED' });
    expect(classifyNetworkError(fetchFailed(aggregate)).neverSent).toBe(true);
  });

  test('an error without a code may have been sent', () => {
    expect(classifyNetworkError(new TypeError('fetch failed')).neverSent).toBe(false);
  });
});

describe('API key (SPEC 5.1)', () => {
  const base = { portalApiKeysPage: KEYS_PAGE };

  test('from SERVICE_PARTNER_API_KEY, trimmed', () => {
    expect(resolveApiKey({ ...base, env: { SERVICE_PARTNER_API_KEY: ` ${STANDIN_KEY}\n` } })).toBe(STANDIN_KEY);
  });

  test('--api-key-file beats the environment', () => {
    const key = resolveApiKey({ ...base, env: { SERVICE_PARTNER_API_KEY: 'pkt_from_env_000000' }, apiKeyFile: '/k', readFile: () => `${STANDIN_KEY}\n` });
    expect(key).toBe(STANDIN_KEY);
  });

  test('a missing key is exit 11 and says where keys are made', () => {
    const error = (() => {
      try {
        resolveApiKey({ ...base, env: {} });
      } catch (caught) {
        return caught as DeployError;
      }
    })();
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error!.exitCode).toBe(11);
    expect(error!.hint).toContain(KEYS_PAGE);
  });

  test('a key without the pkt_ prefix is refused without being echoed', () => {
    const notAPartnerKey = 'sk_live_abcdef123456';
    try {
      resolveApiKey({ ...base, env: { SERVICE_PARTNER_API_KEY: notAPartnerKey } });
      throw new Error('expected a refusal');
    } catch (error) {
      expect(error).toBeInstanceOf(UnauthorizedError);
      expect((error as Error).message).toMatch(/must start with pkt_/);
      expect(`${(error as Error).message} ${(error as DeployError).hint}`).not.toContain(notAPartnerKey);
    }
  });

  test('an unreadable key file is a usage error naming the file', () => {
    expect(() =>
      resolveApiKey({ ...base, env: {}, apiKeyFile: '/nope', readFile: () => { throw Object.assign(new Error('x'), { code: 'ENOENT' }); } }),
    ).toThrow(/the API key file \/nope: there is no such file/);
  });
});

async function waitFor(condition: () => boolean, what: string, budgetMs = 30_000): Promise<void> {
  const deadline = Date.now() + budgetMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up after ${budgetMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
