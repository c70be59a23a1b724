import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { certProblem, isSelfSigned, TLS_RENEW_BEFORE_DAYS } from '../../src/channel/tls.js';
import { X509Certificate } from 'node:crypto';
import { LAYOUT } from '../../src/layout.js';
import { PIN_CHANGE_NOTE, channelTlsStep } from '../../src/steps/channel.js';
import { sandboxContext } from '../helpers/install-ctx.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * What the install accepts as an existing channel certificate (real openssl): RSA 4096,
 * self-signed, issued for 10 years, valid now and for more than 30 days, matching its
 * key and carrying the wanted names. Anything else is made again, and the plan says why.
 */
const DAY = 86_400_000;
let dir = '';
const certs: Record<string, { cert: string; key: string }> = {};
const wanted = ['DNS:openclaw-acme', 'DNS:localhost', 'IP:127.0.0.1'];
const sans = 'subjectAltName=DNS:openclaw-acme,DNS:localhost,IP:127.0.0.1';

beforeAll(() => {
  dir = tempDir('sd-tls-');
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  // One RSA 4096 key for every 4096 case (making one takes seconds).
  run(['genrsa', '-out', 'k4096.pem', '4096']);
  run(['genrsa', '-out', 'k2048.pem', '2048']);
  const selfSigned = (name: string, key: string, days: string) => {
    run(['req', '-x509', '-key', key, '-sha256', '-days', days, '-subj', '/CN=openclaw-acme', '-addext', sans, '-out', `${name}.pem`]);
    certs[name] = { cert: fs.readFileSync(path.join(dir, `${name}.pem`), 'utf8'), key: fs.readFileSync(path.join(dir, key), 'utf8') };
  };
  selfSigned('good', 'k4096.pem', '3653');
  selfSigned('rsa2048', 'k2048.pem', '3653');
  selfSigned('oneYear', 'k4096.pem', '365');
  // Signed by a CA (RSA 4096 leaf key, 10 years): not self-signed.
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-days', '3653', '-subj', '/CN=Some CA', '-out', 'ca.pem']);
  run(['req', '-new', '-key', 'k4096.pem', '-subj', '/CN=openclaw-acme', '-out', 'leaf.csr']);
  fs.writeFileSync(path.join(dir, 'ext.cnf'), `${sans}\n`);
  run(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '3653', '-extfile', 'ext.cnf', '-out', 'caSigned.pem']);
  certs.caSigned = { cert: fs.readFileSync(path.join(dir, 'caSigned.pem'), 'utf8'), key: certs.good!.key };
}, 120_000);

describe('certProblem (the existing-certificate check)', () => {
  let now = new Date();
  beforeAll(() => {
    now = new Date();
  });
  it('keeps a self-signed RSA 4096 certificate issued for 10 years with the wanted names', () => {
    expect(certProblem(certs.good!.cert, certs.good!.key, wanted, now)).toBeUndefined();
    expect(isSelfSigned(new X509Certificate(certs.good!.cert))).toBe(true);
  });

  it.each([
    ['RSA 2048', 'rsa2048', /the key is not RSA 4096/],
    ['signed by a CA', 'caSigned', /not self-signed \(issuer: CN=Some CA\)/],
    ['issued for one year', 'oneYear', /issued for 365 days, not 10 years/],
  ])('re-issues one %s', (_, name, why) => {
    expect(certProblem(certs[name]!.cert, certs[name]!.key, wanted, now)).toMatch(why);
  });

  it('re-issues one within 30 days of its end, one not yet valid, one for another key, one lacking a name', () => {
    const cert = new X509Certificate(certs.good!.cert);
    const end = new Date(cert.validTo).getTime();
    expect(certProblem(certs.good!.cert, certs.good!.key, wanted, new Date(end - (TLS_RENEW_BEFORE_DAYS - 1) * DAY))).toMatch(/the certificate expires/);
    expect(certProblem(certs.good!.cert, certs.good!.key, wanted, new Date(end - (TLS_RENEW_BEFORE_DAYS + 1) * DAY))).toBeUndefined();
    expect(certProblem(certs.good!.cert, certs.good!.key, wanted, new Date(new Date(cert.validFrom).getTime() - DAY))).toMatch(/not valid before/);
    expect(certProblem(certs.good!.cert, certs.rsa2048!.key, wanted, now)).toMatch(/does not match the private key/);
    expect(certProblem(certs.good!.cert, certs.good!.key, [...wanted, 'DNS:other'], now)).toMatch(/lacks DNS:other/);
  });

  it('the TLS step plans a new certificate and says why (a 1-year certificate in place)', async () => {
    const ctx = sandboxContext();
    fs.mkdirSync(ctx.host.paths.real(LAYOUT.tlsDir), { recursive: true });
    fs.writeFileSync(ctx.host.paths.real(LAYOUT.tlsCert), certs.oneYear!.cert);
    fs.writeFileSync(ctx.host.paths.real(LAYOUT.tlsKey), certs.oneYear!.key, { mode: 0o600 });
    const plan = await channelTlsStep.check(ctx);
    expect(plan.changes.map((c) => c.summary)).toEqual([`new certificate: the certificate was issued for 365 days, not 10 years; ${PIN_CHANGE_NOTE}`]);
  });
});
