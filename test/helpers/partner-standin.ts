import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback stand-in for the partner API that follows SPEC 4.3, 5.1, 7 and 8:
 * - every request must carry `Content-Type: application/json` (else 415) and a known
 *   `X-API-Key` (else 401);
 * - onboarding keeps a customer store with unique e-mails (400 "email already exists");
 * - mapping needs an agent imported for that provider (else 404 "agent not found") and a
 *   known customer (else 404 "customer not found"); mapping again is idempotent;
 * - team members are capped by the customer's maxTeamMembers. The spec gives no status
 *   for that; this stand-in answers 400 with a message naming maxTeamMembers (the spec's
 *   other business-rule refusal, "email already exists", is also 400); `teamLimitStatus`
 *   changes the status so tests can show the client does not depend on it.
 * Faults are scripted with `failNext` (a status, before or after the work is done) and
 * `delayNext`; every request is recorded.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  body: unknown;
  status: number;
}

export interface Customer {
  id: string;
  body: Record<string, any>;
  members: Array<{ email: string; name: string; role: string }>;
  maxTeamMembers: number;
}

interface Fault {
  count: number;
  status: number;
  /** `after`: the work is done, then the answer is replaced (a gateway failing on the way back). */
  when: 'before' | 'after';
  path?: RegExp;
  body?: unknown;
  /** Sent as is instead of JSON (an HTML page, a route 404), with `headers`. */
  raw?: string;
  headers?: Record<string, string>;
}

interface Delay {
  count: number;
  ms: number;
  path?: RegExp;
  /** Answer only once this settles (holdNext). */
  until?: Promise<void>;
}

export interface StandinOptions {
  apiKeys?: string[];
  voiceProviders?: [string, string];
  /** provider -> agent ids imported into the partner's account. */
  importedAgents?: Record<string, string[]>;
  maxTeamMembers?: number;
  teamLimitStatus?: number;
}

export const STANDIN_KEY = 'pkt_test_5f2c9a71e3b84d06a1c7';

export class PartnerStandin {
  readonly requests: RecordedRequest[] = [];
  readonly customers = new Map<string, Customer>();
  /** `${provider}/${agentId}` -> { customerId, profitMultiplier }. */
  readonly mappings = new Map<string, { customerId: string; profitMultiplier: number }>();
  private readonly faults: Fault[] = [];
  private readonly delays: Delay[] = [];
  private readonly server: http.Server;
  private readonly apiKeys: Set<string>;
  private readonly voiceProviders: [string, string];
  private readonly importedAgents: Record<string, string[]>;
  private nextId = 1;
  url = '';

  constructor(private readonly options: StandinOptions = {}) {
    this.apiKeys = new Set(options.apiKeys ?? [STANDIN_KEY]);
    this.voiceProviders = options.voiceProviders ?? ['voice-one', 'voice-two'];
    this.importedAgents = options.importedAgents ?? { 'voice-one': ['agent-1', 'agent-2'], 'voice-two': ['vt-agent-9'] };
    this.server = http.createServer((request, response) => void this.handle(request, response));
  }

  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  failNext(fault: Partial<Fault> & { count?: number }): void {
    this.faults.push({ count: 1, status: 503, when: 'before', ...fault });
  }

  delayNext(ms: number, options: { count?: number; path?: RegExp } = {}): void {
    this.delays.push({ ms, count: options.count ?? 1, path: options.path });
  }

  /** Holds the next answer until the returned function is called (no fixed delay). */
  holdNext(options: { path?: RegExp } = {}): () => void {
    let release!: () => void;
    const until = new Promise<void>((resolve) => (release = resolve));
    this.delays.push({ ms: 0, count: 1, path: options.path, until });
    return release;
  }

  /** Imports an agent into the partner's account, as the portal would. */
  importAgent(provider: string, agentId: string): void {
    (this.importedAgents[provider] ??= []).push(agentId);
  }

  requestsTo(path: RegExp): RecordedRequest[] {
    return this.requests.filter((request) => path.test(request.path));
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const path = request.url ?? '';
    const record: RecordedRequest = { method: request.method ?? '', path, headers: request.headers, rawBody, body: undefined, status: 0 };
    this.requests.push(record);

    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      if (response.destroyed) return;
      response.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      response.end(JSON.stringify(body));
    };

    const delay = this.take(this.delays, path);
    if (delay?.until) await delay.until;
    else if (delay) await new Promise((resolve) => setTimeout(resolve, delay.ms));

    const fault = this.take(this.faults, path);
    const faulty = (fallback: unknown) => {
      if (fault!.raw === undefined) return reply(fault!.status, fault!.body ?? fallback, fault!.headers);
      record.status = fault!.status;
      response.writeHead(fault!.status, { 'Content-Type': 'text/html', ...fault!.headers });
      response.end(fault!.raw);
    };
    if (fault?.when === 'before') return faulty({ message: 'service unavailable' });

    const [status, body] = this.route(request, path, rawBody, record);
    if (fault?.when === 'after') return faulty({ message: 'bad gateway' });
    reply(status, body);
  }

  private take<T extends { count: number; path?: RegExp }>(list: T[], path: string): T | undefined {
    const index = list.findIndex((item) => item.count > 0 && (!item.path || item.path.test(path)));
    if (index < 0) return undefined;
    const item = list[index]!;
    item.count -= 1;
    if (item.count === 0) list.splice(index, 1);
    return item;
  }

  private route(request: http.IncomingMessage, path: string, rawBody: string, record: RecordedRequest): [number, unknown] {
    if (!this.apiKeys.has(String(request.headers['x-api-key'] ?? ''))) {
      return [401, { error: 'unauthorized', message: 'missing or invalid API key' }];
    }
    if (request.method !== 'POST') return [405, { message: 'method not allowed' }];
    if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) {
      return [415, { message: 'Content-Type must be application/json' }];
    }
    let body: any;
    try {
      body = JSON.parse(rawBody);
    } catch {
      return [400, { message: 'body is not JSON' }];
    }
    record.body = body;

    if (path === '/api/v1/mcp/customers/onboard') return this.onboard(body);
    const map = /^\/api\/v1\/mcp\/([a-z0-9-]+)-agents\/([^/]+)\/map-customer$/.exec(path);
    if (map && this.voiceProviders.includes(map[1]!)) return this.map(map[1]!, decodeURIComponent(map[2]!), body);
    const team = /^\/api\/v1\/mcp\/customers\/([^/]+)\/team-members$/.exec(path);
    if (team) return this.addMember(decodeURIComponent(team[1]!), body);
    return [404, { message: 'not found' }];
  }

  private onboard(body: any): [number, unknown] {
    const email = body?.basic?.email;
    const missing = ['email', 'firstName', 'lastName', 'businessPhone'].filter((field) => typeof body?.basic?.[field] !== 'string');
    if (missing.length || typeof body?.business?.companyName !== 'string') {
      return [400, { message: `missing fields: ${[...missing, 'companyName'].join(', ')}` }];
    }
    if (![...this.customers.values()].every((customer) => customer.body.basic.email.toLowerCase() !== email.toLowerCase())) {
      return [400, { message: 'email already exists' }];
    }
    const id = `cus_${String(this.nextId++).padStart(4, '0')}`;
    this.customers.set(id, { id, body, members: [], maxTeamMembers: this.options.maxTeamMembers ?? 3 });
    return [201, { id, email, portalInviteSent: body.allowPortalAccess === true }];
  }

  private map(provider: string, agentId: string, body: any): [number, unknown] {
    if (!this.importedAgents[provider]?.includes(agentId)) return [404, { message: 'agent not found' }];
    if (!this.customers.has(body?.customerId)) return [404, { message: 'customer not found' }];
    if (typeof body.profitMultiplier !== 'number' || !(body.profitMultiplier > 0)) {
      return [400, { message: 'profitMultiplier must be a positive number' }];
    }
    this.mappings.set(`${provider}/${agentId}`, { customerId: body.customerId, profitMultiplier: body.profitMultiplier });
    return [200, { agentId, provider, customerId: body.customerId, profitMultiplier: body.profitMultiplier }];
  }

  private addMember(customerId: string, body: any): [number, unknown] {
    const customer = this.customers.get(customerId);
    if (!customer) return [404, { message: 'customer not found' }];
    if (typeof body?.email !== 'string' || typeof body?.name !== 'string' || typeof body?.role !== 'string') {
      return [400, { message: 'email, name and role are required' }];
    }
    if (customer.members.some((member) => member.email === body.email)) return [400, { message: 'email already exists' }];
    if (customer.members.length >= customer.maxTeamMembers) {
      return [
        this.options.teamLimitStatus ?? 400,
        { message: `team member limit reached (maxTeamMembers: ${customer.maxTeamMembers})` },
      ];
    }
    customer.members.push({ email: body.email, name: body.name, role: body.role });
    return [201, { customerId, email: body.email, role: body.role }];
  }
}
