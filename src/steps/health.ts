import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { waitProgress } from '../pipeline/progress.js';
import type { Step } from '../pipeline/step.js';
import { GATEWAY_PORT } from '../layout.js';

export function healthUrl(host: Host): string {
  // SERVICE_HEALTH_URL exists for sandbox tests, whose stand-in gateway cannot own 18789.
  return host.env.SERVICE_HEALTH_URL || `http://127.0.0.1:${GATEWAY_PORT}/healthz`;
}

/**
 * How long a one-shot verdict (status, gateway status, doctor) waits for /healthz: a
 * busy gateway (starting its sidecars, a loaded small server) can take seconds to answer,
 * and one slow answer must not read as "down". Polling loops use the short default.
 */
export const HEALTH_VERDICT_TIMEOUT_MS = 10_000;

export async function probeHealth(host: Host, timeoutMs = 3000): Promise<{ ok: boolean; detail: string }> {
  try {
    const res = await host.net.request(healthUrl(host), { timeoutMs });
    return { ok: res.status === 200, detail: `HTTP ${res.status} ${res.body.trim().slice(0, 120)}` };
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
}

/** The gateway answers /healthz (it takes 10-20 s after a (re)start on a small server). */
export const healthStep: Step = {
  id: 'health',
  title: 'Health check (gateway /healthz)',
  needs: ['gateway-service'],
  speculative: false,
  skip: ({ options }) => (options.check ? 'check mode: nothing was started' : undefined),
  async check(ctx) {
    const { host } = ctx;
    const started = Date.now();
    const limitMs = Number(host.env.SERVICE_HEALTH_TIMEOUT_MS ?? 120_000);
    let last = await probeHealth(host);
    while (!last.ok && Date.now() < started + limitMs) {
      ctx.progress(`waiting for ${healthUrl(host)}: ${waitProgress(Date.now() - started, limitMs)} (${last.detail})`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      last = await probeHealth(host);
    }
    if (!last.ok) {
      throw new DeployError(`the gateway does not answer ${healthUrl(host)}: ${last.detail}`, 'see `service-deploy gateway logs`, or run `service-deploy doctor`');
    }
    return { changes: [] };
  },
  async apply() {},
};
