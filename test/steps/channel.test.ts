import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { parseEnvFile } from '../../src/channel/env-file.js';
import { SECRET_PATTERN } from '../../src/channel/protocol.js';
import { isSelfSigned } from '../../src/channel/tls.js';
import { LAYOUT } from '../../src/layout.js';
import {
  PIN_CHANGE_NOTE,
  PLUGIN_FILES,
  channelDropInStep,
  channelEnvStep,
  channelPluginStep,
  channelSteps,
  channelTlsStep,
  nginxSiteStep,
} from '../../src/steps/channel.js';
import type { InstallContext, Step } from '../../src/pipeline/step.js';
import { NGINX, nginxConf } from '../helpers/nginx.js';
import { sandboxContext, standIn } from '../helpers/install-ctx.js';
import { tempDir } from '../helpers/tmp.js';

/** check -> apply -> verify, like the pipeline; returns the plan. */
async function run(step: Step, ctx: InstallContext) {
  const plan = await step.check(ctx);
  if (plan.changes.length > 0) {
    await step.apply(ctx, plan);
    await step.verify?.(ctx);
  }
  return plan;
}

const read = (ctx: { host: { paths: { real(p: string): string } } }, p: string) => fs.readFileSync(ctx.host.paths.real(p), 'utf8');
const mode = (ctx: { host: { paths: { real(p: string): string } } }, p: string) => fs.statSync(ctx.host.paths.real(p)).mode & 0o777;

describe('channel steps', () => {
  it('are in order and skip without --channel/--catalog', async () => {
    expect(channelSteps.map((s) => s.id)).toEqual(['channel-env', 'channel-plugin', 'channel-drop-in', 'channel-tls', 'channel-nginx']);
    const ctx = sandboxContext({ install: { channel: false } });
    for (const step of channelSteps) expect(await step.skip!(ctx)).toMatch(/catalog/);
    expect(await channelEnvStep.skip!(sandboxContext())).toBeUndefined();
  });

  it('channel.env: generated secrets (32 bytes), root-only, kept on a re-run, masked in the plan', async () => {
    const ctx = sandboxContext();
    const plan = await run(channelEnvStep, ctx);
    expect(plan.notify).toContain('gateway-restart');
    const env = parseEnvFile(read(ctx, LAYOUT.channelEnv));
    expect(mode(ctx, LAYOUT.channelEnv)).toBe(0o600);
    expect(Buffer.from(env.SERVICE_CHANNEL_TOKEN!, 'base64url')).toHaveLength(32);
    expect(Buffer.from(env.SERVICE_CHANNEL_KNOCK!, 'base64url')).toHaveLength(32);
    expect(env.SERVICE_CHANNEL_TOKEN).not.toBe(env.SERVICE_CHANNEL_KNOCK);
    expect(env.SERVICE_TS_HOSTNAME).toBe('openclaw-acme');
    expect(plan.changes[0]!.diff).not.toContain(env.SERVICE_CHANNEL_TOKEN);
    expect(plan.changes[0]!.diff).toContain('SERVICE_CHANNEL_TOKEN=****');

    const again = sandboxContext({ root: ctx.root });
    expect((await channelEnvStep.check(again)).changes).toEqual([]);
  });

  it('channel.env: the portal\'s values win; --rotate-channel-secrets makes new ones; bad values are refused', async () => {
    const ctx = sandboxContext({ env: { SERVICE_CHANNEL_TOKEN: 'portal-token-0123456789abcdefXYZ', SERVICE_CHANNEL_KNOCK: 'portal-knock-0123456789abcdefXYZ' } });
    await run(channelEnvStep, ctx);
    expect(parseEnvFile(read(ctx, LAYOUT.channelEnv))).toMatchObject({ SERVICE_CHANNEL_TOKEN: 'portal-token-0123456789abcdefXYZ', SERVICE_CHANNEL_KNOCK: 'portal-knock-0123456789abcdefXYZ' });

    const rotated = sandboxContext({ root: ctx.root, install: { rotateChannelSecrets: true } });
    const plan = await run(channelEnvStep, rotated);
    expect(plan.changes[0]!.summary).toMatch(/token rotated, knock rotated/);
    const env = parseEnvFile(read(rotated, LAYOUT.channelEnv));
    expect(env.SERVICE_CHANNEL_TOKEN).not.toBe('portal-token-0123456789abcdefXYZ');
    expect(env.SERVICE_CHANNEL_TOKEN).toMatch(SECRET_PATTERN);
    // Registered with the redactor: masked in everything the run prints.
    expect(rotated.host.redactor.redact(`x ${env.SERVICE_CHANNEL_KNOCK} y`)).toBe('x **** y');

    const bad = sandboxContext({ env: { SERVICE_CHANNEL_KNOCK: 'has "quotes"; and spaces that break nginx' } });
    await expect(channelEnvStep.check(bad)).rejects.toThrow(/not a usable secret/);
  });

  it('drop-in: loads channel.env into the gateway; reload units + restart', async () => {
    const ctx = sandboxContext();
    const plan = await run(channelDropInStep, ctx);
    expect(plan.notify).toEqual(['gateway-reload-units', 'gateway-restart']);
    const text = read(ctx, LAYOUT.channelDropIn);
    expect(LAYOUT.channelDropIn).toBe('/root/.config/systemd/user/openclaw-gateway.service.d/service-env.conf');
    expect(text).toMatch(/^\[Service\]$/m);
    expect(text).toMatch(/^EnvironmentFile=-\/root\/\.openclaw\/channel\.env$/m);
    expect((await channelDropInStep.check(ctx)).changes).toEqual([]);
  });

  it('plugin: writes the plugin files (manifest, package, code) and is idempotent', async () => {
    const ctx = sandboxContext();
    const plan = await run(channelPluginStep, ctx);
    expect(plan.changes).toHaveLength(Object.keys(PLUGIN_FILES).length);
    const manifest = JSON.parse(read(ctx, `${LAYOUT.channelPluginDir}/openclaw.plugin.json`));
    expect(manifest).toMatchObject({ id: 'service-channel', activation: { onStartup: true } });
    expect(JSON.parse(read(ctx, `${LAYOUT.channelPluginDir}/package.json`)).openclaw.extensions).toEqual(['./index.js']);
    expect(read(ctx, `${LAYOUT.channelPluginDir}/index.js`)).toContain('auth: "plugin"');
    expect((await channelPluginStep.check(ctx)).changes).toEqual([]);
  });
});

describe('channel TLS and nginx steps (real openssl, real nginx -t)', () => {
  let root: string;
  let bin: string;
  let calls: string;
  let failFlag: string;

  beforeAll(async () => {
    const ctx = sandboxContext();
    root = ctx.root;
    await run(channelTlsStep, ctx);
    // Stand-ins: `nginx -t` runs the real nginx on the sandbox's site (production
    // paths mapped into the sandbox); systemctl only records its arguments.
    const prefix = tempDir('sd-nginx-t-');
    fs.mkdirSync(path.join(prefix, 'tmp'));
    fs.writeFileSync(path.join(prefix, 'nginx.conf'), nginxConf(prefix, path.join(prefix, 'site.conf')));
    calls = path.join(prefix, 'calls.log');
    failFlag = path.join(prefix, 'fail');
    bin = standIn(path.join(prefix, 'bin'), 'nginx', `#!/bin/sh
echo "nginx $*" >> ${calls}
if [ -f ${failFlag} ]; then echo 'nginx: [emerg] zero size shared memory zone "service_cn"' >&2; echo 'nginx: configuration file /etc/nginx/nginx.conf test failed' >&2; exit 1; fi
sed -e "s#/etc/service-deploy/#${root}/etc/service-deploy/#g" -e "s#/var/log/nginx/#${prefix}/#g" ${root}/etc/nginx/conf.d/service-channel.conf > ${prefix}/site.conf
exec ${NGINX} -t -p ${prefix} -c ${prefix}/nginx.conf -e ${prefix}/error.log
`);
    standIn(bin, 'systemctl', `#!/bin/sh\necho "systemctl $*" >> ${calls}\n[ "$1" = is-active ] && exit 3\nexit 0\n`);
  }, 120_000);

  const ctxFor = (extra: Parameters<typeof sandboxContext>[0] = {}) => sandboxContext({ root, binDir: bin, ...extra });
  const callLog = () => (fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8') : '');

  it('TLS: key 0600; nothing to do on a re-run; a key with a loose mode is only chmod-ed', async () => {
    const ctx = ctxFor();
    expect(mode(ctx, LAYOUT.tlsKey)).toBe(0o600);
    expect((await channelTlsStep.check(ctx)).changes).toEqual([]);
    const certBefore = read(ctx, LAYOUT.tlsCert);
    fs.chmodSync(ctx.host.paths.real(LAYOUT.tlsKey), 0o644);
    const plan = await run(channelTlsStep, ctx);
    expect(plan.changes.map((c) => c.summary)).toEqual([`${LAYOUT.tlsKey}: mode -> 0600`]);
    expect(mode(ctx, LAYOUT.tlsKey)).toBe(0o600);
    expect(read(ctx, LAYOUT.tlsCert)).toBe(certBefore);
  });

  it('TLS: a new mesh hostname (a SAN the certificate lacks) makes a new certificate', async () => {
    const ctx = ctxFor({ answers: { meshHostname: 'openclaw-renamed' } });
    const plan = await channelTlsStep.check(ctx);
    expect(plan.changes[0]!.summary).toMatch(/lacks DNS:openclaw-renamed/);
    expect(plan.notify).toEqual(['nginx-reload']);
  });

  it('TLS: --channel-host names go into the certificate first (a re-issue, which says the pin changes); the same names again change nothing; dropping one keeps the certificate', async () => {
    // A copy of the certificate made above (making an RSA 4096 key takes seconds).
    const root = tempDir('sd-root-');
    fs.cpSync(ctxFor().host.paths.real(LAYOUT.tlsDir), path.join(root, LAYOUT.tlsDir), { recursive: true });
    const hosts = (channelHosts?: string[]) => sandboxContext({ root, binDir: bin, answers: { channelHosts } });
    expect((await channelTlsStep.check(hosts())).changes).toEqual([]);
    const first = read(hosts(), LAYOUT.tlsCert);
    expect(new X509Certificate(first).subjectAltName).not.toContain('203.0.113.7');

    const given = ['203.0.113.7', 'chat.acme-dental.example', '2001:db8::7'];
    const plan = await run(channelTlsStep, hosts(given));
    expect(plan.changes.map((c) => c.summary)).toEqual([
      `new certificate: the certificate lacks IP:203.0.113.7, DNS:chat.acme-dental.example, IP:2001:db8::7; ${PIN_CHANGE_NOTE}`,
    ]);
    expect(plan.notify).toEqual(['nginx-reload']);
    const cert = new X509Certificate(read(hosts(), LAYOUT.tlsCert));
    expect(cert.fingerprint256).not.toBe(new X509Certificate(first).fingerprint256);
    // openssl writes the names in the order given: the --channel-host names lead.
    expect(cert.subjectAltName!.split(', ').slice(0, 3)).toEqual(['IP Address:203.0.113.7', 'DNS:chat.acme-dental.example', 'IP Address:2001:DB8:0:0:0:0:0:7']);
    expect(cert.subjectAltName).toContain('DNS:openclaw-acme');
    expect(cert.subjectAltName).toContain('DNS:localhost');
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(4096);
    expect(isSelfSigned(cert)).toBe(true);

    const again = read(hosts(), LAYOUT.tlsCert);
    expect((await channelTlsStep.check(hosts(given))).changes).toEqual([]);
    expect((await channelTlsStep.check(hosts([...given].reverse()))).changes).toEqual([]);
    // A name the portal no longer uses is no reason to break the pin it holds.
    expect((await channelTlsStep.check(hosts(['chat.acme-dental.example']))).changes).toEqual([]);
    expect((await channelTlsStep.check(hosts())).changes).toEqual([]);
    expect(read(hosts(), LAYOUT.tlsCert)).toBe(again);
    // A first certificate is no pin change: nobody holds its pin yet.
    const fresh = await channelTlsStep.check(sandboxContext({ answers: { channelHosts: given } }));
    expect(fresh.changes.map((c) => c.summary)).toEqual(['new certificate: no certificate']);
  });

  it('TLS: an address that appears while the install runs does not fail the certificate just made; a later run keeps the pin until the address is named', async () => {
    const root = tempDir('sd-root-');
    fs.cpSync(ctxFor().host.paths.real(LAYOUT.tlsDir), path.join(root, LAYOUT.tlsDir), { recursive: true });
    const ctx = sandboxContext({ root, binDir: bin, answers: { channelHosts: ['203.0.113.8'] } });
    const plan = await channelTlsStep.check(ctx);
    expect(plan.changes.map((c) => c.summary)).toEqual([`new certificate: the certificate lacks IP:203.0.113.8; ${PIN_CHANGE_NOTE}`]);
    await channelTlsStep.apply(ctx, plan);
    // An interface comes up between the plan and the check of its result (a VPN, a second NIC).
    const real = os.networkInterfaces;
    const spy = vi.spyOn(os, 'networkInterfaces').mockImplementation(() => ({
      ...real(),
      wg0: [{ address: '198.51.100.99', netmask: '255.255.255.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: false, cidr: '198.51.100.99/24' }],
    }));
    try {
      await channelTlsStep.verify!(ctx);
      // A new interface address is no reason for a new certificate: it would change the
      // pin the portal holds at a re-run nobody meant for the channel.
      const next = await channelTlsStep.check(sandboxContext({ root, binDir: bin, answers: { channelHosts: ['203.0.113.8'] } }));
      expect(next.changes).toEqual([]);
      // Named with --channel-host (the portal is to use it), it is.
      const named = await channelTlsStep.check(sandboxContext({ root, binDir: bin, answers: { channelHosts: ['203.0.113.8', '198.51.100.99'] } }));
      expect(named.changes.map((c) => c.summary)).toEqual([`new certificate: the certificate lacks IP:198.51.100.99; ${PIN_CHANGE_NOTE}`]);
    } finally {
      spy.mockRestore();
    }
  });

  it('nginx: the site goes in with a successful nginx -t, root-only, then nginx is started/reloaded', async () => {
    const ctx = ctxFor();
    await run(channelEnvStep, ctx);
    const plan = await run(nginxSiteStep, ctx);
    expect(plan.notify).toEqual(['nginx-reload']);
    const site = read(ctx, LAYOUT.nginxSite);
    expect(mode(ctx, LAYOUT.nginxSite)).toBe(0o600);
    expect(site).toContain(`"${parseEnvFile(read(ctx, LAYOUT.channelEnv)).SERVICE_CHANNEL_KNOCK}"`);
    expect(plan.changes[0]!.diff).not.toContain(parseEnvFile(read(ctx, LAYOUT.channelEnv)).SERVICE_CHANNEL_KNOCK);
    expect(callLog()).toMatch(/nginx -t\n/);
    expect(callLog()).toMatch(/systemctl enable --now nginx/);
    expect((await nginxSiteStep.check(ctxFor())).changes).toEqual([]);
  });

  it('nginx: when nginx -t fails, the previous site is put back and nothing is reloaded', async () => {
    const ctx = ctxFor({ install: { rotateChannelSecrets: true } });
    await run(channelEnvStep, ctx);
    const before = read(ctx, LAYOUT.nginxSite);
    fs.writeFileSync(calls, '');
    fs.writeFileSync(failFlag, '');
    try {
      const plan = await nginxSiteStep.check(ctx);
      expect(plan.changes).toHaveLength(1);
      await expect(nginxSiteStep.apply(ctx, plan)).rejects.toThrow(/nginx rejects the new channel site; the previous one was put back[\s\S]*zero size shared memory zone/);
    } finally {
      fs.rmSync(failFlag);
    }
    expect(read(ctx, LAYOUT.nginxSite)).toBe(before);
    expect(callLog()).not.toMatch(/systemctl/);
  });

  it('nginx: a first install whose nginx -t fails leaves no site behind', async () => {
    const ctx = sandboxContext({ root: tempDir('sd-root-'), binDir: bin });
    fs.writeFileSync(failFlag, '');
    try {
      await run(channelEnvStep, ctx);
      const plan = await nginxSiteStep.check(ctx);
      await expect(nginxSiteStep.apply(ctx, plan)).rejects.toThrow(/put back/);
    } finally {
      fs.rmSync(failFlag);
    }
    expect(fs.existsSync(ctx.host.paths.real(LAYOUT.nginxSite))).toBe(false);
  });
});
