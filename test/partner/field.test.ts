// The partner commands as a partner engineer meets them on day one (issue 30, items 9
// and 10): SPEC 7's 404 on map-agent, a call that never connected, every bad field in
// one message, and a --help that says which flags a request needs.
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PartnerClient, classifyNetworkError } from '../../src/partner/client.js';
import { AgentNotFoundError, PartnerApiError, PartnerExitCode } from '../../src/partner/errors.js';
import { cleanEnv, runBinary } from '../helpers/binary.js';
import { makeTestCa } from '../helpers/https-server.js';
import { PartnerStandin, STANDIN_KEY } from '../helpers/partner-standin.js';

const KEYS_PAGE = 'Partner Portal > Settings > API Keys';
const CUSTOMER = ['--email', 'ana@example.com', '--first-name', 'Ana', '--last-name', 'Diaz', '--phone', '+14155552671', '--company', 'Diaz Dental'];

let standin: PartnerStandin;
beforeAll(async () => {
  standin = await new PartnerStandin().start();
});
afterAll(async () => standin.close());

function client(baseUrl = standin.url): PartnerClient {
  return new PartnerClient({ baseUrl, apiKey: STANDIN_KEY, portalApiKeysPage: KEYS_PAGE, retry: { attempts: 1 }, sleep: async () => {} });
}

async function failure(promise: Promise<unknown>): Promise<PartnerApiError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: PartnerApiError) => error,
  );
}

describe('a JSON 404 on map-agent is SPEC 7\'s "agent not found" (30.9)', () => {
  test.each([
    ['a bare "Not Found"', { message: 'Not Found' }],
    ['an error object without words about either', { error: { code: 'NOT_FOUND', message: 'resource does not exist' } }],
    ['the agent, in other words', { errors: [{ detail: 'No imported agent with that id' }] }],
    ['the agent and the customer together', { message: 'agent ag_1 is not imported for this customer' }],
  ])('%s -> exit 12, with the hint about a customer id onboarding did not return', async (_what, body) => {
    const { id } = await client().onboard({ basic: { email: `a${Math.random()}@example.com`, firstName: 'A', lastName: 'B', businessPhone: '+14155552671' }, business: { companyName: 'C' } });
    standin.failNext({ status: 404, body });
    const error = await failure(client().mapAgent('voice-one', 'ag_1', { customerId: id, profitMultiplier: 1.5 }));
    expect(error).toBeInstanceOf(AgentNotFoundError);
    expect(error.exitCode).toBe(PartnerExitCode.agentNotFound);
    expect(error.message).toMatch(/^agent not found: voice-one agent ag_1 is not imported into the partner account \(HTTP 404\)/);
    expect(error.hint).toMatch(/check --agent-id and --provider; a --customer-id that onboarding did not return makes mapping fail too/);
  });

  test('one that names the customer and not the agent stays exit 1: pass the id onboarding returned', async () => {
    const error = await failure(client().mapAgent('voice-one', 'agent-1', { customerId: 'cus_nope', profitMultiplier: 2 }));
    expect(error).not.toBeInstanceOf(AgentNotFoundError);
    expect(error.exitCode).toBe(1);
    expect(error.message).toMatch(/customer not found/);
  });

  test('a route 404 (the URL is wrong) is not "agent not found"; a base URL ending in /api/v1/mcp is refused before sending', async () => {
    standin.failNext({ status: 404, body: { message: 'Cannot POST /api/v1/api/v1/mcp/voice-one-agents/a/map-customer' } });
    const route = await failure(client().mapAgent('voice-one', 'a', { customerId: 'x', profitMultiplier: 1 }));
    expect(route.exitCode).toBe(1);
    expect(route.hint).toMatch(/check SERVICE_PARTNER_API_URL/);
    const before = standin.requests.length;
    const run = await runBinary(['partner', 'map-agent', '--provider', 'voice-one', '--agent-id', 'a', '--customer-id', 'c', '--profit-multiplier', '1.5'], {
      env: cleanEnv({ SERVICE_PARTNER_API_URL: `${standin.url}/api/v1/mcp`, SERVICE_PARTNER_API_KEY: STANDIN_KEY }),
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('ends in a part of the API path (/api/v1/mcp)');
    expect(standin.requests.length).toBe(before);
  });
});

describe('a call that never connected does not say the customer "MAY have been created" (30.10)', () => {
  test.each(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID'])('%s: never sent, not retried', (code) => {
    const failure = classifyNetworkError(Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('certificate'), { code }) }));
    expect([failure.neverSent, failure.transient]).toEqual([true, false]);
  });

  test('fetch\'s "bad port" (refused before connecting): never sent', () => {
    const failure = classifyNetworkError(Object.assign(new TypeError('fetch failed'), { cause: new Error('bad port') }));
    expect([failure.neverSent, failure.transient]).toEqual([true, false]);
  });

  test('onboard against a server whose certificate is not trusted: exit 14, "nothing was sent", no request arrived', async () => {
    const ca = makeTestCa();
    let requests = 0;
    const server = https.createServer({ key: fs.readFileSync(ca.keyFile), cert: fs.readFileSync(ca.certFile) }, (_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"cus_1"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const run = await runBinary(['partner', 'onboard', ...CUSTOMER], { env: cleanEnv({ SERVICE_PARTNER_API_URL: url, SERVICE_PARTNER_API_KEY: STANDIN_KEY }) });
      expect(run.exitCode).toBe(14);
      expect(run.stderr).toMatch(/onboard: cannot reach the partner API at https:\/\/127\.0\.0\.1:\d+: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)/);
      expect(run.stderr).toContain("nothing was sent: https://127.0.0.1:");
      expect(run.stderr).toContain('did not show a certificate this machine trusts');
      expect(run.stderr).not.toMatch(/MAY have been created|--use-system-ca|retrying/);
      expect(requests).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('a refused connection (retried, then given up) says nothing was sent', async () => {
    const run = await runBinary(['partner', 'onboard', ...CUSTOMER], { env: cleanEnv({ SERVICE_PARTNER_API_URL: 'http://127.0.0.1:1', SERVICE_PARTNER_API_KEY: STANDIN_KEY }) });
    expect(run.exitCode).toBe(14);
    expect(run.stderr).toContain('nothing was sent (no connection was made): check the network and SERVICE_PARTNER_API_URL');
    expect(run.stderr).not.toContain('MAY have been created');
  });
});

describe('every bad field in one message; --help says what a request needs (30.10)', () => {
  test('map-agent names the agent and the body fields together, nothing sent', async () => {
    const before = standin.requests.length;
    const run = await runBinary(['partner', 'map-agent', '--provider', 'voice-nine', '--profit-multiplier', '0'], { env: cleanEnv({ SERVICE_PARTNER_API_URL: standin.url, SERVICE_PARTNER_API_KEY: STANDIN_KEY }) });
    expect(run.exitCode).toBe(2);
    for (const field of ['provider (--provider): must be one of: voice-one, voice-two', 'agentId (--agent-id): is required', 'customerId (--customer-id): is required', 'profitMultiplier (--profit-multiplier): must be a positive finite number'])
      expect(run.stderr).toContain(field);
    expect(run.stderr.match(/^Error:/gm)).toHaveLength(1);
    expect(standin.requests.length).toBe(before);
  });

  test('add-member names the customer id and the member fields together', async () => {
    const run = await runBinary(['partner', 'add-member', '--email', 'nope'], { env: cleanEnv({ SERVICE_PARTNER_API_URL: standin.url, SERVICE_PARTNER_API_KEY: STANDIN_KEY }) });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/customerId \(--customer-id\): is required.*email \(--email\): must be an e-mail address.*name \(--name\): is required/s);
  });

  test('--timeout 0 and --timeout abc are refused quoting them, with a range that excludes 0', async () => {
    for (const given of ['0', 'abc', '601']) {
      const run = await runBinary(['partner', 'onboard', ...CUSTOMER, '--timeout', given], { env: cleanEnv({ SERVICE_PARTNER_API_KEY: STANDIN_KEY }) });
      expect(run.exitCode).toBe(2);
      expect(run.stderr).toMatch(new RegExp(`--timeout "${given}": (must be|is not a number: give) a number above 0, at most 600 \\(seconds\\)`));
    }
  });

  test('the help groups the flags a request needs and describes every flag', async () => {
    const help = (await runBinary(['partner', 'onboard', '--help'])).stdout;
    expect(help).toMatch(/Required unless the body comes from --body:\n(\s+--\S+ +\S.*\n)+/);
    for (const flag of ['--email', '--first-name', '--last-name', '--phone', '--company']) expect(help).toMatch(new RegExp(`Required unless the body comes from --body:[\\s\\S]*${flag} +[A-Z]`));
    const mapAgent = (await runBinary(['partner', 'map-agent', '--help'])).stdout;
    expect(mapAgent).toMatch(/Required:\n\s+--provider[\s\S]*--agent-id/);
    expect(mapAgent).toMatch(/--timeout .*\[number\]/);
    const addMember = (await runBinary(['partner', 'add-member', '--help'])).stdout;
    expect(addMember).toMatch(/Required:\n\s+--customer-id/);
    // Every option line carries a description (the type tag alone is not one).
    for (const text of [help, mapAgent, addMember]) {
      for (const line of text.split('\n').filter((l) => /^\s+(-\w, )?--[\w-]+/.test(l))) expect(line, line).toMatch(/^\s+(-\w, )?--[\w-]+ +[A-Z(]/);
    }
  });
});
