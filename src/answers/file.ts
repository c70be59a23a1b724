import { UsageError } from '../errors.js';
import { ANSWER_FIELDS, type AnswerField } from './schema.js';

/**
 * The answers file (`--answers FILE` or `SERVICE_ANSWERS_FILE`), in either of two forms:
 *
 * - JSON/JSON5: `{ "customerName": "...", "apiKey": "...", ... }` (cloud-init, Ansible);
 * - environment lines, as an operator writes them for `sudo` (which drops exported
 *   variables): `SERVICE_API_KEY=pkt_...`, one per line, `#` comments, an optional
 *   `export `, values bare or quoted the way a shell quotes them ('...', "...").
 *
 * It is data, never sourced: `$` and backquotes are refused outside single quotes
 * instead of being expanded, and only the six answers' names are accepted, and the
 * channel's public names (`channelHosts`, a list or comma-separated;
 * `SERVICE_CHANNEL_HOSTS`), which the portal's deploy knows and the server cannot see.
 */
export const ANSWER_ENV_NAMES: Record<AnswerField, string> = {
  customerName: 'SERVICE_CUSTOMER_NAME',
  apiKey: 'SERVICE_API_KEY',
  modelId: 'SERVICE_MODEL',
  meshAuthKey: 'SERVICE_MESH_AUTH_KEY',
  meshHostname: 'SERVICE_MESH_HOSTNAME',
  mcpToken: 'SERVICE_MCP_TOKEN',
};

/** What a file may hold: the six answers and the channel's public names (raw, comma-separated; checked by the resolver). */
export type FileField = AnswerField | 'channelHosts';
export type FileAnswers = Partial<Record<FileField, string>>;
const FILE_FIELDS: readonly FileField[] = [...ANSWER_FIELDS, 'channelHosts'];
const FILE_ENV_NAMES: Record<FileField, string> = { ...ANSWER_ENV_NAMES, channelHosts: 'SERVICE_CHANNEL_HOSTS' };

const FIELD_OF_ENV = new Map(Object.entries(FILE_ENV_NAMES).map(([field, name]) => [name, field as FileField]));

/** Leading comments (JSON5's // and /* *\/) then `{` (or `[`, refused as not an object): the JSON form. */
const LOOKS_LIKE_JSON = /^\s*(?:(?:\/\/[^\n]*\n|\/\*[\s\S]*?\*\/)\s*)*[{[]/;

/** Parses an answers file; `where` names it in every message (`--answers /root/answers.env`). */
export async function parseAnswersFile(text: string, where: string): Promise<FileAnswers> {
  return LOOKS_LIKE_JSON.test(text) ? parseJsonForm(text, where) : parseEnvForm(text, where);
}

/** JSON5 (comments, unquoted keys) is loaded only for a file in the JSON form. */
async function parseJsonForm(text: string, where: string): Promise<FileAnswers> {
  let parsed: unknown;
  try {
    parsed = (await import('json5')).default.parse(text);
  } catch (error) {
    throw new UsageError(`${where}: not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${where}: expected a JSON object with ${ANSWER_FIELDS.join(', ')}`);
  }
  const out: FileAnswers = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!(FILE_FIELDS as readonly string[]).includes(key)) {
      throw new UsageError(`${where}: unknown field "${key}"`, `known fields: ${FILE_FIELDS.join(', ')}`);
    }
    if (key === 'channelHosts' && Array.isArray(value)) {
      if (!value.every((v) => typeof v === 'string')) throw new UsageError(`${where}: channelHosts must be a list of strings (names or addresses)`);
      out.channelHosts = value.join(',');
      continue;
    }
    if (typeof value !== 'string') throw new UsageError(`${where}: ${key} must be a string${key === 'channelHosts' ? ' or a list of strings' : ''}`);
    out[key as FileField] = value;
  }
  return out;
}

function parseEnvForm(text: string, where: string): FileAnswers {
  const out: FileAnswers = {};
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const at = `${where} line ${index + 1}`;
    const line = raw.trimStart();
    if (line === '' || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=/.exec(line);
    if (!m) {
      throw new UsageError(`${at}: expected NAME=value (or a JSON object)`, `names: ${Object.values(FILE_ENV_NAMES).join(', ')}`);
    }
    const name = m[1]!;
    const field = FIELD_OF_ENV.get(name);
    if (!field) {
      throw new UsageError(`${at}: ${name} is not an answer`, `an answers file holds only ${Object.values(FILE_ENV_NAMES).join(', ')}`);
    }
    if (out[field] !== undefined) throw new UsageError(`${at}: ${name} is given twice`);
    // A secret's value is never repeated in a message: problems name the line and the rule.
    out[field] = shellWord(line.slice(m[0].length), `${at} (${name})`);
  });
  return out;
}

/**
 * One shell word: bare characters, '...' (literal), "..." (\\ \" \$ \` escapes), in any
 * sequence, then nothing but spaces and an optional # comment. `$` and backquotes
 * outside single quotes are refused: the file is read as data, never run.
 */
function shellWord(rest: string, at: string): string {
  let value = '';
  let i = 0;
  const refuse = (why: string): never => {
    throw new UsageError(`${at}: ${why}`, "quote the value in single quotes ('...'); nothing was changed");
  };
  while (i < rest.length) {
    const ch = rest[i]!;
    if (ch === "'") {
      const end = rest.indexOf("'", i + 1);
      if (end < 0) refuse('a single quote is not closed');
      value += rest.slice(i + 1, end);
      i = end + 1;
    } else if (ch === '"') {
      i++;
      for (;;) {
        if (i >= rest.length) refuse('a double quote is not closed');
        const c = rest[i]!;
        if (c === '"') break;
        if (c === '\\' && i + 1 < rest.length && '\\"$`'.includes(rest[i + 1]!)) {
          value += rest[i + 1];
          i += 2;
          continue;
        }
        if (c === '$' || c === '`') refuse('has $ or ` in double quotes (it would be expanded by a shell)');
        value += c;
        i++;
      }
      i++;
    } else if (ch === ' ' || ch === '\t') {
      const tail = rest.slice(i).trim();
      if (tail !== '' && !tail.startsWith('#')) refuse('has text after the value (quote a value with spaces)');
      break;
    } else if (ch === '\\') {
      if (i + 1 >= rest.length) refuse('ends with a backslash');
      value += rest[i + 1];
      i += 2;
    } else {
      if (ch === '$' || ch === '`' || ch === ';' || ch === '|' || ch === '&' || ch === '<' || ch === '>' || ch === '(' || ch === ')') {
        refuse(`has an unquoted ${ch} (a shell would not read it as text)`);
      }
      value += ch;
      i++;
    }
  }
  return value;
}

/** The file's owner and mode, as `fs.Stats` gives them. */
export interface FileOwnership {
  uid: number;
  mode: number;
}

/**
 * An answers file holds secrets: it must belong to the user running service-deploy
 * (root on a server) and be readable by nobody else (0600 or 0400). Returns why not.
 */
export function answersFileProblem(st: FileOwnership, euid: number): string | undefined {
  if (st.uid !== euid) return `it belongs to uid ${st.uid}, not to ${euid === 0 ? 'root' : `uid ${euid}`} who runs service-deploy`;
  const perm = st.mode & 0o777;
  if ((perm & 0o077) !== 0) return `its mode is 0${perm.toString(8)}: group or other users can ${perm & 0o022 ? 'change' : 'read'} its secrets (0600 wanted)`;
  return undefined;
}
