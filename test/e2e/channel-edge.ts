// The channel edge on the real server (issue 18, "every way in passes every layer"):
// the mesh's `tailscale serve` publishes the whole gateway (18789), so a signed chat
// sent there, with the knock even, must find no route; the same request through nginx
// on 18790 is answered. And the connection limits: the e2e runs every command in the
// container without CAP_NET_ADMIN (the container shares this machine's network), as a
// container VPS would, so the install skips the nftables table with its reason and
// doctor warns. Called from server.e2e.ts.
import fs from 'node:fs';
import { expect } from 'vitest';
import { CHANNEL_PATH, signRequest } from '../../src/channel/protocol.js';
import { CHANNEL_PORT, GATEWAY_PORT, type InstallRun, type World } from './harness.js';

interface Answer {
  status?: number;
  type?: string;
  text: string;
}

/**
 * A POST sent from inside the server (the gateway listens on the container's own
 * loopback, in its own network namespace: the host cannot reach 18789). Headers and
 * body go to curl in 0600 files, never in its arguments (they carry the knock).
 */
async function post(world: World, scheme: 'http' | 'https', port: number, path: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const c = world.container;
  const [headerFile, bodyFile, answerFile] = ['/root/e2e/edge-request.headers', '/root/e2e/edge-request.body', '/root/e2e/edge-answer.body'];
  const lines = Object.entries({ 'content-type': 'application/json', ...headers }).map(([k, v]) => `${k}: ${v}\n`).join('');
  fs.writeFileSync(c.hostPath(headerFile), lines, { mode: 0o600 });
  fs.writeFileSync(c.hostPath(bodyFile), body, { mode: 0o600 });
  try {
    const r = await c.sh(`curl -sk -o ${answerFile} -w '%{http_code} %{content_type}' -X POST -H @${headerFile} --data-binary @${bodyFile} --max-time 120 ${scheme}://127.0.0.1:${port}${path}`, { timeoutMs: 150_000 });
    const [code, type] = r.stdout.trim().split(' ');
    const text = fs.existsSync(c.hostPath(answerFile)) ? fs.readFileSync(c.hostPath(answerFile), 'utf8') : '';
    return { status: code && code !== '000' ? Number(code) : undefined, type, text };
  } finally {
    for (const f of [headerFile, bodyFile, answerFile]) fs.rmSync(c.hostPath(f), { force: true });
  }
}

/** A signed chat straight to the gateway (as `tailscale serve` forwards it) is not answered by the route; through nginx it is. */
export async function meshPathRefusedEdgePathWorks(world: World): Promise<{ mesh: number | undefined; edge: number | undefined }> {
  const env = world.channelEnv();
  const token = env.SERVICE_CHANNEL_TOKEN!;
  const knock = env.SERVICE_CHANNEL_KNOCK!;
  const edge = env.SERVICE_CHANNEL_EDGE;
  expect(edge, 'channel.env has SERVICE_CHANNEL_EDGE').toMatch(/^\S{24,}$/);
  world.secrets.channelEdge = edge!;
  const body = JSON.stringify({ message: 'through which door?' });
  const serve = { 'x-forwarded-for': '100.64.0.9', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'openclaw-acme.tailnet.ts.net' };
  const absent = await post(world, 'http', GATEWAY_PORT, '/service-channel/not-a-route', { ...serve, 'x-service-gateway': knock, ...signRequest({ token, body }) }, body);
  const mesh = await post(world, 'http', GATEWAY_PORT, CHANNEL_PATH, { ...serve, 'x-service-gateway': knock, ...signRequest({ token, body }) }, body);
  expect({ status: mesh.status, text: mesh.text }, 'the chat route straight on the gateway answers like a path no route claims').toEqual({ status: absent.status, text: absent.text });
  expect(mesh.status).not.toBe(200);
  const through = await post(world, 'https', CHANNEL_PORT, CHANNEL_PATH, { 'x-service-gateway': knock, ...signRequest({ token, body }) }, body);
  expect(through.status, through.text).toBe(200);
  expect(JSON.parse(through.text).reply).toContain('through which door?');
  return { mesh: mesh.status, edge: through.status };
}

/** The install in a container without CAP_NET_ADMIN: channel-limits skipped with the reason, the other channel steps ran. */
export function limitsSkippedInContainer(run: InstallRun): string {
  const step = (run.json?.steps ?? []).find((s: { id: string }) => s.id === 'channel-limits');
  expect(step?.status, JSON.stringify(step)).toBe('skipped');
  expect(step.reason).toMatch(/nftables cannot be used on this server .*Operation not permitted.*doctor warns/);
  return step.reason;
}

/** doctor warns about the missing limits (and does not fail); its message names why. */
export function doctorWarnsLimits(doctor: any): void {
  const check = (doctor?.checks ?? []).find((c: { id: string }) => c.id === 'channel-limits');
  expect(check?.status, JSON.stringify(check)).toBe('warn');
  expect(check.message).toMatch(/nothing limits one address's connections to port 18790 before TLS/);
}
