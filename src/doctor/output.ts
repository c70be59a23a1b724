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

const componentVersion = (label: string) =>
  z.object({
    installed: z.string().nullable().describe(`The ${label} installed on this server; null when none is`),
    pinned: z.string().describe(`The ${label} this service-deploy installs`),
    behind: z.boolean().describe('installed is not pinned (or null): a failed or skipped update left the server behind, and the check that judges it fails (node-runtime, agent-runtime, plugins)'),
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
    versions: z
      .object({
        release: z.string().describe('This service-deploy\'s release'),
        components: z.object({
          node: componentVersion('Node.js of the runtime'),
          openclaw: componentVersion('OpenClaw'),
          qmd: componentVersion('QMD'),
          'lossless-claw': componentVersion('lossless-claw'),
        }),
      })
      .describe('What runs here: this binary\'s release and each runtime component against its pin; there also when nothing is deployed'),
  }),
});
