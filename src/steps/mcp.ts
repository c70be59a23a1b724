import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import type { Step } from '../pipeline/step.js';
import type { ServiceProfile } from '../profile.js';
import { placeholderEndpointHint } from '../input.js';

export type McpVerdict = { status: 'accepted' } | { status: 'rejected'; http: number } | { status: 'error'; message: string; hint: string };

/** Keyed by the run's environment: the same for its read-only host and its host. */
const verdicts = new WeakMap<object, Map<string, Promise<McpVerdict>>>();

/**
 * An MCP `initialize` with the customer's token, once per run and token (preflight
 * asks first, so a wrong token is refused before anything changes; the mcp step
 * reuses the answer).
 */
export function mcpTokenVerdict(host: Host, profile: ServiceProfile, token: string): Promise<McpVerdict> {
  let byToken = verdicts.get(host.env);
  if (!byToken) verdicts.set(host.env, (byToken = new Map()));
  const key = `${profile.mcpUrl}\n${token}`;
  let pending = byToken.get(key);
  if (!pending) {
    pending = askMcp(host, profile, token);
    byToken.set(key, pending);
  }
  return pending;
}

async function askMcp(host: Host, profile: ServiceProfile, token: string): Promise<McpVerdict> {
  let response;
  try {
    response = await host.net.request(profile.mcpUrl, {
      method: 'POST',
      timeoutMs: 20_000,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'service-deploy', version: '1' } },
      }),
    });
  } catch (error) {
    return { status: 'error', message: `the service's MCP server at ${profile.mcpUrl} is unreachable: ${(error as Error).message}`, hint: placeholderEndpointHint(profile.mcpUrl, 'SERVICE_MCP_URL') ?? 'check the network, then run again' };
  }
  if (response.status === 401 || response.status === 403) return { status: 'rejected', http: response.status };
  if (response.status >= 300) return { status: 'error', message: `the service's MCP server answered HTTP ${response.status} to initialize`, hint: 'try again later' };
  return { status: 'accepted' };
}

export function rejectedTokenMessage(verdict: { http: number }, profile: ServiceProfile): { message: string; hint: string } {
  return {
    message: `the service's MCP server rejected the MCP token (HTTP ${verdict.http})`,
    hint: `create a token for this customer in ${profile.portalMcpTokensPage} and run again`,
  };
}

/**
 * The service's MCP tool server (CRM, calendars, SMS/e-mail), reached by the agent
 * with the customer's MCP token (configured in runtime-config). This step proves the
 * token works before the agent depends on it: an MCP `initialize` must be accepted.
 */
export const mcpStep: Step = {
  id: 'mcp',
  title: "Tool server (the service's MCP)",
  needs: ['package-lock'],
  async check({ host, profile, answers }) {
    const verdict = await mcpTokenVerdict(host, profile, answers.mcpToken);
    if (verdict.status === 'rejected') {
      const { message, hint } = rejectedTokenMessage(verdict, profile);
      throw new DeployError(message, hint);
    }
    if (verdict.status === 'error') throw new DeployError(verdict.message, verdict.hint);
    return { changes: [] };
  },
  async apply() {},
};
