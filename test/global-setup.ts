import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { serviceStandins } from './helpers/sandbox.js';

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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-healthy-'));
  const services = await serviceStandins();
  project.provide('healthyServers', { dir, mcpUrl: services.mcp.url, aiGatewayUrl: services.aiGateway.url });
  return async () => {
    await services.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
