import type { X509Certificate } from 'node:crypto';
import { createPrivateKey, x509Certificate } from '../host/crypto.js';

/** RSA 4096, ten years (3653 days covers the leap days), renewed 30 days before the end. */
export const TLS_KEY_BITS = 4096;
export const TLS_VALID_DAYS = 3653;
export const TLS_RENEW_BEFORE_DAYS = 30;
/** A kept certificate must have been issued for ten years (spec 5.2), leap days aside. */
export const TLS_MIN_PERIOD_DAYS = 3650;

const DAY_MS = 86_400_000;

/** A subjectAltName entry as openssl writes it in -addext: "DNS:name" or "IP:1.2.3.4". */
export type San = `DNS:${string}` | `IP:${string}`;

/** SANs of a certificate, in the "DNS:x" / "IP:y" form (IPv6 as Node prints it). */
export function certSans(cert: X509Certificate): Set<string> {
  const out = new Set<string>();
  for (const entry of (cert.subjectAltName ?? '').split(/,\s*/)) {
    const m = /^(DNS|IP Address):(.+)$/.exec(entry.trim());
    if (m) out.add(`${m[1] === 'DNS' ? 'DNS' : 'IP'}:${normalizeIp(m[2]!)}`);
  }
  return out;
}

/** IPv6 in its compressed lowercase form (Node prints SANs expanded: 0:0:0:0:0:0:0:1). */
function normalizeIp(value: string): string {
  if (!value.includes(':')) return value;
  try {
    return new URL(`http://[${value}]`).hostname.slice(1, -1);
  } catch {
    return value.toLowerCase();
  }
}

/** Whether the certificate is self-signed: its own issuer, signed with its own key. */
export function isSelfSigned(cert: X509Certificate): boolean {
  try {
    return cert.checkIssued(cert) && cert.verify(cert.publicKey);
  } catch {
    return false;
  }
}

/**
 * Why the certificate must be made again, or undefined when it is fine: missing,
 * unreadable, not RSA 4096, not self-signed, not issued for ten years, not yet valid,
 * expiring within 30 days, not matching its key, or lacking a wanted name. Extra
 * names are fine (an address that went away is no reason to break clients that
 * pinned the certificate).
 */
export function certProblem(certPem: string | undefined, keyPem: string | undefined, wanted: readonly string[], now: Date): string | undefined {
  if (certPem === undefined) return 'no certificate';
  if (keyPem === undefined) return 'no private key';
  let cert: X509Certificate;
  try {
    cert = x509Certificate(certPem);
  } catch {
    return 'the certificate is not readable PEM';
  }
  const details = cert.publicKey.asymmetricKeyDetails;
  if (cert.publicKey.asymmetricKeyType !== 'rsa' || details?.modulusLength !== TLS_KEY_BITS) return `the key is not RSA ${TLS_KEY_BITS}`;
  if (!isSelfSigned(cert)) return `the certificate is not self-signed (issuer: ${cert.issuer.replace(/\n/g, ', ')})`;
  const from = new Date(cert.validFrom).getTime();
  const to = new Date(cert.validTo).getTime();
  if ((to - from) / DAY_MS < TLS_MIN_PERIOD_DAYS) return `the certificate was issued for ${Math.floor((to - from) / DAY_MS)} days, not 10 years`;
  if (from > now.getTime()) return `the certificate is not valid before ${cert.validFrom}`;
  if (to - now.getTime() < TLS_RENEW_BEFORE_DAYS * DAY_MS) return `the certificate expires ${cert.validTo}`;
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'the certificate does not match the private key';
  } catch {
    return 'the private key is not readable';
  }
  const have = certSans(cert);
  const missing = wanted.filter((san) => !have.has(normalizeSan(san)));
  if (missing.length > 0) return `the certificate lacks ${missing.join(', ')}`;
  return undefined;
}

export function normalizeSan(san: string): string {
  return san.startsWith('IP:') ? `IP:${normalizeIp(san.slice(3))}` : san;
}

/** The -addext value for openssl req. */
export function sanExtension(sans: readonly string[]): string {
  return `subjectAltName=${sans.join(',')}`;
}
