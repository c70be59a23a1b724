// A browser on the mesh pairs with the gateway (docs/quickstart.md section 5), for real,
// and what it keeps and sends afterwards is read from the browser itself.
//
// The device is Chromium, the very package the deployment installs on the server for its
// agent (templates/components.json), started from the host's network namespace: the
// container's filesystem and processes (nsenter -m -p -u -i), the host's network, so it
// connects from the host's address on the container network, a machine apart. It is
// driven over the DevTools protocol (cdp.ts) and types the gateway token (the service
// API key, SPEC 2.7) into the Control UI's own login page, never into argv.
//
// It reaches the gateway the way a mesh device does: https://<the server's mesh name>/,
// the name resolved to the server's address on the container network (standing in for
// its mesh address; Chromium's --host-resolver-rules, every other name unresolvable) and
// the stand-in certificate pinned by its key (--ignore-certificate-errors-spki-list)
// where a real mesh name has a public one. There `tailscale serve` (its stand-in,
// scripts/mesh-serve.mjs: the e2e's tailscale CLI only records the route) hands the
// request to the gateway's loopback port with the device's address in X-Forwarded-For.
// The gateway sees a proxied, non-loopback client with a `.ts.net` origin: no silent
// local approval, the device must be approved by hand (the pinned OpenClaw's
// web/control-ui/connect-and-pair.md).
//
// What the pinned release (OpenClaw 2026.9.6's Control UI) was seen to do, and what the
// functions below assert, so a new pin that changes it fails here (docs/security.md,
// "The gateway UI in a paired browser"):
// - before the approval the page keeps the key in memory only (re-sent as
//   `connect.auth.token` and `.password` on each retry); localStorage holds the
//   browser's device identity (its Ed25519 key pair);
// - once approved it connects by itself and keeps the key in the tab's sessionStorage
//   (`openclaw.control.token.v1:<gateway URL>`) and the device token the gateway issued
//   in localStorage (`openclaw.device.auth.v1:<gateway URL>`);
// - a later visit (another tab, the browser restarted) sends `connect.auth.deviceToken`
//   alone, and its HTTP requests `Authorization: Bearer <device token>`: the key is not
//   needed, and after the doc's "close the tab, quit the browser" it is nowhere in the
//   browser, storage or profile on disk;
// - the device token is admin (`operator.admin`): through it the page can read the key
//   back from the gateway (`secrets.resolve`);
// - a new service API key (install re-run) makes every device token fail; the paired
//   browser asks for the gateway token once and is back without a new approval;
// - `service-deploy devices remove` revokes it: its device token is refused, and with the
//   key typed again it is a new pairing request.
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { execa } from 'execa';
import { expect } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { budget, waitUntil } from '../helpers/budget.js';
import { Cdp, Tab } from './cdp.js';
import { GATEWAY_PORT, log, seconds, type World } from './harness.js';

const SERVE_SCRIPT = path.join(REPO, 'test', 'e2e', 'scripts', 'mesh-serve.mjs');
/** What `tailscale serve --bg` publishes: HTTPS on 443 of the server's mesh address. */
const SERVE_PORT = 443;
const COMPONENTS = JSON.parse(fs.readFileSync(path.join(REPO, 'templates', 'components.json'), 'utf8'));
/** The browser the deployment installs on a Debian server (the e2e's servers are Debian). */
const CHROMIUM: string = COMPONENTS.browser.debian.executable;
/** The device's profile and home, on the server's disk (the browser runs on its filesystem). */
const DEVICE_DIR = '/root/e2e/mesh-device';
/** The pinned Control UI's login page: its secret field and Connect button. */
const LOGIN_FIELD = '#login-gate-credential';
const CONNECT_BUTTON = 'button.login-gate__connect';
/** Its storage keys (per gateway URL): the key kept for the tab, the device token, the device's key pair. */
const TOKEN_ENTRY = 'openclaw.control.token.v1:';
const DEVICE_AUTH_ENTRY = 'openclaw.device.auth.v1:';
const IDENTITY_ENTRY = 'openclaw-device-identity-v1';

/** The mesh path: the stand-in certificate for the server's mesh name, and `tailscale serve` in front of the gateway. */
interface Mesh {
  name: string;
  url: string;
  /** base64 SHA-256 of the certificate's public key, the pin Chromium is given. */
  spki: string;
  close(): Promise<void>;
}

async function openMesh(world: World): Promise<Mesh> {
  const net = world.server.net;
  if (!net) throw new Error("pairing a device needs the container's own network (the server scenario has one)");
  const dir = path.join(world.work, 'mesh-serve');
  const key = path.join(dir, 'serve-key.pem');
  const cert = path.join(dir, 'serve-cert.pem');
  // The mesh name the server has (the mesh client's own status), for the certificate.
  const status = await world.container.ok('tailscale status --json');
  const name = String(JSON.parse(status).Self?.DNSName ?? '').replace(/\.$/, '');
  expect(name, 'the mesh client names the server').toMatch(/\.ts\.net$/);
  if (!fs.existsSync(cert)) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    await execa('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-keyout', key, '-out', cert, '-subj', `/CN=${name}`, '-addext', `subjectAltName=DNS:${name}`]);
  }
  const spki = createHash('sha256').update(new X509Certificate(fs.readFileSync(cert)).publicKey.export({ type: 'spki', format: 'der' })).digest('base64');
  const serve = await startServe(net.path, net.address, key, cert);
  return {
    name,
    url: `https://${name}/`,
    spki,
    close: async () => {
      serve.stdin?.end();
      serve.kill('SIGTERM');
      await new Promise((resolve) => (serve.exitCode !== null || serve.signalCode !== null ? resolve(undefined) : serve.once('exit', resolve)));
    },
  };
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
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the mesh serve stand-in did not listen on ${address}:${SERVE_PORT} within 30 s: ${stderr}`)), budget(30_000))));
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

/** One `connect` of the page's gateway WebSocket and the gateway's answer. */
export interface Connect {
  /** The fields of connect.params.auth the page sent (token, password, deviceToken...). */
  authFields: string[];
  auth: Record<string, string>;
  ok: boolean;
  /** error.details.code when refused (PAIRING_REQUIRED, AUTH_TOKEN_MISMATCH, AUTH_DEVICE_TOKEN_MISMATCH...). */
  code?: string;
  requestId?: string;
  /** hello-ok.auth.deviceToken */
  deviceToken?: string;
}

type Storage = { local: Record<string, string>; session: Record<string, string> };

/** A tab on the gateway UI, with what it sends and receives recorded. */
class Visit {
  private readonly frames: Array<{ sent: boolean; message: any }> = [];
  /** Authorization header values of the page's HTTP requests. */
  readonly authorizations: string[] = [];
  private consumed = 0;

  constructor(readonly tab: Tab) {
    tab.on((event) => {
      if (event.method === 'Network.webSocketFrameSent' || event.method === 'Network.webSocketFrameReceived') {
        try {
          this.frames.push({ sent: event.method.endsWith('Sent'), message: JSON.parse(event.params.response.payloadData) });
        } catch {
          // not JSON: not the gateway protocol
        }
      }
      if (event.method === 'Network.requestWillBeSent') {
        const headers = event.params.request.headers as Record<string, string>;
        const value = Object.entries(headers).find(([k]) => k.toLowerCase() === 'authorization')?.[1];
        if (value) this.authorizations.push(value);
      }
    });
  }

  /** Every connect answered so far, in order. */
  connects(): Connect[] {
    const out: Connect[] = [];
    for (const f of this.frames) {
      if (!f.sent || f.message?.method !== 'connect') continue;
      const answer = this.frames.find((a) => !a.sent && a.message?.type === 'res' && a.message.id === f.message.id)?.message;
      if (!answer) continue;
      const auth = (f.message.params?.auth ?? {}) as Record<string, string>;
      out.push({
        authFields: Object.keys(auth).sort(),
        auth,
        ok: answer.ok === true,
        code: answer.error?.details?.code,
        requestId: answer.error?.details?.requestId,
        deviceToken: answer.payload?.auth?.deviceToken,
      });
    }
    return out;
  }

  /** The next answered connect (after the ones already returned) that `match` accepts. */
  async nextConnect(what: string, match: (c: Connect) => boolean, budgetMs = 90_000): Promise<Connect> {
    return waitUntil(what, () => {
      const all = this.connects();
      const hit = all.slice(this.consumed).findIndex(match);
      if (hit < 0) return undefined;
      this.consumed += hit + 1;
      return all[this.consumed - 1];
    }, { budgetMs, intervalMs: 250, lastSeen: () => JSON.stringify(this.connects().slice(-3).map(({ auth, deviceToken, ...c }) => c)) });
  }

  /** Types `secret` into the login page once it asks for the gateway token, and presses Connect. */
  async login(secret: string): Promise<void> {
    const find = (selector: string) => `(${DEEP_QUERY})(${JSON.stringify(selector)})`;
    await this.tab.waitFor(`!!${find(LOGIN_FIELD)}`, 'the page asking for the gateway token', budget(60_000));
    await this.tab.evaluate(`(() => { const f = ${find(LOGIN_FIELD)}; f.value = ''; f.dispatchEvent(new Event('input', { bubbles: true })); f.focus(); })()`);
    await this.tab.send('Input.insertText', { text: secret });
    await this.tab.evaluate(`${find(CONNECT_BUTTON)}.click()`);
  }

  async storage(): Promise<Storage> {
    return JSON.parse(await this.tab.evaluate<string>('JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } })'));
  }

  /** The page's own gateway client asks for the service API key (`secrets.resolve`, an operator.admin method). */
  async resolveServiceKey(): Promise<string[]> {
    return this.tab.evaluate<string[]>(`(async () => {
      const seen = new Set();
      const clients = [];
      const walk = (o, depth) => {
        if (!o || typeof o !== 'object' || seen.has(o) || depth > 5) return;
        seen.add(o);
        for (const k of Object.keys(o)) {
          let v; try { v = o[k]; } catch { continue; }
          if (v && typeof v === 'object') { if (/client/i.test(k) && typeof v.request === 'function') clients.push(v); walk(v, depth + 1); }
        }
      };
      walk(document.querySelector('openclaw-app'), 0);
      const errors = [];
      for (const c of clients) {
        try {
          const r = await c.request('secrets.resolve', { commandName: 'e2e-device-check', targetIds: ['models.providers.*.apiKey'] });
          return (r.assignments ?? []).map((a) => a.value);
        } catch (e) { errors.push(String(e && e.message || e)); }
      }
      throw new Error('no gateway client of the page answered secrets.resolve (' + clients.length + ' found): ' + errors.join('; '));
    })()`);
  }

  async close(): Promise<void> {
    await this.tab.close();
  }
}

/** document.querySelector through the shadow roots of the page's web components. */
const DEEP_QUERY = `(selector) => { const walk = (root) => { const hit = root.querySelector(selector); if (hit) return hit; for (const el of root.querySelectorAll('*')) if (el.shadowRoot) { const h = walk(el.shadowRoot); if (h) return h; } return null; }; return walk(document); }`;

/** How the device's Chromium starts: the server's filesystem and process namespace, the host's network. */
export const deviceBrowserCommand = {
  of(world: World, flags: string[], env: Record<string, string>): [string, string[], Record<string, string>] {
    return ['nsenter', ['-t', String(world.container.initPid), '-m', '-p', '-u', '-i', '-r', '-w', '--', CHROMIUM, ...flags], env];
  },
};

/** The device's Chromium: its own profile on the server's disk, the host's network. */
class DeviceBrowser {
  private constructor(
    private readonly cdp: Cdp,
    private readonly mesh: Mesh,
  ) {}

  static async launch(world: World, mesh: Mesh): Promise<DeviceBrowser> {
    const c = world.container;
    fs.mkdirSync(c.hostPath(`${DEVICE_DIR}/home`), { recursive: true, mode: 0o700 });
    const flags = [
      '--headless',
      // As root in a container: Chromium's own sandbox needs namespaces the container lacks; this browser is the test's device, not the agent's.
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-extensions',
      '--password-store=basic',
      `--user-data-dir=${DEVICE_DIR}/profile`,
      `--host-resolver-rules=MAP ${mesh.name} ${world.server.net!.address}, MAP * ~NOTFOUND`,
      `--ignore-certificate-errors-spki-list=${mesh.spki}`,
    ];
    const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: `${DEVICE_DIR}/home`, LANG: 'C.UTF-8' };
    const [command, args, environment] = deviceBrowserCommand.of(world, flags, env);
    const cdp = await Cdp.launch(command, args, { env: environment, timeoutMs: budget(60_000) });
    return new DeviceBrowser(cdp, mesh);
  }

  /** A new tab on the gateway UI. `freshContext`: storage of its own (another browser profile, in effect). */
  async visit(options: { freshContext?: boolean } = {}): Promise<Visit> {
    const tab = options.freshContext ? await Tab.open(this.cdp, (await this.cdp.send('Target.createBrowserContext')).browserContextId) : await Tab.open(this.cdp);
    await tab.send('Network.enable');
    const visit = new Visit(tab);
    await tab.goto(this.mesh.url, budget(60_000));
    return visit;
  }

  /** Quits the browser (its profile stays). */
  async quit(): Promise<void> {
    await this.cdp.close(budget(30_000));
  }
}

/** Which entries of the browser's storage hold one of `secrets` (entry names only). */
function entriesHolding(storage: Storage, secrets: string[]): string[] {
  const out: string[] = [];
  for (const [area, entries] of Object.entries(storage)) for (const [k, v] of Object.entries(entries)) if (secrets.some((s) => v.includes(s) || k.includes(s))) out.push(`${area}Storage ${k}`);
  return out;
}

/** Files of the device's profile that hold one of `secrets`, as text or as UTF-16 (how Chromium stores web storage). */
function profileFilesHolding(world: World, secrets: string[]): string[] {
  const root = world.container.hostPath(`${DEVICE_DIR}/profile`);
  const needles = secrets.flatMap((s) => [Buffer.from(s, 'utf8'), Buffer.from(s, 'utf16le')]);
  const hits: string[] = [];
  // A running browser removes cache entries while we read: a file or folder gone between
  // the listing and the read is no longer on disk (the e2e once failed on ENOENT here).
  const gone = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';
  const walk = (dir: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (error) {
      if (gone(error)) return;
      throw error;
    }
    for (const entry of entries) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.isFile()) {
        let bytes: Buffer;
        try {
          bytes = fs.readFileSync(file);
        } catch (error) {
          if (gone(error)) continue;
          throw error;
        }
        if (needles.some((n) => bytes.includes(n))) hits.push(path.relative(root, file));
      }
    }
  };
  walk(root);
  return hits;
}

/** A device being paired: its browser open on the gateway UI, waiting for approval. */
export interface MeshDevice {
  /** The request id the gateway gave the device (the page shows it too). */
  requestId: string;
  /** The browser's device id (its key pair's fingerprint, as the gateway records it). */
  deviceId: string;
  /** The address the device connects from (what the gateway records as remoteIp). */
  address: string;
  mesh: Mesh;
  browser: DeviceBrowser;
  visit: Visit;
  /** Quits the browser (its profile stays on the server for a later step) and closes the mesh path. */
  close(): Promise<void>;
}

/**
 * The device opens the gateway UI over the mesh, is asked for the gateway token, types
 * the service API key, and is refused pending approval. Returns the open device.
 */
export async function meshDeviceAsksToPair(world: World): Promise<MeshDevice> {
  const c = world.container;
  fs.rmSync(c.hostPath(DEVICE_DIR), { recursive: true, force: true });
  const mesh = await openMesh(world);
  let browser: DeviceBrowser | undefined;
  try {
    const t = Date.now();
    browser = await DeviceBrowser.launch(world, mesh);
    const visit = await browser.visit();
    await visit.login(world.secrets.apiKey!);
    const asked = await visit.nextConnect('the gateway to ask for the approval of the device', (x) => x.code === 'PAIRING_REQUIRED');
    expect(asked.authFields, 'the page sends the typed key as the gateway token').toContain('token');
    expect(asked.auth.token === world.secrets.apiKey, 'the token sent is the key typed').toBe(true);
    expect(asked.requestId, 'the refusal names the pairing request').toBeTruthy();
    const pending = await visit.storage();
    // Before the approval the page keeps the key in memory only; localStorage has the device's own key pair.
    expect(entriesHolding(pending, [world.secrets.apiKey!]), 'the key in the browser\'s storage before the approval').toEqual([]);
    const identity = JSON.parse(pending.local[IDENTITY_ENTRY] ?? '{}');
    expect(identity.deviceId, `the device identity in localStorage (${Object.keys(pending.local).join(', ')})`).toMatch(/^[0-9a-f]{64}$/);
    log(`mesh device (Chromium from the server's package, ${world.server.net!.hostAddress} -> ${mesh.url} -> serve -> 127.0.0.1:${GATEWAY_PORT}): asked for the gateway token, then refused: pairing request ${asked.requestId} (${seconds(Date.now() - t)})`);
    return {
      requestId: asked.requestId!,
      deviceId: identity.deviceId,
      address: world.server.net!.hostAddress,
      mesh,
      browser,
      visit,
      async close(this: MeshDevice) {
        await this.browser.quit().catch(() => undefined);
        await this.mesh.close();
      },
    };
  } catch (error) {
    await browser?.quit().catch(() => undefined);
    await mesh.close();
    throw error;
  }
}

/** What the paired browser keeps and sends (docs/security.md states it; the report carries it). */
export interface PairedBrowser {
  deviceId: string;
  /** From the approval to the page connected by itself. */
  connectedMs: number;
  /** Storage entries right after the approval, and which of them hold the key. */
  afterApproval: { localStorage: string[]; sessionStorage: string[]; holdingTheKey: string[] };
  /** After the doc's "close the tab, quit the browser": profile files still holding it (until the next start). */
  keyOnDiskAfterQuit: string[];
  /** The next visit (browser started again): what its connect sent, and where the key is. */
  laterVisit: { connectAuth: string[]; httpAuthorization: string; holdingTheKey: string[]; keyOnDisk: string[] };
  /** The device token's admin scope reads the key back from the gateway (secrets.resolve). */
  readsTheKeyBack: boolean;
}

/**
 * After `devices approve`: the device is listed as paired from its mesh address, the
 * page connects by itself, and then what the doc says to do (close the tab, quit the
 * browser) leaves the key nowhere in the browser while it signs in on its device token.
 */
export async function devicePaired(world: World, device: MeshDevice): Promise<PairedBrowser> {
  const approvedAt = Date.now();
  const key = world.secrets.apiKey!;
  // The page connects by itself once approved, still with the key.
  const connected = await device.visit.nextConnect('the page to connect by itself after the approval', (x) => x.ok);
  const connectedMs = Date.now() - approvedAt;
  expect(connected.auth.token === key, 'the page connected with the key').toBe(true);
  expect(connected.deviceToken, 'the gateway issued a device token').toBeTruthy();
  const list = await world.deploy('devices list --json');
  expect(list.exitCode, list.stderr).toBe(0);
  const paired = (list.json.paired as Array<Record<string, unknown>>).filter((d) => d.deviceId === device.deviceId);
  expect(paired.map((d) => d.remoteIp), `the browser paired from ${device.address} in ${JSON.stringify(list.json)}`).toEqual([device.address]);
  expect(paired[0]!.scopes, 'the scopes the browser asked for and was given').toContain('operator.admin');
  expect(list.json.pending.filter((p: Record<string, unknown>) => p.requestId === device.requestId)).toEqual([]);
  const kept = await device.visit.storage();
  const holding = entriesHolding(kept, [key]);
  // The tab keeps the key (sessionStorage), the browser the device token (localStorage).
  expect(holding, 'after the approval the key is kept for the tab, and only there').toEqual([expect.stringMatching(new RegExp(`^sessionStorage ${TOKEN_ENTRY.replace(/\./g, '\\.')}wss://`))]);
  const deviceAuth = Object.entries(kept.local).find(([k]) => k.startsWith(DEVICE_AUTH_ENTRY));
  expect(deviceAuth, `the device token in localStorage (${Object.keys(kept.local).join(', ')})`).toBeDefined();
  const deviceToken: string = JSON.parse(deviceAuth![1]).tokens?.operator?.token;
  expect(deviceToken).toBe(connected.deviceToken);
  log(`mesh device paired (${device.deviceId.slice(0, 12)}...): the page connected ${seconds(connectedMs)} after the approval; it keeps the key in ${holding.join(', ')} and its device token in localStorage ${deviceAuth![0]}`);

  // docs/quickstart.md: close the tab, quit the browser, open the address again.
  await device.visit.close();
  await device.browser.quit();
  const keyOnDiskAfterQuit = profileFilesHolding(world, [key]);
  const browser = await DeviceBrowser.launch(world, device.mesh);
  device.browser = browser;
  const later = await browser.visit();
  device.visit = later;
  const again = await later.nextConnect('the later visit to connect on its device token', (x) => x.ok || x.code !== undefined);
  expect(again, 'the later visit connects').toMatchObject({ ok: true });
  expect(again.authFields, 'what the later visit sends: its device token alone').toEqual(['deviceToken']);
  expect(again.auth.deviceToken === deviceToken, 'the device token it was given').toBe(true);
  await waitUntil('an HTTP request of the page with its credential', () => later.authorizations.length > 0, { budgetMs: 60_000, intervalMs: 250 });
  expect(later.authorizations.filter((a) => a.includes(key)), 'HTTP requests carrying the key').toEqual([]);
  expect(later.authorizations.every((a) => a === `Bearer ${deviceToken}`), 'HTTP requests carry the device token').toBe(true);
  const laterHolding = entriesHolding(await later.storage(), [key]);
  expect(laterHolding, 'the key in the browser\'s storage on the later visit').toEqual([]);
  const keyOnDisk = profileFilesHolding(world, [key]);
  expect(keyOnDisk, 'profile files holding the key after the browser started again').toEqual([]);
  // A fact of the runtime the docs state: the admin device token reads the key back.
  const resolved = await later.resolveServiceKey();
  const readsTheKeyBack = resolved.includes(key);
  expect(readsTheKeyBack, 'the paired browser reads the service API key back through secrets.resolve (docs/security.md says so)').toBe(true);
  log(`mesh device, later visit (browser restarted): connect sends ${again.authFields.join(', ')}, HTTP Authorization: Bearer <device token>; the key in storage: none, in the profile on disk: none (after quitting, before the restart: ${keyOnDiskAfterQuit.join(', ') || 'none'}); the device token reads the key back through secrets.resolve: ${readsTheKeyBack}`);
  return {
    deviceId: device.deviceId,
    connectedMs,
    afterApproval: { localStorage: Object.keys(kept.local).sort(), sessionStorage: Object.keys(kept.session).sort(), holdingTheKey: holding },
    keyOnDiskAfterQuit,
    laterVisit: { connectAuth: again.authFields, httpAuthorization: 'Bearer <device token>', holdingTheKey: laterHolding, keyOnDisk },
    readsTheKeyBack,
  };
}

/**
 * After the service API key was rotated (an install re-run with the new key): the paired
 * browser's device token is refused, the old key is refused at the gateway UI, the new
 * key typed once brings the browser back without a new approval; then
 * `service-deploy devices remove` revokes it. Runs the device (browser, mesh path) again
 * from the profile the quickstart left, and removes it at the end.
 */
export async function pairedBrowserAfterRotationThenRevoked(world: World, deviceId: string, oldKey: string): Promise<Record<string, unknown>> {
  const newKey = world.secrets.apiKey!;
  const mesh = await openMesh(world);
  let browser: DeviceBrowser | undefined;
  try {
    const t = Date.now();
    browser = await DeviceBrowser.launch(world, mesh);
    const visit = await browser.visit();
    const refused = await visit.nextConnect('the paired browser to connect after the rotation', (x) => x.ok || x.code !== undefined);
    expect(refused, 'the device token issued before the rotation').toMatchObject({ ok: false, code: 'AUTH_DEVICE_TOKEN_MISMATCH', authFields: ['deviceToken'] });

    // The old key at the gateway UI: a browser of its own (no pairing), the old key typed.
    const other = await browser.visit({ freshContext: true });
    await other.login(oldKey);
    const oldRefused = await other.nextConnect('the gateway to answer the old key', (x) => x.authFields.includes('token'));
    expect(oldRefused, 'the old key at the gateway UI').toMatchObject({ ok: false, code: 'AUTH_TOKEN_MISMATCH' });
    await other.close();

    // The paired browser: the new key once, and it is back, with no new approval.
    await visit.login(newKey);
    const back = await visit.nextConnect('the paired browser to connect with the new key', (x) => x.authFields.includes('token'));
    expect(back, 'the paired browser with the new key').toMatchObject({ ok: true });
    const list = await world.deploy('devices list --json');
    expect(list.json.pending, 'no new approval was needed').toEqual([]);
    expect(list.json.paired.map((d: { deviceId: string }) => d.deviceId)).toContain(deviceId);
    await visit.close();
    await browser.quit();
    browser = await DeviceBrowser.launch(world, mesh);
    const later = await browser.visit();
    const onToken = await later.nextConnect('the later visit after the rotation', (x) => x.ok || x.code !== undefined);
    expect(onToken).toMatchObject({ ok: true, authFields: ['deviceToken'] });
    expect(entriesHolding(await later.storage(), [oldKey, newKey]), 'a key in the browser\'s storage').toEqual([]);
    expect(profileFilesHolding(world, [oldKey, newKey]), 'profile files holding a key').toEqual([]);
    const rotationMs = Date.now() - t;
    log(`key rotation, the paired browser: its device token refused (AUTH_DEVICE_TOKEN_MISMATCH), the old key refused (AUTH_TOKEN_MISMATCH), the new key typed once: connected without a new approval, then on its device token alone (${seconds(rotationMs)})`);

    // Revoked: `service-deploy devices remove` with the first 12 characters of its id,
    // while the browser is connected on its device token.
    const t2 = Date.now();
    const removed = await world.deploy(`devices remove ${deviceId.slice(0, 12)} --json`);
    expect(removed.exitCode, `${removed.stdout}\n${removed.stderr}`).toBe(0);
    expect(removed.json).toMatchObject({ ok: true, removed: deviceId });
    const afterRemove = await world.deploy('devices list --json');
    expect(afterRemove.json.paired.map((d: { deviceId: string }) => d.deviceId)).not.toContain(deviceId);
    // The gateway cuts the open page off; it reconnects on its device token and is refused.
    const refusedAgain = await later.nextConnect('the revoked browser to be cut off and reconnect', (x) => x.ok || x.code !== undefined);
    expect(refusedAgain, 'the revoked browser on its device token').toMatchObject({ ok: false, code: 'AUTH_DEVICE_TOKEN_MISMATCH', authFields: ['deviceToken'] });
    // With the key typed again it is a new device asking to be paired: refused until approved.
    await later.login(newKey);
    const asksAgain = await later.nextConnect('the revoked browser with the key', (x) => x.authFields.includes('token'));
    expect(asksAgain, 'the revoked browser with the key typed again').toMatchObject({ ok: false, code: 'PAIRING_REQUIRED' });
    const revocationMs = Date.now() - t2;
    log(`devices remove ${deviceId.slice(0, 12)}: the open page is cut off and refused on its device token (AUTH_DEVICE_TOKEN_MISMATCH) and, with the key typed again, asked for a new approval (request ${asksAgain.requestId}) (${seconds(revocationMs)})`);
    return { rotationMs, revocationMs, afterRotation: { deviceToken: refused.code, oldKey: oldRefused.code, newKeyNoApproval: true }, revoked: { deviceToken: refusedAgain.code, withKey: asksAgain.code } };
  } finally {
    await browser?.quit().catch(() => undefined);
    await mesh.close();
    fs.rmSync(world.container.hostPath(DEVICE_DIR), { recursive: true, force: true });
  }
}
