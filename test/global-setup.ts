import type { TestProject } from 'vitest/node';
import { startHealthyServers } from './helpers/ops-sandbox.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The healthy servers' run folder (test/helpers/ops-sandbox.ts) and the service stand-ins they were installed against. */
    healthyServers: { dir: string; mcpUrl: string; aiGatewayUrl: string };
  }
}

/**
 * Once per test run: a folder for the healthy servers the doctor, guard and ops tests
 * copy (made by the install on first use, test/helpers/ops-sandbox.ts), and the service's
 * MCP server and AI gateway stand-ins their answers.json and openclaw.json name, alive
 * for the whole run (a copy may run the install again).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = await startHealthyServers();
  project.provide('healthyServers', run.servers);
  return run.close;
}
