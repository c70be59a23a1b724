import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FIRST_INSTALL, makeSandbox, snapshotFiles, type Sandbox } from '../helpers/sandbox.js';

/**
 * `install --channel-allow CIDR[,CIDR]` with the real binary in a sandbox (nft, ufw and
 * firewall-cmd are the stand-ins of test/helpers/standins: state in files, no kernel).
 */
const sandboxes: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

async function fresh(): Promise<Sandbox> {
  const sb = await makeSandbox();
  sandboxes.push(sb);
  return sb;
}

const ENV = 'root/.openclaw/channel.env';
const SITE = 'etc/nginx/conf.d/service-channel.conf';
const RULES = 'etc/service-deploy/channel-firewall.nft';

describe('install --channel-allow', () => {
  it('puts the list in channel.env, the nginx site and the nftables table; a re-run keeps it; `any` clears it', async () => {
    const sb = await fresh();
    const first = await sb.install([...FIRST_INSTALL.args, '--catalog', '--channel-allow', '203.0.113.7, 198.51.100.0/24'], FIRST_INSTALL.env);
    expect(first.exitCode, String(first.stderr)).toBe(0);
    expect(sb.read(ENV)).toMatch(/^SERVICE_CHANNEL_ALLOW=198\.51\.100\.0\/24,203\.0\.113\.7\/32$/m);
    expect(sb.read(SITE)).toMatch(/^\s*default 0;\n\s*127\.0\.0\.0\/8 1;\n\s*::1\/128 1;\n\s*198\.51\.100\.0\/24 1;\n\s*203\.0\.113\.7\/32 1;$/m);
    expect(sb.read(RULES)).toContain('elements = { 198.51.100.0/24, 203.0.113.7/32 }');
    expect(fs.readFileSync(path.join(sb.state, 'nft-table'), 'utf8')).toBe(sb.read(RULES));

    const again = await sb.install(['--catalog'], {});
    expect(JSON.parse(String(again.stdout)).recap.changed).toBe(0);
    expect(sb.read(ENV)).toContain('SERVICE_CHANNEL_ALLOW=198.51.100.0/24,203.0.113.7/32');

    const cleared = await sb.install(['--catalog', '--channel-allow', 'any'], {});
    expect(cleared.exitCode, String(cleared.stderr)).toBe(0);
    const changed = JSON.parse(String(cleared.stdout)).steps.filter((s: { status: string }) => s.status === 'changed').map((s: { id: string }) => s.id);
    expect(changed).toEqual(expect.arrayContaining(['channel-env', 'channel-nginx', 'channel-limits']));
    expect(sb.read(ENV)).not.toContain('SERVICE_CHANNEL_ALLOW');
    expect(sb.read(SITE)).toMatch(/^\s*default 1;$/m);
    expect(sb.read(RULES)).toContain('# No address allow list');
  });

  it.each([
    [['--catalog', '--channel-allow', '203.0.113.5/24'], /--channel-allow: "203\.0\.113\.5\/24" has host bits set \(the block is 203\.0\.113\.0\/24\)/],
    [['--catalog', '--channel-allow', 'portal.example.com'], /--channel-allow: "portal\.example\.com" is not an IPv4 or IPv6 address/],
    [['--catalog', '--channel-allow', '10.0.0.0/33'], /prefix length other than 0-32/],
    [['--catalog', '--channel-allow', ''], /--channel-allow: .*empty/],
    [['--channel-allow', '203.0.113.7'], /--channel-allow applies to the channel endpoint/],
  ])('%j: exit 2 naming the flag, nothing written', async (args, message) => {
    const sb = await fresh();
    const before = snapshotFiles(sb.root);
    const run = await sb.install([...FIRST_INSTALL.args, ...args], FIRST_INSTALL.env);
    expect(run.exitCode).toBe(2);
    expect(String(run.stderr)).toMatch(message);
    expect([...snapshotFiles(sb.root).keys()]).toEqual([...before.keys()]);
  });
});
