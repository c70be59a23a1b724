import { createHash } from 'node:crypto';
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../src/layout.js';
import { parseExposure } from '../../src/steps/gateway-service.js';
import { DEFAULT_SITE_FILE, DEFAULT_SITE_LINK, nginxHardeningDropIn } from '../../src/steps/nginx-hardening.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';

/** The exposure target of issue 27 item 5 (Debian 12's systemd). */
const NGINX_EXPOSURE_TARGET = 5.0;
/** Debian's nginx unit as nginx-common 1.22 (bookworm) ships it: rated with and without our drop-in. */
const DEBIAN_UNIT = '/lib/systemd/system/nginx.service';

describe('the nginx sandbox drop-in', () => {
  const analyze = fs.existsSync('/usr/bin/systemd-analyze') && fs.existsSync(DEBIAN_UNIT) ? it : it.skip;
  analyze(`systemd-analyze security rates Debian's nginx unit with it at most ${NGINX_EXPOSURE_TARGET} (without: 9.6)`, async () => {
    const dir = tempDir('nginx-unit-');
    const score = async (content: string) => {
      const file = path.join(dir, 'nginx.service');
      fs.writeFileSync(file, content);
      const r = await execa('systemd-analyze', ['security', '--offline=yes', '--no-pager', file], { reject: false });
      const exposure = parseExposure(r.stdout);
      expect(exposure, `${r.stdout}\n${r.stderr}`).toBeDefined();
      return exposure!;
    };
    const debian = fs.readFileSync(DEBIAN_UNIT, 'utf8');
    // A drop-in's [Service] lines apply after the unit's own: the same as appending them.
    const ours = await score(`${debian}\n${nginxHardeningDropIn().content}`);
    const bare = await score(debian);
    console.log(`systemd-analyze security (offline, nginx.service): ${ours} with the drop-in, ${bare} without`);
    expect(ours).toBeLessThanOrEqual(NGINX_EXPOSURE_TARGET);
    expect(bare).toBeGreaterThanOrEqual(9.6);
  });

  it('keeps what nginx needs: the master\'s capabilities, its writable folders, its socket families; relaxations say why', () => {
    const text = nginxHardeningDropIn().content;
    expect(text).toMatch(/^CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_SETUID CAP_SETGID CAP_CHOWN CAP_DAC_OVERRIDE CAP_KILL$/m);
    expect(text).toMatch(/^ReadWritePaths=\/var\/log\/nginx \/var\/lib\/nginx \/run$/m);
    expect(text).toMatch(/^RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6$/m);
    expect(text).not.toMatch(/^ProtectKernelLogs=/m);
    expect(text).toMatch(/^InaccessiblePaths=.*-\/run\/systemd\/private/m);
    for (const option of ['@privileged', 'PrivateNetwork']) expect(text).toMatch(new RegExp(`# Relaxation: .*${option}`));
  });
});

// The step in the install (the built binary, stand-in commands): the sandbox's apt-get
// stand-in records nginx as added by the install, so the nginx here is the install's.
describe('install: the nginx the install brought', () => {
  let sb: Sandbox;
  const state = (name: string, content = '') => fs.writeFileSync(path.join(sb.state, name), content);
  const put = (p: string, content: string) => {
    fs.mkdirSync(path.dirname(path.join(sb.root, p)), { recursive: true });
    fs.writeFileSync(path.join(sb.root, p), content);
  };
  /** Debian's default site as nginx-common leaves it: the conffile (its MD5 in dpkg's database) and the link. */
  const debianDefaultSite = (content = 'server {\n\tlisten 80 default_server;\n}\n', shipped = content) => {
    put(DEFAULT_SITE_FILE, content);
    fs.mkdirSync(path.dirname(path.join(sb.root, DEFAULT_SITE_LINK)), { recursive: true });
    fs.symlinkSync(DEFAULT_SITE_FILE, path.join(sb.root, DEFAULT_SITE_LINK));
    state('dpkg-conffiles', `nginx-common ${DEFAULT_SITE_FILE} ${createHash('md5').update(shipped).digest('hex')}\n`);
  };
  const linkThere = () => fs.lstatSync(path.join(sb.root, DEFAULT_SITE_LINK), { throwIfNoEntry: false }) !== undefined;
  const calls = (command: string) => sb.calls(command).map((c) => c.args.join(' '));
  const install = async (...args: string[]) => {
    const r = await sb.install([...FIRST_INSTALL.args, '--json', ...args], FIRST_INSTALL.env);
    expect(r.exitCode, String(r.stderr).slice(-3000)).toBe(0);
    return JSON.parse(String(r.stdout)) as { steps: Array<{ id: string; status: string; reason?: string; changes?: string[] }> };
  };
  const step = (result: Awaited<ReturnType<typeof install>>) => result.steps.find((s) => s.id === 'nginx-hardening')!;

  beforeEach(async () => {
    sb = await makeSandbox();
  });
  afterEach(async () => sb.close());

  it('disables Debian\'s default site (the link; the file stays), writes the drop-in, restarts a running nginx once; a re-run changes nothing', async () => {
    debianDefaultSite();
    state('system-nginx.active');
    const first = await install();
    expect(step(first).status).toBe('changed');
    expect(step(first).changes).toEqual([expect.stringMatching(new RegExp(`^${DEFAULT_SITE_LINK}: remove the link`)), `${LAYOUT.nginxHardeningDropIn}: create`]);
    expect(linkThere()).toBe(false);
    expect(sb.read(DEFAULT_SITE_FILE)).toContain('listen 80 default_server');
    expect(sb.read(LAYOUT.nginxHardeningDropIn)).toBe(nginxHardeningDropIn().content);
    expect(sb.stat(LAYOUT.nginxHardeningDropIn)!.mode & 0o777).toBe(0o644);
    expect(JSON.parse(sb.read(LAYOUT.manifestFile)!).entries.map((e: { path: string }) => e.path)).toContain(LAYOUT.nginxHardeningDropIn);
    expect(JSON.parse(sb.read(LAYOUT.packagesFile)!).packages).toContain('nginx');
    const systemctl = calls('systemctl');
    expect(systemctl).toContain('daemon-reload');
    expect(systemctl.filter((c) => c === 'restart nginx')).toHaveLength(1);
    expect(calls('nginx')).toContain('-t');

    sb.clearCalls();
    const again = await install();
    expect(step(again).status).toBe('ok');
    expect(step(again).changes ?? []).toEqual([]);
    expect(calls('systemctl').filter((c) => /nginx/.test(c) && !/^is-/.test(c))).toEqual([]);
  });

  it('--check on a server without nginx plans both and changes nothing', async () => {
    debianDefaultSite();
    const r = await sb.install([...FIRST_INSTALL.args, '--check', '--json'], FIRST_INSTALL.env);
    const plan = JSON.parse(String(r.stdout));
    const planned = plan.steps.find((s: { id: string }) => s.id === 'nginx-hardening');
    // nginx is not installed yet in check mode (apt did not run): the install is about to bring it.
    expect(planned?.changes, JSON.stringify(planned)).toEqual([expect.stringMatching(new RegExp(`^${DEFAULT_SITE_LINK}: remove the link`)), `${LAYOUT.nginxHardeningDropIn}: create`]);
    expect(linkThere()).toBe(true);
    expect(sb.read(LAYOUT.nginxHardeningDropIn)).toBeUndefined();
  });

  it('a default site changed from Debian\'s is the customer\'s: left enabled; the drop-in is still written', async () => {
    debianDefaultSite('server {\n\tlisten 80 default_server;\n\troot /srv/shop;\n}\n', 'server {\n\tlisten 80 default_server;\n}\n');
    const first = await install();
    expect(step(first).changes).toEqual([`${LAYOUT.nginxHardeningDropIn}: create`]);
    expect(linkThere()).toBe(true);
  });

  it('nginx that was on the server before the install: skipped, its default site and unit left alone', async () => {
    debianDefaultSite();
    state('dpkg-installed', 'nginx\n');
    const first = await install();
    expect(step(first)).toMatchObject({ status: 'skipped' });
    expect(step(first).reason).toMatch(/nginx was on this server before the install/);
    expect(linkThere()).toBe(true);
    expect(sb.read(LAYOUT.nginxHardeningDropIn)).toBeUndefined();
  });

  it('nginx refusing to start with the drop-in: it is removed again, nginx started without it, the install fails saying so', async () => {
    state('system-nginx.active');
    await install();
    fs.rmSync(path.join(sb.root, LAYOUT.nginxHardeningDropIn));
    state('fail-restart-nginx', 'Job for nginx.service failed because the control process exited with error code.\n');
    sb.clearCalls();
    const r = await sb.install([...FIRST_INSTALL.args, '--json'], FIRST_INSTALL.env);
    expect(r.exitCode).toBe(1);
    const failed = JSON.parse(String(r.stdout)).steps.find((s: { id: string }) => s.id === 'nginx-hardening');
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/nginx did not start with its sandbox .*removed again.*Job for nginx\.service failed/s);
    expect(sb.read(LAYOUT.nginxHardeningDropIn)).toBeUndefined();
    // Written, reloaded, restart refused; removed, reloaded, started again without it.
    expect(calls('systemctl').filter((c) => c === 'daemon-reload' || c === 'restart nginx')).toEqual(['daemon-reload', 'restart nginx', 'daemon-reload', 'restart nginx']);
  });
});
