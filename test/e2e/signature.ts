// The release signature on the suite's own OpenSSL (issue 15): install.sh checks
// SHA256SUMS.sig with `openssl dgst -sha256 -verify` (docs/release.md), which must work
// the same from OpenSSL 1.1.1 (bullseye) to 3.5 (trixie). Step 1 proves a good signature
// is accepted there; this proves every bad one is refused there, before the first
// install: nothing is downloaded past the signature and nothing is installed.
import { generateKeyPairSync, sign } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { serveDirectory } from '../helpers/https-server.js';
import type { World } from './harness.js';

const REFUSED = /is not signed by the service-deploy release key .*refusing to install anything from there/;

/** Releases whose SHA256SUMS.sig must be refused, each beside the real release's files. */
function badReleases(setup: string, root: string): Array<{ name: string; message: RegExp }> {
  const sums = fs.readFileSync(path.join(setup, 'SHA256SUMS'));
  const signature = fs.readFileSync(path.join(setup, 'SHA256SUMS.sig'));
  const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
  const ed25519 = generateKeyPairSync('ed25519').privateKey;
  const text = sums.toString('utf8');
  const variants: Array<{ name: string; sums: Buffer | string; sig?: Buffer; message: RegExp }> = [
    // Whoever controls the server rewrites a checksum after signing.
    { name: 'tampered-sums', sums: text.replace(/^[0-9a-f]{64}/, '0'.repeat(64)), sig: signature, message: REFUSED },
    { name: 'other-key', sums, sig: sign('sha256', sums, { key: other, dsaEncoding: 'der' }), message: REFUSED },
    // Raw Ed25519 bytes (what builds made before ECDSA) are no signature to this install.sh.
    { name: 'ed25519', sums, sig: sign(null, sums, ed25519), message: REFUSED },
    { name: 'unsigned', sums, message: /SHA256SUMS\.sig: releases are signed, and without the signature nothing is installed/ },
  ];
  for (const v of variants) {
    const dir = path.join(root, v.name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'SHA256SUMS'), v.sums);
    if (v.sig) fs.writeFileSync(path.join(dir, 'SHA256SUMS.sig'), v.sig);
    // The binaries are there too: a refusal must not fetch them.
    for (const f of fs.readdirSync(setup).filter((n) => n.startsWith('service-deploy-linux-'))) fs.symlinkSync(path.join(setup, f), path.join(dir, f));
  }
  expect(variants[0]!.sums, 'the tampered SHA256SUMS differs from the signed one').not.toEqual(text);
  return variants.map(({ name, message }) => ({ name, message }));
}

/**
 * The published install.sh (the real setup URL's, carrying the build's key) against each
 * bad release: exit 1 naming why, only SHA256SUMS and its signature requested, no binary
 * installed. Returns a line for the report: the suite's OpenSSL and what it refused.
 */
export async function signatureRefusedOnThisOpenssl(world: World): Promise<string> {
  const c = world.container;
  const root = fs.mkdtempSync(path.join(world.stage.work, 'bad-releases-'));
  const releases = badReleases(path.join(world.stage.work, 'setup'), root);
  const server = await serveDirectory(root, world.stage.ca);
  try {
    await world.forward(server.url);
    const openssl = (await c.ok('openssl version')).trim();
    await c.ok(`curl -fsSL --cacert /root/e2e/ca.pem -o /root/e2e/install-published.sh "${world.stage.setup.url}/install.sh"`);
    for (const release of releases) {
      const before = server.requests.length;
      const r = await c.sh(
        `SERVICE_SETUP_URL='${server.url}/${release.name}' SERVICE_CA_BUNDLE=/root/e2e/ca.pem SERVICE_ALLOW_UNSUPPORTED_OS=1 bash /root/e2e/install-published.sh --version`,
        { timeoutMs: 60_000 },
      );
      const what = `${release.name} on ${openssl}: exit ${r.exitCode}\n${r.stderr}`;
      expect(r.exitCode, what).toBe(1);
      expect(r.stderr, what).toMatch(release.message);
      expect(r.stderr, what).not.toContain('signature verified');
      // SHA256SUMS and its signature (404 where unsigned), never a binary.
      expect(server.requests.slice(before), what).toEqual([`/${release.name}/SHA256SUMS`, `/${release.name}/SHA256SUMS.sig`]);
      expect(await c.ok('test -e /usr/local/bin/service-deploy && echo present || echo absent'), what).toBe('absent\n');
    }
    await c.ok('rm -f /root/e2e/install-published.sh');
    return `${openssl}: ${releases.length} bad signatures refused (${releases.map((r) => r.name).join(', ')})`;
  } finally {
    await server.close();
  }
}
