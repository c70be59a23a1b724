import { describe, expect, test } from 'vitest';
import { UsageError } from '../../src/errors.js';
import {
  MapAgentBodySchema,
  OnboardBodySchema,
  TeamMemberBodySchema,
  onboardFlowSchema,
  parseInput,
  parseMemberSpec,
} from '../../src/partner/schemas.js';

const validCustomer = {
  basic: { email: 'ana@example.com', firstName: 'Ana', lastName: 'Diaz', businessPhone: '+1 415 555 2671' },
  business: { companyName: 'Diaz Dental' },
};

function problemOf(schema: Parameters<typeof parseInput>[0], value: unknown, flags?: Record<string, string>): string {
  try {
    parseInput(schema, value, 'body', flags);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('expected the input to be refused');
}

describe('onboarding body (SPEC 2.1)', () => {
  test('a valid body passes and the phone is sent in E.164', () => {
    const body = parseInput(OnboardBodySchema, { ...validCustomer, isQuickOnboarding: true }, 'body');
    expect(body.basic.businessPhone).toBe('+14155552671');
    expect(body.isQuickOnboarding).toBe(true);
    expect(body.allowPortalAccess).toBeUndefined();
  });

  test.each([
    ['+44 20 7946 0958', '+442079460958'],
    ['+49 30 901820', '+4930901820'],
    ['+61 2 9374 4000', '+61293744000'],
  ])('international number %s is accepted as %s', (input, e164) => {
    const body = parseInput(OnboardBodySchema, { ...validCustomer, basic: { ...validCustomer.basic, businessPhone: input } }, 'body');
    expect(body.basic.businessPhone).toBe(e164);
  });

  test.each([
    ['4155552671', /international format/],
    ['+12345', /not a valid phone number/],
    ['+1 415 555 26711', /not a valid phone number/],
    ['+999 123456', /not a valid phone number/],
    ['call me', /international format/],
  ])('phone %s is refused, naming basic.businessPhone', (phone, reason) => {
    const message = problemOf(OnboardBodySchema, { ...validCustomer, basic: { ...validCustomer.basic, businessPhone: phone } });
    expect(message).toMatch(/basic\.businessPhone/);
    expect(message).toMatch(reason);
  });

  test('every bad field is named, with the flag that set it', () => {
    const message = problemOf(
      OnboardBodySchema,
      { basic: { email: 'not-an-email', firstName: '', businessPhone: '+14155552671' }, business: {} },
      { 'basic.email': '--email', 'basic.lastName': '--last-name' },
    );
    expect(message).toContain('basic.email (--email): must be an e-mail address');
    expect(message).toContain('basic.firstName: is required');
    expect(message).toContain('basic.lastName (--last-name): is required');
    expect(message).toContain('business.companyName: is required');
  });

  test('unknown fields are refused (a typo must not silently drop the portal invite)', () => {
    expect(problemOf(OnboardBodySchema, { ...validCustomer, allowPortalAcess: true })).toMatch(/unknown field\(s\) allowPortalAcess/);
  });

  test('flags must be booleans', () => {
    expect(problemOf(OnboardBodySchema, { ...validCustomer, allowPortalAccess: 'yes' })).toMatch(/allowPortalAccess/);
  });
});

describe('agent mapping body (SPEC 2.2)', () => {
  test.each([0, -1.5, Number.NaN, Number.POSITIVE_INFINITY])('profit multiplier %s is refused', (value) => {
    expect(problemOf(MapAgentBodySchema, { customerId: 'cus_1', profitMultiplier: value })).toMatch(/profitMultiplier: must be a (positive finite )?number/);
  });

  test('a multiplier given as a string is refused, not coerced', () => {
    expect(problemOf(MapAgentBodySchema, { customerId: 'cus_1', profitMultiplier: '1.5' })).toMatch(/profitMultiplier/);
  });

  test('1.5 and a customer id pass', () => {
    expect(parseInput(MapAgentBodySchema, { customerId: 'cus_1', profitMultiplier: 1.5 }, 'body')).toEqual({ customerId: 'cus_1', profitMultiplier: 1.5 });
  });

  test('the provider must be one of the profile', () => {
    const schema = onboardFlowSchema(['voice-one', 'voice-two']);
    const message = problemOf(schema, { customer: validCustomer, agent: { provider: 'voice-three', agentId: 'a', profitMultiplier: 1 } });
    expect(message).toMatch(/agent\.provider: must be one of: voice-one, voice-two/);
  });
});

describe('team member body (SPEC 2.3)', () => {
  test('role defaults to member', () => {
    expect(parseInput(TeamMemberBodySchema, { email: 'bo@example.com', name: 'Bo' }, 'body').role).toBe('member');
  });

  test('a bad e-mail is refused by name', () => {
    expect(problemOf(TeamMemberBodySchema, { email: 'bo@', name: 'Bo', role: 'member' })).toMatch(/^invalid body: email:/);
  });
});

describe('--member email:name[:role]', () => {
  test.each([
    ['bo@example.com:Bo', { email: 'bo@example.com', name: 'Bo' }],
    ['bo@example.com:Bo Li:admin', { email: 'bo@example.com', name: 'Bo Li', role: 'admin' }],
    ['bo@example.com:Team: Sales:member', { email: 'bo@example.com', name: 'Team: Sales', role: 'member' }],
  ])('%s', (spec, expected) => {
    expect(parseMemberSpec(spec)).toEqual(expected);
  });

  test('a spec without a name is a usage error', () => {
    expect(() => parseMemberSpec('bo@example.com')).toThrow(UsageError);
  });
});
