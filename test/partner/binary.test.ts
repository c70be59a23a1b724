import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { cleanEnv, requireBinary } from '../helpers/binary.js';
import { PartnerStandin, STANDIN_KEY } from '../helpers/partner-standin.js';
import { budget } from '../helpers/budget.js';
import { tempDir } from '../helpers/tmp.js';
import { jsonOutput } from '../helpers/json-schemas.js';

/** The built single executable (dist/service-deploy) against the stand-in: stdin bodies, argv, exit codes. */

let standin: PartnerStandin;
beforeEach(async () => {
  standin = await new PartnerStandin().start();
});
afterEach(async () => {
  await standin.close();
});

test('onboard-flow --body - from stdin: the key is in neither argv nor output', async () => {
  const flow = {
    customer: { basic: { email: 'ana@example.com', firstName: 'Ana', lastName: 'Diaz', businessPhone: '+14155552671' }, business: { companyName: 'Diaz Dental' }, isQuickOnboarding: true },
    agent: { provider: 'voice-one', agentId: 'agent-2', profitMultiplier: 1.5 },
    members: [{ email: 'one@example.com', name: 'One', role: 'member' }],
  };
  const release = standin.holdNext(); // keeps the process alive, waiting for the answer, while its argv is read
  const args = ['partner', 'onboard-flow', '--body', '-', '--json', '--verbose'];
  const child = execa(requireBinary(), args, {
    reject: false,
    extendEnv: false,
    env: cleanEnv({ SERVICE_PARTNER_API_URL: standin.url, SERVICE_PARTNER_API_KEY: STANDIN_KEY }),
    input: JSON.stringify(flow),
    timeout: budget(60_000),
  });
  await until(() => standin.requests.length > 0);
  const cmdline = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8');
  release();
  const result = await child;

  expect(cmdline.split('\0')).toEqual(expect.arrayContaining(args));
  expect(cmdline).not.toContain(STANDIN_KEY);
  expect(args.join(' ')).not.toContain(STANDIN_KEY);
  expect(result.exitCode).toBe(0);
  expect(jsonOutput('partner-onboard-flow', result.stdout)).toMatchObject({ ok: true, customerId: 'cus_0001', members: [{ email: 'one@example.com' }] });
  expect(result.stderr).toMatch(/✓ add-member one@example\.com/);
  expect(result.stdout + result.stderr).not.toContain(STANDIN_KEY);
  expect(standin.requests.map((request) => request.status)).toEqual([201, 200, 201]);
});

test('a revoked key from --api-key-file: exit 11, hint names the keys page, key never printed', async () => {
  const keyFile = path.join(tempDir(), 'partner.key');
  const revoked = 'pkt_revoked_9d8e7f6a5b4c';
  fs.writeFileSync(keyFile, `${revoked}\n`, { mode: 0o600 });
  const result = await execa(
    requireBinary(),
    ['partner', 'onboard', '--email', 'ana@example.com', '--first-name', 'Ana', '--last-name', 'Diaz', '--phone', '+14155552671', '--company', 'D', '--api-key-file', keyFile, '--verbose'],
    { reject: false, extendEnv: false, env: cleanEnv({ SERVICE_PARTNER_API_URL: standin.url }), timeout: budget(60_000) },
  );
  expect(result.exitCode).toBe(11);
  expect(result.stderr).toMatch(/refused the API key \(401/);
  expect(result.stderr).toContain('Partner Portal > Settings > API Keys');
  expect(result.stdout + result.stderr).not.toContain(revoked);
  expect(standin.requests).toHaveLength(1);
  expect(standin.customers.size).toBe(0);
});

async function until(condition: () => boolean, timeoutMs = budget(30_000)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the stand-in to see a request');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
