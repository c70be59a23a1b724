import type { Argv } from 'yargs';
import { ArgumentError } from '../errors.js';

export interface GlobalOptions {
  json?: boolean;
  verbose?: boolean;
}

/**
 * A numeric option, kept as the text typed so that a refusal can quote it (yargs' own
 * number type turns \`abc\` into NaN and an empty value into 0) and shown as [number] in
 * --help: yargs' parser lets \`string\` win, its help lets \`number\` win. The command
 * checks the text (input.ts numberTextProblem, or the option's own rule).
 */
export function numberOption(describe: string, more: { alias?: string; group?: string } = {}) {
  return { type: 'string', number: true, describe, ...more } as const;
}

/** Options every command understands. */
export function withGlobals<T>(yargs: Argv<T>) {
  return yargs
    .option('json', { type: 'boolean', describe: 'Print machine-readable JSON on stdout, errors included (versioned; docs/json.md in the sources)' })
    .option('verbose', { type: 'boolean', describe: 'Show every command run and more detail on stderr' });
}

/** The answers a command can take from the command line (install, render, restore). */
export interface AnswerArgs {
  customerName?: string;
  model?: string;
  meshHostname?: string;
  apiKeyFile?: string;
  meshAuthKeyFile?: string;
  mcpTokenFile?: string;
  answers?: string;
  apiKey?: string;
  meshAuthKey?: string;
  mcpToken?: string;
}

export function answerOptions<T>(y: Argv<T>) {
  return y
    .option('customer-name', { type: 'string', describe: 'Customer name (agent display name; its slug names things)', group: 'Answers:' })
    .option('model', { type: 'string', describe: 'Model ID on the service AI gateway (default: the service profile)', group: 'Answers:' })
    .option('mesh-hostname', { type: 'string', describe: 'Mesh network hostname (default: openclaw-<customer-slug>)', group: 'Answers:' })
    .option('api-key-file', { type: 'string', describe: 'File holding the service API key (or env SERVICE_API_KEY)', group: 'Answers:' })
    .option('mesh-auth-key-file', { type: 'string', describe: 'File holding the mesh auth key (or env SERVICE_MESH_AUTH_KEY)', group: 'Answers:' })
    .option('mcp-token-file', { type: 'string', describe: 'File holding the MCP token (or env SERVICE_MCP_TOKEN)', group: 'Answers:' })
    .option('answers', { type: 'string', describe: 'Answers file (root\'s, 0600; or env SERVICE_ANSWERS_FILE): SERVICE_API_KEY=... lines, or JSON with customerName, apiKey, modelId, meshAuthKey, meshHostname, mcpToken', group: 'Answers:' })
    // Declared only so that they are refused with the reason instead of "not an option".
    .option('api-key', { type: 'string', hidden: true })
    .option('mesh-auth-key', { type: 'string', hidden: true })
    .option('mcp-token', { type: 'string', hidden: true });
}

const SECRET_FLAGS = [
  { key: 'apiKey', flag: '--api-key', env: 'SERVICE_API_KEY', file: '--api-key-file', field: 'apiKey' },
  { key: 'meshAuthKey', flag: '--mesh-auth-key', env: 'SERVICE_MESH_AUTH_KEY', file: '--mesh-auth-key-file', field: 'meshAuthKey' },
  { key: 'mcpToken', flag: '--mcp-token', env: 'SERVICE_MCP_TOKEN', file: '--mcp-token-file', field: 'mcpToken' },
] as const;

/** A secret given as a flag is refused (exit 2) with why and where it goes instead; its value is never repeated. */
export function refuseSecretFlags(argv: AnswerArgs): void {
  for (const s of SECRET_FLAGS) {
    if (argv[s.key] === undefined) continue;
    throw new ArgumentError(
      `${s.flag} is not accepted: process arguments are visible to every user on this machine (ps, /proc)`,
      `set ${s.env} (with sudo: sudo -E, or sudo ${s.env}=... service-deploy ...), pass ${s.file} <path> (mode 0600), or put ${s.field} in the --answers file; nothing was changed`,
    );
  }
}

/** The answers part of a request, from the flags. */
export function answerFlags(argv: AnswerArgs) {
  return {
    customerName: argv.customerName,
    model: argv.model,
    meshHostname: argv.meshHostname,
    apiKeyFile: argv.apiKeyFile,
    meshAuthKeyFile: argv.meshAuthKeyFile,
    mcpTokenFile: argv.mcpTokenFile,
    answers: argv.answers,
  };
}
