import { DeployError } from '../errors.js';
import type { Step } from '../pipeline/step.js';

/**
 * The service's MCP tool server (CRM, calendars, SMS/e-mail), reached by the agent
 * with the customer's MCP token (configured in runtime-config). This step proves the
 * token works before the agent depends on it: an MCP `initialize` must be accepted.
 */
export const mcpStep: Step = {
  id: 'mcp',
  title: "Tool server (the service's MCP)",
  async check({ host, profile, answers }) {
    const response = await host.net
      .request(profile.mcpUrl, {
        method: 'POST',
        timeoutMs: 20_000,
        headers: {
          authorization: `Bearer ${answers.mcpToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'service-deploy', version: '1' } },
        }),
      })
      .catch((error: Error) => {
        throw new DeployError(`the service's MCP server at ${profile.mcpUrl} is unreachable: ${error.message}`, 'check the network, then run again');
      });
    if (response.status === 401 || response.status === 403) {
      throw new DeployError(`the service's MCP server rejected the MCP token (HTTP ${response.status})`, `create a token for this customer in ${profile.portalMcpTokensPage} and run again`);
    }
    if (response.status >= 300) throw new DeployError(`the service's MCP server answered HTTP ${response.status} to initialize`, 'try again later');
    return { changes: [] };
  },
  async apply() {},
};
