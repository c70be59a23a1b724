import type * as Crypto from 'node:crypto';

/**
 * node:crypto's functions, the module loaded on first call. Loading it starts OpenSSL
 * (a fifth of a bare Node start), and most modules that use it do so now and then (a
 * temp file's random name, a signature, a certificate) while sharing chunks with code
 * that every guard, doctor and install start runs: a no-op guard never loads it.
 */
const crypto = () => process.getBuiltinModule('node:crypto') as typeof Crypto;

export const createHash: typeof Crypto.createHash = (...args) => crypto().createHash(...args);
export const createHmac: typeof Crypto.createHmac = (...args) => crypto().createHmac(...args);
export const randomBytes = ((...args: Parameters<typeof Crypto.randomBytes>) => crypto().randomBytes(...args)) as typeof Crypto.randomBytes;
export const timingSafeEqual: typeof Crypto.timingSafeEqual = (...args) => crypto().timingSafeEqual(...args);
export const createPrivateKey: typeof Crypto.createPrivateKey = (...args) => crypto().createPrivateKey(...args);
/** `new X509Certificate(pem)`. */
export const x509Certificate = (pem: string | Buffer): Crypto.X509Certificate => new (crypto().X509Certificate)(pem);
