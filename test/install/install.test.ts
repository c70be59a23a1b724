import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FIRST_INSTALL, SECRETS, makeSandbox, snapshotFiles, type Sandbox } from '../helpers/sandbox.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { installSteps } from '../../src/steps/index.js';

const CONFIG = 'root/.openclaw/openclaw.json';
const sandboxes: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

async function fresh(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  return sb;
}

async function installed(): Promise<Sandbox> {
  const sb = await fresh();
  const first = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
  expect(first.exitCode, String(first.stderr)).toBe(0);
  sb.clearCalls();
  return sb;
}

function config(sb: Sandbox): any {
  return JSON.parse(sb.read(CONFIG)!);
}

function gatewayStarts(sb: Sandbox): number {
  const file = path.join(sb.state, 'user-openclaw-gateway.service.starts');
  return fs.existsSync(file) ? Number(fs.readFileSync(file, 'utf8')) : 0;
}

/** Every file under the sandbox root readable by others that contains a secret. */
function worldReadableSecrets(sb: Sandbox): string[] {
  return [...snapshotFiles(sb.root).keys()].filter((rel) => {
    const full = path.join(sb.root, rel);
    const info = fs.statSync(full);
    // A link to a folder (openclaw-current) is no file to read; its folder's files are listed themselves.
    if (!info.isFile() || (info.mode & 0o004) === 0) return false;
    const text = fs.readFileSync(full, 'latin1');
    return Object.values(SECRETS).some((s) => text.includes(s));
  });
}

describe('install in a sandbox root', () => {
  it('deploys every component on a fresh server', async () => {
    const sb = await fresh();
    const result = await sb.install([...FIRST_INSTALL.args, '--json'], FIRST_INSTALL.env);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const out = jsonOutput('install', result.stdout);
    expect(out.ok).toBe(true);
    expect(out.recap.failed).toBe(0);
    // Every step of the registry, in its order (steps/index.ts).
    expect(out.steps.map((s: { id: string }) => s.id)).toEqual(installSteps().map((s) => s.id));
    // Each step that ran has its start and end (ms since the steps began), after the
    // steps it needs ended (they run several at once: schedule.ts), within the run's own
    // duration; a skipped one has neither.
    const steps = out.steps as Array<{ id: string; status: string; durationMs: number; startMs?: number; endMs?: number }>;
    const byId = new Map(steps.map((s) => [s.id, s]));
    let lastEnd = 0;
    for (const s of steps) {
      if (s.status === 'skipped') {
        expect([s.startMs, s.endMs], s.id).toEqual([undefined, undefined]);
        continue;
      }
      for (const need of installSteps().find((step) => step.id === s.id)!.needs ?? []) {
        const needed = byId.get(need);
        if (needed?.endMs !== undefined) expect(s.startMs, `${s.id} after ${need}`).toBeGreaterThanOrEqual(needed.endMs);
      }
      expect(s.endMs! - s.startMs!, s.id).toBe(s.durationMs);
      lastEnd = Math.max(lastEnd, s.endMs!);
    }
    expect(lastEnd).toBeGreaterThan(0);
    expect(lastEnd).toBeLessThanOrEqual(out.durationMs);
    // The channel endpoint is the catalog deploy's (or --channel's) only.
    expect(out.steps.filter((s: { status: string }) => s.status === 'skipped').map((s: { id: string }) => s.id)).toEqual([
      'channel-env', 'channel-plugin', 'channel-drop-in', 'channel-tls', 'channel-nginx', 'channel-limits', 'channel-port',
    ]);

    const cfg = config(sb);
    expect(Object.keys(cfg.models.providers)).toEqual(['service']);
    expect(cfg.models.mode).toBe('replace');
    const ref = { source: 'file', provider: 'service', id: '/serviceApiKey' };
    expect(cfg.models.providers.service).toMatchObject({ apiKey: ref, api: 'openai-completions', baseUrl: sb.aiGateway.url });
    expect(cfg.models.providers.service.models[0]).toMatchObject({ id: 'claude-sonnet-4-5', contextWindow: 200000, maxTokens: 16000 });
    expect(cfg.agents.defaults.model.primary).toBe('service/claude-sonnet-4-5');
    expect(cfg.agents.defaults.heartbeat.every).toBe('30m');
    expect(cfg.session.reset).toEqual({ mode: 'idle', idleMinutes: 10080 });
    expect(cfg.gateway).toEqual({ mode: 'local', port: 18789, bind: 'loopback', auth: { mode: 'token', token: ref }, trustedProxies: ['127.0.0.1', '::1'] });
    expect(cfg.mcp.servers.service.headers.Authorization).toBe('Bearer ${SERVICE_MCP_TOKEN}');
    // The values, in the root-only secret source the references point at.
    expect(JSON.parse(sb.read('/var/lib/service-deploy/runtime-secrets/secrets.json')!)).toEqual({ serviceApiKey: SECRETS.apiKey });
    expect(sb.read('/var/lib/service-deploy/runtime-secrets/gateway.env')).toContain(`SERVICE_MCP_TOKEN=${SECRETS.mcpToken}`);
    expect(cfg.plugins.slots.contextEngine).toBe('lossless-claw');
    expect(cfg.plugins.allow).toBeUndefined();
    expect(sb.stat(CONFIG)!.mode & 0o777).toBe(0o600);
    expect(sb.stat('var/lib/service-deploy/answers.json')!.mode & 0o777).toBe(0o600);

    expect(sb.read('etc/cron.d/service-guard')).toMatch(/^\d+ \* \* \* \* root \/usr\/local\/bin\/service-guard\.sh/m);
    expect(sb.stat('usr/local/bin/service-guard.sh')!.mode & 0o777).toBe(0o755);
    expect(sb.read('root/.config/systemd/user/openclaw-gateway.service')).toContain('gateway --port 18789 --bind loopback');
    expect(sb.stat('var/lib/systemd/linger/root')).toBeDefined();
    expect(gatewayStarts(sb)).toBe(1);

    // The mesh client logged in from a 0600 key file that is gone afterwards.
    expect(fs.readFileSync(path.join(sb.state, 'ts-auth-key-used'), 'utf8').trim()).toBe(SECRETS.meshAuthKey);
    expect(fs.readdirSync(path.join(sb.root, 'var/lib/service-deploy')).filter((f) => f.startsWith('mesh-auth-key'))).toEqual([]);
    expect(fs.readFileSync(path.join(sb.state, 'ts-up'), 'utf8').trim()).toBe('openclaw-acme-dental-gmbh');
  });

  it('never puts a secret in a command line, the log, or a world-readable file', async () => {
    const sb = await installed();
    await sb.install(['--model', 'other-model', '--non-interactive', '--verbose']);
    const argv = fs.readFileSync(sb.log, 'utf8');
    const log = sb.read('var/log/service-deploy/install.log')!;
    expect(log).toContain('run: '); // --verbose logged the commands it ran
    for (const secret of Object.values(SECRETS)) {
      expect(argv).not.toContain(secret);
      expect(log).not.toContain(secret);
    }
    expect(sb.stat('var/log/service-deploy/install.log')!.mode & 0o777).toBe(0o600);
    expect(worldReadableSecrets(sb)).toEqual([]);
  });

  it('a re-run changes nothing: no file rewritten, no restart', async () => {
    const sb = await installed();
    const before = snapshotFiles(sb.root);
    const starts = gatewayStarts(sb);
    const result = await sb.install(['--non-interactive', '--json']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const out = jsonOutput('install', result.stdout);
    expect(out.recap).toMatchObject({ changed: 0, failed: 0 });
    const after = snapshotFiles(sb.root);
    // Only the install log may grow.
    for (const [file, mtime] of before) if (!file.startsWith('var/log/')) expect(after.get(file), file).toBe(mtime);
    expect([...after.keys()].filter((f) => !before.has(f))).toEqual([]);
    expect(gatewayStarts(sb)).toBe(starts);
    expect(sb.calls('systemctl').some((c) => c.args.includes('restart'))).toBe(false);
    expect(sb.calls('npm')).toEqual([]);
    expect(sb.calls('apt-get')).toEqual([]);
  });

  it('a re-run with a new model changes only what depends on it and restarts the gateway once', async () => {
    const sb = await installed();
    const starts = gatewayStarts(sb);
    const result = await sb.install(['--model', 'gpt-5.1', '--non-interactive', '--json']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const changed = jsonOutput('install', result.stdout).steps.filter((s: { status: string }) => s.status === 'changed');
    expect(changed.map((s: { id: string }) => s.id)).toEqual(['answers', 'runtime-config', 'gateway-service']);
    expect(config(sb).agents.defaults.model.primary).toBe('service/gpt-5.1');
    // The chat model, and the heartbeat's own (the profile's: docs/components.md).
    expect(config(sb).models.providers.service.models.map((m: { id: string }) => m.id)).toEqual(['gpt-5.1', 'claude-haiku-4-5']);
    expect(gatewayStarts(sb)).toBe(starts + 1);
    // The next run keeps the new model without being told.
    const again = await sb.install(['--non-interactive', '--json']);
    expect(jsonOutput('install', again.stdout).recap.changed).toBe(0);
  });

  it('a re-run with a new MCP token updates the tool server config and restarts once', async () => {
    const sb = await installed();
    const starts = gatewayStarts(sb);
    const newToken = 'mcp_tok_rotated_0123456789ab';
    sb.mcp.token = newToken;
    const result = await sb.install(['--non-interactive'], { SERVICE_MCP_TOKEN: newToken });
    expect(result.exitCode, String(result.stderr)).toBe(0);
    expect(config(sb).mcp.servers.service.headers.Authorization).toBe('Bearer ${SERVICE_MCP_TOKEN}');
    expect(sb.read('/var/lib/service-deploy/runtime-secrets/gateway.env')).toContain(`SERVICE_MCP_TOKEN=${newToken}\n`);
    expect(gatewayStarts(sb)).toBe(starts + 1);
    expect(String(result.stdout) + String(result.stderr)).not.toContain(newToken);
  });

  it('rejects an MCP token the service does not accept in preflight: exit 2, before any change', async () => {
    const sb = await installed();
    const before = snapshotFiles(sb.root);
    const result = await sb.install(['--non-interactive', '--json'], { SERVICE_MCP_TOKEN: 'mcp_tok_not_known_to_service' });
    expect(result.exitCode).toBe(2);
    const failed = jsonOutput('install', result.stdout).steps.find((s: { status: string }) => s.status === 'failed');
    expect(failed.id).toBe('preflight');
    expect(failed.error).toContain('rejected the MCP token');
    expect(failed.error).toContain('Settings > MCP Tokens');
    const after = snapshotFiles(sb.root);
    for (const [file, mtime] of before) if (!file.startsWith('var/log/')) expect(after.get(file), file).toBe(mtime);
    // Nothing ran that changes the server: the refusal came before the first change.
    expect(sb.calls().filter((c) => ['apt-get', 'npm', 'openclaw'].includes(c.command) || (c.command === 'systemctl' && !c.args.some((a) => a.startsWith('is-') || a === 'show')))).toEqual([]);
  });

  it('migrates a legacy gateway.token and keeps keys the user added (JSON5 with comments)', async () => {
    const sb = await installed();
    fs.writeFileSync(
      path.join(sb.root, CONFIG),
      `// edited by hand\n{\n  gateway: { mode: 'local', token: 'old-legacy-token-value' },\n  agents: { defaults: { workspace: '/srv/agent', model: 'anthropic/claude' } },\n  models: { providers: { anthropic: { baseUrl: 'https://vendor.example/v1', apiKey: 'sk-vendor-direct-key' } } },\n  ui: { assistant: { name: 'Acme' } },\n}\n`,
      { mode: 0o600 },
    );
    const result = await sb.install(['--non-interactive']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const cfg = config(sb);
    expect(cfg.gateway.token).toBeUndefined();
    expect(cfg.gateway.auth).toEqual({ mode: 'token', token: { source: 'file', provider: 'service', id: '/serviceApiKey' } });
    expect(Object.keys(cfg.models.providers)).toEqual(['service']);
    expect(cfg.agents.defaults.workspace).toBe('/srv/agent');
    expect(cfg.agents.defaults.model).toEqual({ primary: 'service/claude-sonnet-4-5' });
    expect(cfg.ui).toEqual({ assistant: { name: 'Acme' } });
    // The candidate handed to the validator was the final file.
    expect(JSON.parse(fs.readFileSync(path.join(sb.state, 'last-validated.json'), 'utf8'))).toEqual(cfg);
  });

  it('never replaces the config with one the runtime rejects', async () => {
    const sb = await installed();
    const before = sb.read(CONFIG);
    sb.fail('openclaw', '{"valid":false,"issues":[{"path":"models","message":"bad"}]}');
    const result = await sb.install(['--model', 'new-one', '--non-interactive']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('OpenClaw rejects the new config');
    expect(sb.read(CONFIG)).toBe(before);
    expect(fs.readdirSync(path.join(sb.root, 'root/.openclaw')).filter((f) => f.includes('candidate'))).toEqual([]);
  });

  it('--check prints the plan and writes nothing; --diff masks secrets', async () => {
    const sb = await installed();
    const before = snapshotFiles(sb.root);
    const result = await sb.install(['--model', 'planned-model', '--non-interactive', '--check', '--diff']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    expect(result.stdout).toContain('would change  runtime-config');
    expect(result.stdout).toMatch(/^\+\s+"id": "planned-model",$/m);
    expect(result.stdout).toContain('****');
    for (const secret of Object.values(SECRETS)) expect(result.stdout).not.toContain(secret);
    expect(snapshotFiles(sb.root)).toEqual(before);
    expect(config(sb).agents.defaults.model.primary).toBe('service/claude-sonnet-4-5');
  });

  it('says how to enable Serve when the mesh network has it off', async () => {
    const sb = await fresh();
    fs.writeFileSync(path.join(sb.state, 'ts-serve-disabled'), '');
    const result = await sb.install(FIRST_INSTALL.args, FIRST_INSTALL.env);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('did not accept Serve');
    expect(result.stderr).toMatch(/Serve\/Funnel/);
    expect(result.stderr).toContain('run the install again');
  });

  it('records service profile overrides so the hourly guard (run without them) keeps the deployment', async () => {
    const sb = await installed();
    const stored = JSON.parse(sb.read('var/lib/service-deploy/answers.json')!);
    expect(stored.serviceOverrides.SERVICE_AI_GATEWAY_URL).toBe(sb.aiGateway.url);
    const env = sb.env({ SERVICE_AI_GATEWAY_URL: undefined, SERVICE_MCP_URL: undefined } as unknown as Record<string, string>);
    expect(env.SERVICE_AI_GATEWAY_URL).toBeUndefined();
    const before = sb.read(CONFIG);
    const guard = await execa(path.join(process.cwd(), 'dist/service-deploy'), ['guard'], { env, extendEnv: false, reject: false });
    expect(guard.exitCode, guard.stderr).toBe(0);
    expect(sb.read(CONFIG)).toBe(before);
    const rerun = await execa(path.join(process.cwd(), 'dist/service-deploy'), ['install', '--non-interactive', '--json'], { env, extendEnv: false, reject: false });
    expect(jsonOutput('install', rerun.stdout).recap.changed).toBe(0);
  });

  it('--catalog: non-interactive, channel endpoint configured, JSON result; a re-run changes nothing', async () => {
    const sb = await fresh();
    const result = await sb.install(['--catalog', '--customer-name', 'Catalog Co'], FIRST_INSTALL.env);
    // --catalog answers in JSON on stdout: a failed step is there, not on stderr.
    expect(result.exitCode, `${result.stderr}${result.stdout}`).toBe(0);
    const out = jsonOutput('install', result.stdout);
    expect(out.ok).toBe(true);
    expect(out.steps.filter((s: { status: string }) => s.status === 'skipped')).toEqual([]);
    const env = sb.read('root/.openclaw/channel.env')!;
    expect(env).toMatch(/^SERVICE_CHANNEL_TOKEN=\S{24,}$/m);
    expect(env).toMatch(/^SERVICE_CHANNEL_KNOCK=\S{24,}$/m);
    expect(env).toMatch(/^SERVICE_TS_HOSTNAME=openclaw-catalog-co$/m);
    expect(sb.stat('root/.openclaw/channel.env')!.mode & 0o777).toBe(0o600);
    expect(sb.read('root/.config/systemd/user/openclaw-gateway.service.d/service-env.conf')).toContain('EnvironmentFile=-/root/.openclaw/channel.env');
    const site = sb.read('etc/nginx/conf.d/service-channel.conf')!;
    expect(site).toContain('limit_conn service_cn 3;');
    expect(site).not.toMatch(/limit_conn\s+zone=/);
    expect(sb.stat('etc/nginx/conf.d/service-channel.conf')!.mode & 0o777).toBe(0o600);
    expect(config(sb).plugins.entries['service-channel']).toEqual({ enabled: true });
    expect(gatewayStarts(sb)).toBe(1);
    expect(worldReadableSecrets(sb)).toEqual([]);
    const token = /^SERVICE_CHANNEL_TOKEN=(\S+)$/m.exec(env)![1]!;
    expect(fs.readFileSync(sb.log, 'utf8')).not.toContain(token);

    const again = await sb.install(['--catalog'], {});
    const rerun = jsonOutput('install', again.stdout);
    expect(rerun.recap.changed, JSON.stringify(rerun.steps.filter((s: { status: string }) => s.status !== 'ok'))).toBe(0);
    expect(sb.read('root/.openclaw/channel.env')).toBe(env);
    expect(gatewayStarts(sb)).toBe(1);

    // render shows the same files, secrets masked.
    const bin = path.join(process.cwd(), 'dist/service-deploy');
    const renderedSite = await execa(bin, ['render', 'nginx'], { env: sb.env(), extendEnv: false, stripFinalNewline: false });
    const knock = /^SERVICE_CHANNEL_KNOCK=(\S+)$/m.exec(env)![1]!;
    const edge = /^SERVICE_CHANNEL_EDGE=(\S+)$/m.exec(env)![1]!;
    expect(renderedSite.stdout).toBe(site.split(knock).join('****').split(edge).join('****'));
    // The connection limits: the table loaded (nft stand-in) from the file render prints.
    const renderedFirewall = await execa(bin, ['render', 'firewall'], { env: sb.env(), extendEnv: false, stripFinalNewline: false });
    expect(renderedFirewall.stdout).toBe(sb.read('etc/service-deploy/channel-firewall.nft'));
    const renderedEnv = await execa(bin, ['render', 'channel-env', '--show-secrets'], { env: sb.env(), extendEnv: false, stripFinalNewline: false });
    expect(renderedEnv.stdout).toBe(env);
  });

  it('--rotate-channel-secrets issues a new token and knock; portal-given values win', async () => {
    const sb = await fresh();
    await sb.install(['--catalog', '--customer-name', 'Rotate Co'], FIRST_INSTALL.env);
    const before = sb.read('root/.openclaw/channel.env')!;
    const rotated = await sb.install(['--catalog', '--rotate-channel-secrets'], {});
    expect(rotated.exitCode, String(rotated.stderr)).toBe(0);
    const after = sb.read('root/.openclaw/channel.env')!;
    expect(after).not.toBe(before);
    const portalToken = 'portal-token-0123456789abcdefghij';
    await sb.install(['--catalog'], { SERVICE_CHANNEL_TOKEN: portalToken });
    expect(sb.read('root/.openclaw/channel.env')).toContain(`SERVICE_CHANNEL_TOKEN=${portalToken}`);
  });

  it('render prints the runtime config with secrets masked unless --show-secrets', async () => {
    const sb = await installed();
    const env = sb.env();
    const masked = await execa(path.join(process.cwd(), 'dist/service-deploy'), ['render', 'runtime-config'], { env, extendEnv: false });
    // The config holds references only; the secret source is where render masks.
    expect(JSON.parse(masked.stdout).gateway.auth.token).toEqual({ source: 'file', provider: 'service', id: '/serviceApiKey' });
    expect(masked.stdout).not.toContain(SECRETS.apiKey);
    const source = await execa(path.join(process.cwd(), 'dist/service-deploy'), ['render', 'secrets'], { env, extendEnv: false });
    expect(JSON.parse(source.stdout)).toEqual({ serviceApiKey: '****' });
    const sourceShown = await execa(path.join(process.cwd(), 'dist/service-deploy'), ['render', 'secrets-env', '--show-secrets'], { env, extendEnv: false, stripFinalNewline: false });
    expect(sourceShown.stdout).toBe(sb.read('/var/lib/service-deploy/runtime-secrets/gateway.env'));
    const shown = await execa(path.join(process.cwd(), 'dist/service-deploy'), ['render', 'runtime-config', '--show-secrets'], { env, extendEnv: false, stripFinalNewline: false });
    expect(shown.stdout).toBe(sb.read(CONFIG));
  });
});

describe('answers', () => {
  const bad: Array<[string, string[], Record<string, string>, RegExp]> = [
    ['empty customer name', ['--customer-name', '  '], {}, /customer name .*empty/],
    // Any printable name is a display name; one with no slug needs the hostname given (issue 30.6).
    ['a name with no slug and no --mesh-hostname', ['--customer-name', '!!! ???'], {}, /mesh network hostname: give --mesh-hostname or SERVICE_MESH_HOSTNAME \(the customer name "!!! \?\?\?" has no Latin letter or digit/],
    ['key without pkt_', [], { SERVICE_API_KEY: 'sk_live_123456789012' }, /service API key .*must start with pkt_/],
    ['bad hostname', ['--mesh-hostname', 'Bad_Host'], {}, /mesh network hostname .*DNS label/],
    ['empty MCP token', [], { SERVICE_MCP_TOKEN: '' }, /service MCP token .*empty/],
    ['a secret as a flag', ['--api-key', 'pkt_secret_in_argv_123'], {}, /--api-key is not accepted: process arguments are visible/],
  ];
  for (const [what, args, env, message] of bad) {
    it(`refuses ${what}: names the field, exit 2, nothing written`, async () => {
      const sb = await fresh();
      const result = await sb.install([...FIRST_INSTALL.args, ...args], { ...FIRST_INSTALL.env, ...env });
      expect(result.stderr).toMatch(message);
      expect(result.exitCode).toBe(2);
      // What the sandbox had before: os-release and the cgroup tree.
      expect(fs.readdirSync(sb.root)).toEqual(['etc', 'sys']);
      expect(sb.calls()).toEqual([]);
    });
  }

  it('without a terminal lists every missing answer at once', async () => {
    const sb = await fresh();
    const result = await sb.install([]);
    expect(result.exitCode).toBe(2);
    for (const field of ['customer name', 'service API key', 'mesh network auth key', 'service MCP token']) {
      expect(result.stderr).toContain(field);
    }
    expect(result.stderr).toContain('SERVICE_API_KEY or --api-key-file');
    expect(fs.readdirSync(sb.root)).toEqual(['etc', 'sys']);
  });

  it('reads secrets from files and plain values from an answers file', async () => {
    const sb = await fresh();
    const dir = fs.mkdtempSync(path.join(sb.state, 'in-'));
    fs.writeFileSync(path.join(dir, 'key'), `${SECRETS.apiKey}\n`, { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'answers.json'), JSON.stringify({ customerName: 'Zahnarzt Müller', meshAuthKey: SECRETS.meshAuthKey, mcpToken: SECRETS.mcpToken, modelId: 'm-1' }), { mode: 0o600 });
    const result = await sb.install(['--api-key-file', path.join(dir, 'key'), '--answers', path.join(dir, 'answers.json'), '--non-interactive']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    expect(fs.readFileSync(path.join(sb.state, 'ts-up'), 'utf8').trim()).toBe('openclaw-zahnarzt-muller');
    expect(config(sb).agents.defaults.model.primary).toBe('service/m-1');
  });
});
