import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from './errors.js';
import { MAX_MODEL_ID_LENGTH, MODEL_ID, SLUG, fileErrorText, integerProblem, parseChannelHosts, serviceUrlProblem, shown, textProblem, tokenProblem } from './input.js';

/**
 * Every SERVICE_* environment variable the program reads, with its rule. Checked once
 * before any command runs (cli.ts), so a bad value is refused with its name (exit 2)
 * instead of failing somewhere inside a run. The answers' own rules (pkt_ prefix, DNS
 * label...) are applied again where the answers are resolved; here they meet the rules
 * every outside text meets.
 */
interface Variable {
  check(value: string): string | undefined;
  /** Its value is never repeated in a message. */
  secret?: boolean;
  /** An empty value is refused (not read as "unset"). */
  emptyIsError?: boolean;
}

const url: Variable = { check: serviceUrlProblem };
const secret = (max = 1024): Variable => ({ check: (v) => tokenProblem(v, max), secret: true });
const text = (max: number): Variable => ({ check: (v) => textProblem(v, max) });
const slug: Variable = {
  check: (v) => textProblem(v, 64) ?? (SLUG.test(v) ? undefined : 'must be a lowercase slug (a-z, 0-9, -)'),
};
const modelId: Variable = {
  check: (v) => textProblem(v, MAX_MODEL_ID_LENGTH) ?? (MODEL_ID.test(v) ? undefined : 'may contain only letters, digits and . _ : / @ -'),
};
const readableFile: Variable = {
  check: (v) => {
    const problem = textProblem(v, 4096);
    if (problem) return problem;
    try {
      const st = fs.statSync(v);
      if (!st.isFile()) return `${shown(v)} is not a regular file`;
      fs.accessSync(v, fs.constants.R_OK);
    } catch (error) {
      return `cannot read ${shown(v)}: ${fileErrorText(error)}`;
    }
    return undefined;
  },
};
/** npm install specs for local mirrors: a version spec or a tarball path; never an option. */
const npmSource: Variable = {
  check: (v) => textProblem(v, 4096) ?? (v.startsWith('-') ? 'must not start with "-" (it would be read as an npm option)' : undefined),
};
const CHANNEL_SECRET = /^[A-Za-z0-9._~+/=-]{24,512}$/;
const channelSecret: Variable = {
  check: (v) => tokenProblem(v, 512) ?? (CHANNEL_SECRET.test(v) ? undefined : 'must be 24-512 characters of A-Z a-z 0-9 . _ ~ + / = -'),
  secret: true,
};

export const VARIABLES: Record<string, Variable> = {
  SERVICE_DEPLOY_ROOT: {
    emptyIsError: true,
    check: (v) => {
      const problem = textProblem(v, 4096);
      if (problem) return problem;
      let st: fs.Stats;
      try {
        st = fs.statSync(path.resolve(v));
      } catch {
        return `${shown(v)} does not exist (create the sandbox folder first, or unset SERVICE_DEPLOY_ROOT to work on this server)`;
      }
      return st.isDirectory() ? undefined : `${shown(v)} is not a folder`;
    },
  },
  SERVICE_SETUP_URL: url,
  SERVICE_AI_GATEWAY_URL: url,
  SERVICE_MCP_URL: url,
  SERVICE_PARTNER_API_URL: url,
  SERVICE_AI_GATEWAY_API: slug,
  SERVICE_GATEWAY_PROVIDER: slug,
  SERVICE_DEFAULT_MODEL: modelId,
  SERVICE_HEARTBEAT_MODEL: modelId,
  SERVICE_VOICE_PROVIDERS: {
    check: (v) => {
      const problem = textProblem(v, 200);
      if (problem) return problem;
      const parts = v.split(',').map((s) => s.trim());
      return parts.length === 2 && parts.every((p) => SLUG.test(p)) ? undefined : 'must be two lowercase slugs separated by a comma';
    },
  },
  SERVICE_CA_BUNDLE: readableFile,
  SERVICE_ALLOW_UNSUPPORTED_OS: { check: (v) => (v === '0' || v === '1' ? undefined : 'must be 1 (or 0)') },
  SERVICE_API_KEY: secret(512),
  SERVICE_MESH_AUTH_KEY: secret(512),
  SERVICE_MCP_TOKEN: secret(1024),
  SERVICE_CUSTOMER_NAME: text(80),
  SERVICE_MODEL: { check: (v) => textProblem(v, MAX_MODEL_ID_LENGTH) },
  SERVICE_MESH_HOSTNAME: text(63),
  /** The answers file (like --answers FILE), checked where it is read: root's, 0600. */
  SERVICE_ANSWERS_FILE: text(4096),
  SERVICE_PARTNER_API_KEY: secret(512),
  SERVICE_CHANNEL_URL: url,
  SERVICE_CHANNEL_TOKEN: channelSecret,
  SERVICE_CHANNEL_KNOCK: channelSecret,
  SERVICE_CHANNEL_TOKEN_FILE: readableFile,
  SERVICE_CHANNEL_KNOCK_FILE: readableFile,
  SERVICE_TS_HOSTNAME: text(253),
  /** The channel's public names (like --channel-host): NAME|ADDRESS[,NAME|ADDRESS], or none. */
  SERVICE_CHANNEL_HOSTS: {
    check: (v) => {
      const problem = textProblem(v, 4096);
      if (problem) return problem;
      try {
        parseChannelHosts(v);
        return undefined;
      } catch (error) {
        return `must be DNS names or IP addresses separated by commas, or none: ${(error as Error).message}`;
      }
    },
  },
  SERVICE_NODE_DIST_URL: url,
  SERVICE_MESH_APT_URL: url,
  SERVICE_BROWSER_KEY_URL: url,
  SERVICE_OPENCLAW_SOURCE: npmSource,
  SERVICE_LOSSLESS_CLAW_SOURCE: npmSource,
  SERVICE_QMD_SOURCE: npmSource,
  SERVICE_DOWNLOAD_CA_FILE: readableFile,
  SERVICE_HEALTH_URL: url,
  SERVICE_QMD_HEALTH_URL: url,
  SERVICE_HEALTH_TIMEOUT_MS: { check: (v) => integerProblem(v, 0, 3_600_000) },
};

/** Problems of the SERVICE_* variables set in `env`, each naming its variable. */
export function environmentProblems(env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  for (const [name, rule] of Object.entries(VARIABLES)) {
    const value = env[name];
    if (value === undefined) continue;
    if (value === '') {
      if (rule.emptyIsError) problems.push(`${name} is set but empty (unset it instead)`);
      continue;
    }
    const problem = rule.check(value);
    if (problem) problems.push(`${name} ${problem}`);
  }
  return problems;
}

/** Refuses the run (exit 2) when any SERVICE_* variable is bad, naming every bad one. */
export function checkEnvironment(env: NodeJS.ProcessEnv = process.env): void {
  const problems = environmentProblems(env);
  if (problems.length === 0) return;
  throw new UsageError(
    problems.length === 1 ? problems[0]! : `bad environment variables:\n  - ${problems.join('\n  - ')}`,
    'fix or unset the variable and run again; nothing was changed',
  );
}
