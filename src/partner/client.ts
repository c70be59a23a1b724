import fs from 'node:fs';
import { UsageError } from '../errors.js';
import { fileErrorText, placeholderEndpointHint } from '../input.js';
import { Redactor } from '../host/redact.js';
import { VERSION } from '../version.js';
import {
  AgentNotFoundError,
  EmailExistsError,
  PartnerApiError,
  PartnerOutcomeUnknownError,
  PartnerTimeoutError,
  PartnerUnavailableError,
  TeamLimitError,
  UnauthorizedError,
} from './errors.js';
import {
  findCustomerId,
  type MapAgentBody,
  type OnboardBody,
  type OnboardResponse,
  type TeamMemberBody,
} from './schemas.js';

/**
 * The partner API client (SPEC 4.3, 5.1, 7). One request per call, with retries only
 * where repeating cannot create a second customer or member; see docs/partner-api.md.
 */

export const API_KEY_ENV = 'SERVICE_PARTNER_API_KEY';
export const API_KEY_PREFIX = 'pkt_';
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface RetryPolicy {
  /** Total attempts, the first included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}
export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseDelayMs: 250, maxDelayMs: 4_000 };

/**
 * How a call may be repeated:
 * - `once`: not idempotent (onboarding, adding a member). Repeated only when the request
 *   provably never left this machine (connection refused, DNS not ready, connect timeout)
 *   or was turned away by a rate limit (429).
 * - `idempotent`: repeating leaves the same state (mapping an agent to a customer), so
 *   502/503/504 and a connection lost mid-request are retried as well.
 * A timeout is never retried: the caller chose the time budget with --timeout.
 */
type RepeatSafety = 'once' | 'idempotent';

interface Operation {
  name: 'onboard' | 'map-agent' | 'add-member';
  path: string;
  body: unknown;
  safety: RepeatSafety;
  /** What the error messages talk about: "customer ana@example.com", "agent ag_1 on voice-one". */
  subject: string;
}

export interface PartnerClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Where keys are made (profile.portalApiKeysPage), for the 401 hint. */
  portalApiKeysPage: string;
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  fetch?: typeof globalThis.fetch;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Receives already-redacted lines: `debug` for every request, `warn` for retries. */
  log?: { debug(line: string): void; warn(line: string): void };
}

export class PartnerClient {
  private readonly redactor = new Redactor();
  private readonly timeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly fetch: typeof globalThis.fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(private readonly options: PartnerClientOptions) {
    this.redactor.add(options.apiKey);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.fetch = options.fetch ?? globalThis.fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = options.random ?? Math.random;
  }

  /** POST /api/v1/mcp/customers/onboard. Never repeated once the request may have arrived. */
  async onboard(body: OnboardBody): Promise<OnboardResponse> {
    const subject = `customer ${body.basic.email}`;
    const answer = await this.send({ name: 'onboard', path: '/api/v1/mcp/customers/onboard', body, safety: 'once', subject });
    const id = findCustomerId(answer);
    if (id === undefined) {
      // A success status without an id we can find: the customer may well exist now.
      const shown = typeof answer === 'string' ? answer : (JSON.stringify(answer) ?? '');
      throw new PartnerOutcomeUnknownError(
        `onboarding answered with a success status but no customer id could be found in the answer: ${this.excerpt(shown) || '(empty)'}`,
        undefined,
        `the customer may have been created: check before retrying (look for ${body.basic.email} in the portal's customer list; onboarding again could create a second customer or fail with "email already exists")`,
      );
    }
    return { ...(isRecord(answer) ? answer : {}), id };
  }

  /** POST /api/v1/mcp/<provider>-agents/{agent_id}/map-customer. Idempotent: safe to repeat. */
  async mapAgent(provider: string, agentId: string, body: MapAgentBody): Promise<unknown> {
    return this.send({
      name: 'map-agent',
      path: `/api/v1/mcp/${provider}-agents/${encodeURIComponent(agentId)}/map-customer`,
      body,
      safety: 'idempotent',
      subject: `${provider} agent ${agentId}`,
    });
  }

  /** POST /api/v1/mcp/customers/{customer_id}/team-members. Not repeated once it may have arrived. */
  async addTeamMember(customerId: string, body: TeamMemberBody): Promise<unknown> {
    return this.send({
      name: 'add-member',
      path: `/api/v1/mcp/customers/${encodeURIComponent(customerId)}/team-members`,
      body,
      safety: 'once',
      subject: `team member ${body.email} of customer ${customerId}`,
    });
  }

  private async send(operation: Operation): Promise<unknown> {
    const url = `${this.options.baseUrl}${operation.path}`;
    const payload = JSON.stringify(operation.body);
    for (let attempt = 1; ; attempt++) {
      const started = Date.now();
      const outcome = await this.attempt(url, payload);
      const elapsed = `${Date.now() - started} ms`;
      const lastAttempt = attempt >= this.retry.attempts;

      if (outcome.kind === 'response') {
        const { status, retryAfterMs } = outcome;
        this.debug(`POST ${operation.path} -> ${status} in ${elapsed} (attempt ${attempt})`);
        if (status >= 200 && status < 300) return parseSuccessBody(outcome.text);
        // A redirect is never followed nor repeated: it would carry the key elsewhere.
        const retryable = status === 429 || (operation.safety === 'idempotent' && [502, 503, 504].includes(status));
        const delay = this.backoff(attempt, retryAfterMs);
        if (retryable && !lastAttempt && delay !== undefined) {
          this.warn(`${operation.name}: HTTP ${status}; retrying in ${formatSeconds(delay)} (attempt ${attempt + 1} of ${this.retry.attempts})`);
          await this.sleep(delay);
          continue;
        }
        throw this.errorForStatus(operation, outcome, attempt);
      }

      if (outcome.kind === 'timeout') {
        this.debug(`POST ${operation.path} -> timeout after ${elapsed} (attempt ${attempt})`);
        throw new PartnerTimeoutError(
          `${operation.name}: no answer from the partner API within ${formatSeconds(this.timeoutMs)}`,
          undefined,
          this.mayHaveAppliedHint(operation) ?? 'safe to re-run the same command; raise --timeout if the API is slow',
        );
      }

      const { failure } = outcome;
      this.debug(`POST ${operation.path} -> network error ${failure.code ?? '?'} after ${elapsed} (attempt ${attempt})`);
      const retryable = failure.transient && (failure.neverSent || operation.safety === 'idempotent');
      if (retryable && !lastAttempt) {
        const delay = this.backoff(attempt)!;
        this.warn(`${operation.name}: ${failure.description}; retrying in ${formatSeconds(delay)} (attempt ${attempt + 1} of ${this.retry.attempts})`);
        await this.sleep(delay);
        continue;
      }
      const mayHaveApplied = !failure.neverSent;
      throw new PartnerUnavailableError(
        `${operation.name}: cannot reach the partner API at ${this.options.baseUrl}: ${failure.description}` +
          (retryable ? ` (after ${attempt} attempts)` : ''),
        undefined,
        mayHaveApplied,
        (mayHaveApplied ? this.mayHaveAppliedHint(operation) : undefined) ??
          placeholderEndpointHint(this.options.baseUrl, 'SERVICE_PARTNER_API_URL') ??
          (failure.code && CERTIFICATE_CODES.includes(failure.code)
            ? `nothing was sent: ${this.options.baseUrl} did not show a certificate this machine trusts; check that SERVICE_PARTNER_API_URL is the partner API's own https address, then re-run the same command`
            : `${failure.neverSent ? 'nothing was sent (no connection was made): ' : ''}check the network and SERVICE_PARTNER_API_URL, then re-run the same command`),
        { cause: failure.error },
      );
    }
  }

  private async attempt(url: string, payload: string): Promise<AttemptOutcome> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const response = await this.fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json',
          'X-API-Key': this.options.apiKey,
          'User-Agent': `service-deploy/${VERSION}`,
        },
        body: payload,
        signal,
        // A redirect is reported, never followed: it would resend the key to wherever it points.
        redirect: 'manual',
      });
      const text = await response.text();
      return {
        kind: 'response',
        status: response.status,
        text,
        contentType: response.headers.get('content-type') ?? '',
        location: response.headers.get('location') ?? undefined,
        retryAfter: response.headers.get('retry-after') ?? undefined,
        retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
      };
    } catch (error) {
      if (signal.aborted) return { kind: 'timeout' };
      return { kind: 'network', failure: classifyNetworkError(error) };
    }
  }

  /** Exponential backoff with jitter; `undefined` when the server asks for a longer wait than we allow. */
  private backoff(attempt: number, retryAfterMs?: number): number | undefined {
    if (retryAfterMs !== undefined) return retryAfterMs <= this.retry.maxDelayMs ? retryAfterMs : undefined;
    const ceiling = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  /**
   * An error status, classified by the status first. A specific exit code is given only
   * on a signal the spec states or that cannot be mistaken; otherwise the generic code
   * with the server's message verbatim and no advice that could be false.
   */
  private errorForStatus(operation: Operation, response: ResponseOutcome, attempts: number): PartnerApiError {
    const { status } = response;
    const answer = this.serverAnswer(response);
    const said = answer.message ? `: ${answer.message}` : '';
    const after = attempts > 1 ? ` (after ${attempts} attempts)` : '';
    if (status >= 300 && status < 400) {
      return new PartnerApiError(
        `${operation.name}: the partner API answered HTTP ${status}, a redirect to ${response.location ? this.excerpt(response.location) : '(no Location)'}; redirects are not followed (the API key would go with it)`,
        status,
        `SERVICE_PARTNER_API_URL is ${this.options.baseUrl}; if the API has really moved, set it to the new base URL`,
      );
    }
    if (status === 401) {
      return new UnauthorizedError(
        `the partner API refused the API key (401 unauthorized)${said}`,
        status,
        apiKeyHint(this.options.portalApiKeysPage),
      );
    }
    if (status === 429) {
      const wait = response.retryAfter !== undefined ? ` and asks to wait ${describeRetryAfter(response.retryAfter, response.retryAfterMs)} (Retry-After: ${this.excerpt(response.retryAfter)})` : '';
      return new PartnerUnavailableError(
        `${operation.name}: the partner API is rate limiting this key (HTTP 429)${wait}${said}${after}`,
        status,
        false,
        `try again later${response.retryAfter !== undefined ? `, after ${describeRetryAfter(response.retryAfter, response.retryAfterMs)}` : ''}; a 429 means the request was turned away before any work, so the same command is safe to re-run`,
      );
    }
    if (status >= 500) {
      return new PartnerUnavailableError(
        `${operation.name}: the partner API failed with HTTP ${status}${said}${after}`,
        status,
        true,
        this.mayHaveAppliedHint(operation) ?? 'safe to re-run the same command later',
      );
    }
    if (status === 404) {
      if (!answer.json || ROUTE_404.test(answer.message)) {
        // A route 404 or a web page: the URL is not the API's, whatever the page says.
        return new PartnerApiError(
          `${operation.name}: HTTP 404 from ${this.options.baseUrl}${operation.path} with ${answer.json ? "the web framework's route-not-found answer" : `a ${answer.kind} answer`}, not the partner API's own${said}`,
          status,
          `this is not the API's "not found" for an agent or customer: check SERVICE_PARTNER_API_URL (${this.options.baseUrl}); it is the API's base URL, without /api/v1`,
        );
      }
      const words = answer.message.replace(/\S*\/\S*/g, ' '); // paths name agents and customers too
      // SPEC 7: a 404 on mapping means "agent not found", whatever the API's words, unless
      // they speak of the customer only (SPEC 7 names a wrong customer id as another way
      // for mapping to fail, with no status: that hint goes with every agent-not-found).
      if (operation.name === 'map-agent' && (AGENT_WORD.test(words) || !CUSTOMER_WORD.test(words))) {
        return new AgentNotFoundError(
          `agent not found: ${operation.subject} is not imported into the partner account (HTTP 404)${said}`,
          status,
          'import the agent into the partner account on that voice platform first, and check --agent-id and --provider; a --customer-id that onboarding did not return makes mapping fail too (the API gives no status of its own for that): check it is the id onboarding printed',
        );
      }
      if (operation.name !== 'onboard' && CUSTOMER_WORD.test(words)) {
        return new PartnerApiError(
          `${operation.subject}: the partner API answered 404${said}`,
          status,
          'pass the `id` that onboarding returned as --customer-id',
        );
      }
    }
    if ((status === 400 || status === 409) && EMAIL_EXISTS.test(answer.message)) {
      return operation.name === 'onboard'
        ? new EmailExistsError(
            `cannot onboard ${operation.subject}: the e-mail already exists (HTTP ${status})${said}`,
            status,
            'the customer is already onboarded: use its existing id, or onboard with another e-mail',
          )
        : new EmailExistsError(
            `cannot add ${operation.subject}: the e-mail already exists (HTTP ${status})${said}`,
            status,
            'the member is probably already on the team: check it in the portal',
          );
    }
    if (operation.name === 'add-member' && status >= 400 && status < 500 && speaksOfMemberLimit(answer.message)) {
      return new TeamLimitError(
        `cannot add ${operation.subject}: the customer's team-member limit (maxTeamMembers) is reached (HTTP ${status})${said}`,
        status,
        "raise the customer's maxTeamMembers in the portal or remove a member, then re-run the command",
      );
    }
    return new PartnerApiError(`${operation.name}: the partner API refused the request with HTTP ${status}${said || ' (no message)'}`, status);
  }

  /** For a call that must not be repeated blindly, what to check first. */
  private mayHaveAppliedHint(operation: Operation): string | undefined {
    if (operation.name === 'onboard') {
      return `the customer MAY have been created: look for ${operation.subject.replace('customer ', '')} in the portal's customer list before onboarding again (onboarding is not retried automatically)`;
    }
    if (operation.name === 'add-member') {
      return `the member MAY have been added: check the customer's team in the portal before re-running add-member`;
    }
    return undefined;
  }

  /**
   * The server's own words, verbatim but for the key (masked): the message field of a
   * JSON error body in whatever shape it uses, else the whole body; a long non-JSON page
   * is cut (an HTML error page says nothing more after its first lines).
   */
  private serverAnswer(response: ResponseOutcome): ServerAnswer {
    const text = response.text;
    let parsed: unknown;
    let json = false;
    try {
      parsed = JSON.parse(text);
      json = /json/i.test(response.contentType) || typeof parsed === 'object';
    } catch {
      // Not JSON: the raw text is the message.
    }
    if (json) {
      const picked = pickMessage(parsed);
      return { json: true, kind: 'JSON', message: this.redactor.redact(picked ?? text.trim()) };
    }
    const kind = /html/i.test(response.contentType) || /^\s*<(!doctype|html)/i.test(text) ? 'HTML' : text.trim() ? 'plain-text' : 'empty';
    return { json: false, kind, message: this.excerpt(text.trim()) };
  }

  private excerpt(text: string): string {
    const redacted = this.redactor.redact(text);
    return redacted.length > 300 ? `${redacted.slice(0, 300)}… (${redacted.length - 300} more characters)` : redacted;
  }

  private debug(line: string): void {
    this.options.log?.debug(this.redactor.redact(line));
  }

  private warn(line: string): void {
    this.options.log?.warn(this.redactor.redact(line));
  }
}

interface ResponseOutcome {
  kind: 'response';
  status: number;
  text: string;
  contentType: string;
  location: string | undefined;
  /** The Retry-After header as sent, and in milliseconds when it could be read. */
  retryAfter: string | undefined;
  retryAfterMs: number | undefined;
}

interface ServerAnswer {
  /** The body is JSON (the API's own error shape). */
  json: boolean;
  kind: 'JSON' | 'HTML' | 'plain-text' | 'empty';
  message: string;
}

type AttemptOutcome =
  | ResponseOutcome
  | { kind: 'timeout' }
  | { kind: 'network'; failure: NetworkFailure };

interface NetworkFailure {
  error: unknown;
  code: string | undefined;
  /** The connection was never established, so the server cannot have seen the request. */
  neverSent: boolean;
  /** Worth another try: a refused connection or a DNS hiccup, unlike an unknown host or a bad certificate. */
  transient: boolean;
  description: string;
}

/** The server's certificate was refused: the TLS handshake failed, so no byte of the request left. */
const CERTIFICATE_CODES = [
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_REVOKED',
];
/**
 * Failures before a connection exists (or before TLS let the request through): nothing
 * of the request was written, so the server cannot have acted on it.
 */
const NEVER_SENT_CODES = new Set(['ECONNREFUSED', 'EAI_AGAIN', 'ENOTFOUND', 'ENETUNREACH', 'EHOSTUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT', 'ERR_INVALID_URL', ...CERTIFICATE_CODES]);
/** Permanent until someone fixes the URL or the certificate. */
const PERMANENT_CODES = new Set(['ENOTFOUND', 'ERR_INVALID_URL', ...CERTIFICATE_CODES]);
/** fetch refuses some ports (the WHATWG "bad port" list) before it connects: an error without a code. */
const REFUSED_BEFORE_CONNECTING = /^bad port$/;

/** undici wraps the socket error as `TypeError('fetch failed', { cause })`, sometimes in an AggregateError (one per address). */
export function classifyNetworkError(error: unknown): NetworkFailure {
  const codes: string[] = [];
  const messages: string[] = [];
  const visit = (value: unknown, depth: number) => {
    if (!value || typeof value !== 'object' || depth > 5) return;
    const { code, message, cause, errors } = value as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string') codes.push(code);
    if (typeof message === 'string' && message && message !== 'fetch failed') messages.push(message);
    visit(cause, depth + 1);
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
  };
  visit(error, 0);
  const refusedByFetch = codes.length === 0 && messages.some((message) => REFUSED_BEFORE_CONNECTING.test(message));
  const neverSent = refusedByFetch || (codes.length > 0 && codes.every((code) => NEVER_SENT_CODES.has(code)));
  const transient = !refusedByFetch && !codes.some((code) => PERMANENT_CODES.has(code));
  const code = codes[0];
  // Node's advice to start it with --use-system-ca is no advice for this binary.
  const message = messages[0]?.replace(/; if the root CA is installed locally, try running Node\.js with --use-system-ca/, '');
  const description = code ? `${code}${message && !message.includes(code) ? ` (${message})` : ''}` : (message ?? 'network error');
  return { error, code, neverSent, transient, description };
}

/** SPEC 7: 400 "email already exists"; the same words in other orders, about an e-mail. */
const EMAIL_EXISTS = /\be-?mail\b.*\b(already|exists|taken|in use|registered|duplicate)|\b(already (exists|registered|in use|taken)|duplicate)\b.*\be-?mail\b/i;
/** A web framework's own 404 for a path it has no route for (Express, Fastify, ...). */
const ROUTE_404 = /\broute\b|\bcannot (post|get)\b|\bno (such )?(route|endpoint|handler)\b/i;
const AGENT_WORD = /\bagents?\b/i;
const CUSTOMER_WORD = /\bcustomers?\b/i;

/** A message about a maximum or limit of (team) members, whatever the wording. */
function speaksOfMemberLimit(message: string): boolean {
  if (/maxTeamMembers|max_team_members/i.test(message)) return true;
  return /\bmembers?\b|\bseats?\b|\busers?\b/i.test(message) && /\b(max(imum)?|limit(s|ed)?|too many|at most|exceed(s|ed)?|full|cap(acity)?)\b/i.test(message);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeRetryAfter(header: string, ms: number | undefined): string {
  return ms === undefined ? `"${header}"` : formatSeconds(ms);
}

function pickMessage(body: unknown): string | undefined {
  if (typeof body === 'string') return body;
  if (!body || typeof body !== 'object') return undefined;
  const record = body as Record<string, unknown>;
  for (const key of ['message', 'error', 'detail', 'error_description', 'title']) {
    const value = record[key];
    if (typeof value === 'string' && value) return value;
    if (value && typeof value === 'object') {
      const inner = pickMessage(value);
      if (inner) return inner;
    }
  }
  if (Array.isArray(record.errors)) return pickMessage(record.errors[0]);
  return undefined;
}

function parseSuccessBody(text: string): unknown {
  if (!text.trim()) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function parseRetryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(ms < 1000 ? 2 : 1))} s`;
}

export function apiKeyHint(portalApiKeysPage: string): string {
  return `create a key in ${portalApiKeysPage} (it starts with ${API_KEY_PREFIX}) and pass it in ${API_KEY_ENV} or with --api-key-file <path>`;
}

/**
 * The API key, from --api-key-file (a flag beats the environment) or SERVICE_PARTNER_API_KEY.
 * Never from argv: process arguments are readable by every user through /proc.
 * Problems with the key are exit 11, like a 401, so automation has one code to act on.
 */
export function resolveApiKey(input: {
  env: NodeJS.ProcessEnv;
  apiKeyFile?: string;
  portalApiKeysPage: string;
  readFile?: (path: string) => string;
  warn?: (line: string) => void;
}): string {
  let key: string | undefined;
  let source: string;
  if (input.apiKeyFile !== undefined) {
    source = `--api-key-file ${input.apiKeyFile}`;
    try {
      key = (input.readFile ?? ((path) => fs.readFileSync(path, 'utf8')))(input.apiKeyFile).trim();
      warnIfShared(input.apiKeyFile, input.warn);
    } catch (error) {
      throw new UsageError(`cannot read the API key file ${input.apiKeyFile}: ${fileErrorText(error)}`, 'pass a readable file holding only the key (mode 0600); nothing was sent to the partner API');
    }
  } else {
    source = API_KEY_ENV;
    key = input.env[API_KEY_ENV]?.trim();
  }
  if (!key) {
    throw new UnauthorizedError(`no partner API key: ${source} is empty or unset`, undefined, apiKeyHint(input.portalApiKeysPage));
  }
  if (!key.startsWith(API_KEY_PREFIX) || !/^[\x21-\x7e]+$/.test(key)) {
    throw new UnauthorizedError(
      `the partner API key from ${source} is not a partner key: it must start with ${API_KEY_PREFIX} and hold no spaces`,
      undefined,
      apiKeyHint(input.portalApiKeysPage),
    );
  }
  return key;
}

function warnIfShared(path: string, warn: ((line: string) => void) | undefined): void {
  if (!warn) return;
  try {
    const mode = fs.statSync(path).mode;
    if (mode & 0o077) warn(`warning: ${path} is readable by other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  } catch {
    // A file we could read but not stat (a pipe, /dev/fd/N) has no mode worth reporting.
  }
}
