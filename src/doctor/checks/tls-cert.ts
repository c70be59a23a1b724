import type { X509Certificate } from 'node:crypto';
import { createPrivateKey, x509Certificate } from '../../host/crypto.js';
import { Inspector } from '../../host/inspect.js';
import { LAYOUT } from '../../layout.js';
import { TLS_KEY_BITS, TLS_MIN_PERIOD_DAYS, TLS_RENEW_BEFORE_DAYS, isSelfSigned } from '../../channel/tls.js';
import { octal } from '../../pipeline/files.js';
import { NOT_CONFIGURED } from './channel-env.js';
import { fail, pass, skip, warn, type Check } from '../types.js';
import { filesFix } from './files.js';

const DAY_MS = 86_400_000;
const RENEW = 'service-deploy install --channel';
const RENEW_FIX = 're-run the install with --channel: it makes a new self-signed certificate (the portal must then trust the new one)';

export const tlsCertCheck: Check = {
  id: 'tls-cert',
  title: 'Channel TLS certificate valid, key matches, key root-only',
  async run(ctx) {
    const { host } = ctx;
    if (!(await ctx.channelConfigured())) return skip(NOT_CONFIGURED);
    const [pem, keyInfo, keyPem] = await Promise.all([host.files.read(LAYOUT.tlsCert), host.files.stat(LAYOUT.tlsKey), host.files.read(LAYOUT.tlsKey)]);
    if (pem === undefined) return fail(`${LAYOUT.tlsCert} is missing: nginx cannot serve the channel`, RENEW_FIX, { commands: [RENEW] });
    if (!keyInfo) return fail(`${LAYOUT.tlsKey} is missing: nginx cannot serve the channel`, RENEW_FIX, { commands: [RENEW] });
    const inspector = new Inspector(host.paths);
    for (const p of [LAYOUT.tlsKey, LAYOUT.tlsCert]) {
      const info = await inspector.info(p);
      if (info?.type === 'symlink') return fail(`${p} is a symbolic link to ${info.target}, not the file the install made`, RENEW_FIX, { commands: [`rm ${p}`, RENEW] });
    }
    let cert: X509Certificate;
    try {
      cert = x509Certificate(pem);
    } catch {
      return fail(`${LAYOUT.tlsCert} is not a readable PEM certificate`, RENEW_FIX, { commands: [RENEW] });
    }
    const now = host.now().getTime();
    const daysLeft = Math.floor((new Date(cert.validTo).getTime() - now) / DAY_MS);
    if (new Date(cert.validFrom).getTime() > now) return fail(`the certificate is not valid before ${cert.validFrom} (check the server clock)`, 'fix the clock (timedatectl), or make a new certificate', { commands: ['timedatectl', RENEW] });
    if (daysLeft < 0) return fail(`the certificate expired ${cert.validTo}: the portal's calls fail TLS`, RENEW_FIX, { commands: [RENEW] });
    let matches = false;
    try {
      matches = cert.checkPrivateKey(createPrivateKey(keyPem ?? ''));
    } catch {
      // not a readable key: reported below
    }
    if (!matches) return fail(`${LAYOUT.tlsKey} is not the private key of ${LAYOUT.tlsCert}: nginx cannot serve the channel`, RENEW_FIX, { commands: [RENEW] });
    if (keyInfo.mode !== 0o600 || (process.getuid?.() === 0 && keyInfo.uid !== 0)) {
      const byFiles = await ctx.repairedByFiles(LAYOUT.tlsKey);
      const what = keyInfo.mode !== 0o600 ? `mode ${octal(keyInfo.mode)}` : `owned by uid ${keyInfo.uid}`;
      return fail(`${LAYOUT.tlsKey} is ${what}: the private key is open to other users`, 'make it root-only (0600, root)', {
        commands: byFiles ? ['service-deploy doctor --fix'] : [`chmod 600 ${LAYOUT.tlsKey}`, `chown root:root ${LAYOUT.tlsKey}`],
        ...(byFiles ? { action: filesFix } : {}),
      });
    }
    const bits = cert.publicKey.asymmetricKeyDetails?.modulusLength;
    if (cert.publicKey.asymmetricKeyType !== 'rsa' || bits !== TLS_KEY_BITS) {
      return warn(`the certificate key is ${cert.publicKey.asymmetricKeyType} ${bits ?? '?'}, the spec asks for RSA ${TLS_KEY_BITS}`, RENEW_FIX, { commands: [RENEW] });
    }
    if (!isSelfSigned(cert)) return warn(`the certificate is not self-signed (issuer: ${cert.issuer.replace(/\n/g, ', ')}); the spec asks for a self-signed one, and the next install replaces it`, RENEW_FIX, { commands: [RENEW] });
    const period = Math.floor((new Date(cert.validTo).getTime() - new Date(cert.validFrom).getTime()) / DAY_MS);
    if (period < TLS_MIN_PERIOD_DAYS) return warn(`the certificate was issued for ${period} days, the spec asks for 10 years; the next install replaces it`, RENEW_FIX, { commands: [RENEW] });
    if (daysLeft < TLS_RENEW_BEFORE_DAYS) return warn(`the certificate expires in ${daysLeft} days (${cert.validTo})`, RENEW_FIX, { commands: [RENEW] });
    return pass(`RSA ${bits}, valid until ${cert.validTo} (${daysLeft} days)`);
  },
};
