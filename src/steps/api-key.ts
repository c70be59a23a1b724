import type { Host } from '../host/index.js';
import { placeholderEndpointHint } from '../input.js';
import type { ServiceProfile } from '../profile.js';

/**
 * Whether the service's AI gateway takes the service API key (SPEC 1.1, 5.1 rule 4: the
 * key the install uses needs AI Gateway scope). One read-only call, the models list of
 * the OpenAI-style API the gateway serves (`GET {aiGatewayUrl}/models`), which costs the
 * partner nothing: the answer's status is all that is read.
 *
 * - 401/403: the key is refused (wrong key, or no AI Gateway scope): preflight refuses
 *   the install before anything changes;
 * - anything else (a 404 from a gateway without the models list, a 5xx, no answer): the
 *   key could not be confirmed either way, so preflight warns and goes on; the first
 *   chat would tell.
 *
 * The key travels only in the Authorization header of this one request (never in a
 * process argument); the host's redactor masks it in every log line.
 */
export type ApiKeyVerdict = { status: 'accepted' } | { status: 'rejected'; http: number } | { status: 'unconfirmed'; why: string; hint?: string };

/** How long the models list may take: a preflight waits for it. */
export const API_KEY_CHECK_TIMEOUT_MS = 15_000;

export async function apiKeyVerdict(host: Host, profile: ServiceProfile, apiKey: string): Promise<ApiKeyVerdict> {
  const url = `${profile.aiGatewayUrl}/models`;
  let status: number;
  try {
    ({ status } = await host.net.request(url, {
      method: 'GET',
      timeoutMs: API_KEY_CHECK_TIMEOUT_MS,
      headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json' },
      noRedirect: true,
    }));
  } catch (error) {
    return { status: 'unconfirmed', why: `no answer from ${url}: ${(error as Error).message}`, hint: placeholderEndpointHint(profile.aiGatewayUrl, 'SERVICE_AI_GATEWAY_URL') };
  }
  if (status === 401 || status === 403) return { status: 'rejected', http: status };
  if (status >= 200 && status < 300) return { status: 'accepted' };
  return { status: 'unconfirmed', why: `${url} answered HTTP ${status}` };
}

/** The refusal, naming where keys are made and the scope they need. */
export function rejectedApiKeyMessage(verdict: { http: number }, profile: ServiceProfile): string {
  return (
    `the service's AI gateway refused the service API key (HTTP ${verdict.http} on ${profile.aiGatewayUrl}/models): ` +
    `the install needs a key with AI Gateway scope: create one (or give this one that scope) in ${profile.portalApiKeysPage}, then run again with it`
  );
}

/** The warning when the key could not be confirmed: the install goes on. */
export function unconfirmedApiKeyMessage(verdict: { why: string; hint?: string }): string {
  return `could not confirm the service API key with the AI gateway (${verdict.why}); going on: the first chat will tell${verdict.hint ? ` (${verdict.hint})` : ''}`;
}
