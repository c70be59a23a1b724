import { describe, expect, it } from 'vitest';
import { cleanEnv, runBinary } from '../helpers/binary.js';
import { errorEnvelope } from '../helpers/json-schemas.js';

/**
 * Each command's --help lists its own options and no other (issue 21 item 7), and an
 * option of another command is refused, exit 2, naming the flag and the command.
 * The binary itself is driven: what a user sees is what is checked.
 */

const GLOBAL = ['help', 'version', 'json', 'verbose'];
const ANSWERS = ['customer-name', 'model', 'mesh-hostname', 'api-key-file', 'mesh-auth-key-file', 'mcp-token-file', 'answers'];
const CONNECTION = ['body', 'api-key-file', 'timeout'];
const CUSTOMER = ['email', 'first-name', 'last-name', 'phone', 'company', 'quick', 'portal-access'];
const AGENT = ['provider', 'agent-id', 'profit-multiplier'];

const EXPECTED: Record<string, string[]> = {
  install: [...ANSWERS, 'non-interactive', 'yes', 'catalog', 'channel', 'check', 'diff', 'reset-clean', 'rotate-channel-secrets', 'channel-allow', 'channel-host', 'lock-timeout', 'serial'],
  render: [...ANSWERS, 'channel', 'channel-allow', 'show-secrets'],
  restore: [...ANSWERS, 'check', 'diff', 'lock-timeout', 'max-entry-mib', 'max-total-mib'],
  doctor: ['fix', 'list-checks'],
  guard: ['check'],
  backup: ['check', 'every', 'keep'],
  rollback: ['yes', 'check', 'non-interactive'],
  uninstall: ['yes', 'check', 'non-interactive'],
  'channel show': ['show-secrets'],
  'gateway status': ['lines'],
  'devices list': [],
  status: [],
  profile: [],
  chat: ['message', 'session', 'url', 'pin', 'ca', 'insecure', 'token-file', 'knock-file', 'handoff', 'timeout'],
  'partner onboard': [...CONNECTION, ...CUSTOMER],
  'partner map-agent': [...CONNECTION, ...AGENT, 'customer-id'],
  'partner add-member': [...CONNECTION, 'customer-id', 'email', 'name', 'role'],
  'partner onboard-flow': [...CONNECTION, ...CUSTOMER, ...AGENT, 'member'],
};

/** The long option names a help text lists (`  -y, --yes   ...`). */
function listedOptions(help: string): string[] {
  // The option groups only: an example wrapped onto a new line can start with a flag too.
  return [...help.split(/^Examples:$/m)[0]!.matchAll(/^\s+(?:-\w, )?--([a-z][\w-]*)/gm)].map((m) => m[1]!);
}

describe('--help lists only the command\'s own options', () => {
  for (const [command, own] of Object.entries(EXPECTED)) {
    it(command, async () => {
      const run = await runBinary([...command.split(' '), '--help'], { env: cleanEnv() });
      expect(run.exitCode, String(run.stderr)).toBe(0);
      expect(listedOptions(String(run.stdout)).sort()).toEqual([...GLOBAL, ...own].sort());
    });
  }
});

/** Each: a command line with an option that does not apply, and the flag the refusal must name. */
const REFUSED: Array<[string[], string, string]> = [
  [['render', 'cron', '--reset-clean'], '--reset-clean', 'render'],
  [['render', 'cron', '--non-interactive'], '--non-interactive', 'render'],
  [['render', 'nginx', '--catalog'], '--catalog', 'render'],
  [['render', 'cron', '--lock-timeout', '5'], '--lock-timeout', 'render'],
  [['restore', '/tmp/x.tar.gz', '--channel'], '--channel', 'restore'],
  [['restore', '/tmp/x.tar.gz', '--rotate-channel-secrets'], '--rotate-channel-secrets', 'restore'],
  [['restore', '/tmp/x.tar.gz', '--channel-allow', 'any'], '--channel-allow', 'restore'],
  [['restore', '/tmp/x.tar.gz', '--yes'], '--yes', 'restore'],
  [['status', '--check'], '--check', 'status'],
  [['doctor', '--channel'], '--channel', 'doctor'],
  [['guard', '--fix'], '--fix', 'guard'],
  [['gateway', 'status', '--model', 'x'], '--model', 'gateway status'],
  [['chat', '-m', 'hi', '--customer-name', 'Acme'], '--customer-name', 'chat'],
  [['partner', 'onboard', '--check'], '--check', 'partner onboard'],
  [['install', '--show-secrets'], '--show-secrets', 'install'],
  [['backup', '--yes'], '--yes', 'backup'],
  [['backup', '--diff'], '--diff', 'backup'],
  [['rollback', '--keep', '3'], '--keep', 'rollback'],
  [['rollback', '--customer-name', 'Acme'], '--customer-name', 'rollback'],
  [['uninstall', '--keep', '3'], '--keep', 'uninstall'],
  [['uninstall', '--diff'], '--diff', 'uninstall'],
  [['channel', 'show', '--fix'], '--fix', 'channel show'],
  [['channel', 'show', '--channel-allow', 'any'], '--channel-allow', 'channel show'],
];

describe('an option that does not apply is refused: exit 2, naming the flag and the command', () => {
  for (const [args, flag, command] of REFUSED) {
    it(args.join(' '), async () => {
      const text = await runBinary(args, { env: cleanEnv() });
      expect(text.exitCode).toBe(2);
      expect(String(text.stderr)).toContain(`${flag} is not an option of \`${command}\``);
      expect(String(text.stderr)).toContain(`service-deploy ${command} --help`);
      expect(String(text.stdout)).toBe('');
      const json = await runBinary([...args, '--json'], { env: cleanEnv() });
      expect(json.exitCode).toBe(2);
      const envelope = errorEnvelope(json.stdout, json.exitCode);
      expect(envelope.error.code).toBe('usage');
      expect(envelope.error.message).toContain(flag);
    });
  }
});

describe('secrets are not flags (issue 21 item 11): refused with why and where they go', () => {
  for (const [command, flag, env] of [
    [['install'], '--api-key', 'SERVICE_API_KEY'],
    [['install'], '--mesh-auth-key', 'SERVICE_MESH_AUTH_KEY'],
    [['install'], '--mcp-token', 'SERVICE_MCP_TOKEN'],
    [['render', 'secrets'], '--api-key', 'SERVICE_API_KEY'],
    [['restore', '/tmp/x.tar.gz'], '--mesh-auth-key', 'SERVICE_MESH_AUTH_KEY'],
  ] as const) {
    it(`${command.join(' ')} ${flag}`, async () => {
      const secret = 'pkt_secret_on_argv_0123456789';
      const run = await runBinary([...command, flag, secret, '--json'], { env: cleanEnv() });
      expect(run.exitCode).toBe(2);
      const text = `${String(run.stdout)}${String(run.stderr)}`;
      expect(text).not.toContain(secret);
      expect(String(run.stderr)).toContain(`${flag} is not accepted: process arguments are visible to every user`);
      const envelope = errorEnvelope(run.stdout, run.exitCode);
      expect(envelope.error).toMatchObject({ code: 'usage', exitCode: 2 });
      expect(envelope.error.hint).toContain(env);
      expect(envelope.error.hint).toContain(`${flag}-file`);
    });
  }
});
