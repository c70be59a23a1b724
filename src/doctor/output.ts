import * as z from 'zod';
import { defineOutput } from '../json/index.js';
import { FIXES } from './index.js';

/**
 * doctor's `--json` report (docs/json.md), defined beside the checks rather than in
 * src/json/outputs.ts: the fix ids it may name are those the checks declare (FIXES), so
 * a new check's fix is in the published schema with no list to keep (npm run schemas).
 */

const checkStatus = () => z.enum(['pass', 'warn', 'fail', 'skip', 'crashed']);
const fixId = () => z.enum(FIXES.map((f) => f.id) as [string, ...string[]]);
const checkReport = () => z.object({
  id: z.string(),
  title: z.string(),
  status: checkStatus(),
  message: z.string(),
  fix: z.string().optional(),
  commands: z.array(z.string()).optional(),
  fixable: z.boolean(),
  action: fixId().optional(),
  durationMs: z.number().int(),
});

export const doctorOutput = defineOutput({
  name: 'doctor',
  version: 1,
  title: 'Doctor report',
  printedBy: '`doctor --json`, `doctor --fix --json`, `doctor CHECK... --json`',
  shape: () => ({
    summary: z.object({ pass: z.number().int(), warn: z.number().int(), fail: z.number().int(), skip: z.number().int(), crashed: z.number().int() }),
    checks: z.array(checkReport()),
    fixes: z.array(z.object({ id: fixId(), title: z.string(), ok: z.boolean(), error: z.string().optional() })).optional(),
    before: z.array(checkReport()).optional(),
    deployed: z.boolean().describe('false: nothing is deployed on this server, so no check ran (error.code not-deployed)'),
  }),
});
