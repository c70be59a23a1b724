import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BASE_ENV, Exec, NETWORK_ENV, childEnv } from '../../src/host/exec.js';
import { Logger } from '../../src/host/log.js';
import { Redactor } from '../../src/host/redact.js';
import { BINARY } from '../helpers/binary.js';
import { FIRST_INSTALL, SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

/** Every secret the install may hold in its own environment (the portal gives the channel's too). */
const ALL_SECRETS = {
  SERVICE_API_KEY: SECRETS.apiKey,
  SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey,
  SERVICE_MCP_TOKEN: SECRETS.mcpToken,
  SERVICE_CHANNEL_TOKEN: 'chan_tok_from_the_portal_5Yh2Kq9Lm3Np7',
  SERVICE_CHANNEL_KNOCK: 'knock_from_the_portal_8Rt4Vw6Xy2Za9',
  SERVICE_PARTNER_API_KEY: 'pkt_partner_key_not_for_children_01',
};

/** Variables a child may get: the base, and what some commands need (docs/operations.md, "Child processes"). */
const ALLOWED = new Set<string>([
  ...BASE_ENV,
  ...NETWORK_ENV,
  'XDG_RUNTIME_DIR', 'DBUS_SESSION_BUS_ADDRESS', // systemctl --user
  'DEBIAN_FRONTEND', 'NEEDRESTART_MODE', // apt-get
  'OPENCLAW_STATE_DIR', 'OPENCLAW_CONFIG_PATH', 'NO_COLOR', // openclaw, npm
  'NODE_LLAMA_CPP_SKIP_DOWNLOAD', // npm installing QMD: no source build of llama.cpp
  'SERVICE_DEPLOY_ROOT', // sandbox only: where the stand-ins find the server
  'PWD', 'OLDPWD', // set by the shell of a stand-in itself
]);

/** `export -p` files of the stand-ins: command -> list of {name: value}. */
function recorded(sb: Sandbox): Array<{ command: string; env: Map<string, string> }> {
  const dir = path.join(sb.state, 'environ');
  return fs.readdirSync(dir).map((file) => {
    const env = new Map<string, string>();
    for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
      const m = /^export ([A-Za-z_][A-Za-z0-9_]*)(?:='(.*)')?$/.exec(line);
      if (m) env.set(m[1]!, m[2] ?? '');
    }
    return { command: file.replace(/\.\d+$/, ''), env };
  });
}

describe('child processes get a minimal environment', () => {
  it('a full install, guard and doctor: no secret reaches any command; each gets only what it needs', async () => {
    const sb = await makeSandbox();
    sandboxes.push(sb);
    // install.sh's libatomic.so.1 for a machine without it (install.sh) is the binary's alone:
    // its folder goes away when the binary ends, so no child may look there.
    const bootstrap = { LD_LIBRARY_PATH: '/tmp/tmp.install-sh/libatomic/root/usr/lib/x86_64-linux-gnu' };
    const env = { ...FIRST_INSTALL.env, ...ALL_SECRETS, ...bootstrap };
    const install = await sb.install([...FIRST_INSTALL.args, '--catalog'], env);
    expect(install.exitCode, String(install.stderr)).toBe(0);
    for (const args of [['guard'], ['doctor', '--json'], ['gateway', 'status'], ['devices', 'list']]) {
      await execa(BINARY, args, { env: sb.env({ ...ALL_SECRETS, ...bootstrap }), extendEnv: false, reject: false });
    }

    const children = recorded(sb);
    const commands = new Set(children.map((c) => c.command));
    // The install really ran the commands it needs (the proof covers them all).
    for (const c of ['apt-get', 'dpkg-query', 'npm', 'openclaw', 'systemctl', 'loginctl', 'tailscale', 'nginx', 'journalctl', 'logger', 'ss']) expect(commands, c).toContain(c);
    expect(children.length).toBeGreaterThan(40);

    const leaks = children.flatMap(({ command, env: childEnvironment }) =>
      [...childEnvironment].flatMap(([name, value]) =>
        Object.entries(ALL_SECRETS).filter(([, secret]) => value.includes(secret)).map(([which]) => `${command}: ${name} holds ${which}`),
      ),
    );
    expect(leaks).toEqual([]);
    const extra = children.flatMap(({ command, env: childEnvironment }) =>
      [...childEnvironment.keys()].filter((name) => !ALLOWED.has(name) && !name.startsWith('STANDIN_') && !/^npm_config_/i.test(name)).map((name) => `${command}: ${name}`),
    );
    expect([...new Set(extra)]).toEqual([]);
    // What only some commands need stays with them.
    for (const { command, env: e } of children) {
      if (e.has('DEBIAN_FRONTEND')) expect(command).toBe('apt-get');
      if (e.has('OPENCLAW_CONFIG_PATH')) expect(['openclaw', 'npm', 'node']).toContain(command);
    }
    // The mesh auth key went to tailscale in a 0600 file that is gone now, not in its environment or arguments.
    expect(fs.readFileSync(path.join(sb.state, 'ts-auth-key-used'), 'utf8').trim()).toBe(SECRETS.meshAuthKey);
    expect(fs.readFileSync(sb.log, 'utf8')).not.toContain(SECRETS.meshAuthKey);
  }, 180_000);
});

describe('childEnv / Exec', () => {
  const parent = { PATH: '/usr/bin', HOME: '/root', LANG: 'C.UTF-8', SERVICE_API_KEY: 'pkt_x', https_proxy: 'http://proxy:3128', TERM: 'xterm', SSH_AUTH_SOCK: '/tmp/agent' };

  it('passes PATH, HOME and LANG, inherits only the names asked for, sets what the call sets', () => {
    expect(childEnv(parent)).toEqual({ PATH: '/usr/bin', HOME: '/root', LANG: 'C.UTF-8' });
    expect(childEnv(parent, { inherit: NETWORK_ENV, env: { DEBIAN_FRONTEND: 'noninteractive' } })).toEqual({
      PATH: '/usr/bin', HOME: '/root', LANG: 'C.UTF-8', https_proxy: 'http://proxy:3128', DEBIAN_FRONTEND: 'noninteractive',
    });
    expect(childEnv(parent, { env: { HOME: '/srv' } }).HOME).toBe('/srv');
  });

  it('refuses to start a command whose environment would hold a registered secret, unless that variable is declared to', async () => {
    const redactor = new Redactor();
    redactor.add('s3cr3t-value-123456');
    const exec = new Exec(redactor, new Logger(redactor, { quiet: true }), { PATH: process.env.PATH });
    await expect(exec.run('true', [], { env: { TOKEN: 'x s3cr3t-value-123456' } })).rejects.toThrow(/TOKEN in its environment would hold a secret/);
    const ok = await exec.run('sh', ['-c', 'test -n "$TOKEN"'], { env: { TOKEN: 's3cr3t-value-123456' }, secretEnv: ['TOKEN'] });
    expect(ok.exitCode).toBe(0);
    // A secret in our own environment never reaches a child at all.
    const plain = new Exec(redactor, new Logger(redactor, { quiet: true }), { PATH: process.env.PATH, SERVICE_API_KEY: 's3cr3t-value-123456' });
    const printed = await plain.run('sh', ['-c', 'env']);
    expect(printed.stdout).not.toContain('SERVICE_API_KEY');
  });
});
