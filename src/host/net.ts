import fs from 'node:fs';
import type http from 'node:http';
import { createHash } from './crypto.js';
import { DeployError } from '../errors.js';
import { placeholderEndpointHint } from '../input.js';

// Loaded on first use, not at start: a guard run and most doctor and install runs never
// download, and node:https alone costs a third of a bare Node start (it reads the CA store).
const builtin = <T>(name: string) => process.getBuiltinModule(name) as T;

export interface HttpOptions {
  /** Extra CA certificate file (PEM), e.g. a loopback test CA. */
  caFile?: string;
  timeoutMs?: number;
  headers?: Record<string, string>;
  method?: string;
  body?: string;
  /** Downloads: bytes received so far and the total when the server said it (content-length), as they arrive. */
  onProgress?: (received: number, total: number | undefined) => void;
  /** Answer a redirect with the 3xx itself: a request carrying a secret never follows one elsewhere. */
  noRedirect?: boolean;
}

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Network access: downloads (hashed while streaming, progress in bytes) and small requests. */
export class Net {
  async request(url: string, options: HttpOptions = {}): Promise<HttpResponse> {
    const res = await this.open(url, options);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') };
  }

  /** Streams `url` into the new file `realPath` (mode 0600, never an existing file or a link) and returns its SHA-256 (hex). */
  async download(url: string, realPath: string, options: HttpOptions = {}): Promise<string> {
    const res = await this.open(url, options);
    if (res.statusCode !== 200) {
      res.resume();
      throw new DeployError(`download ${url} failed: HTTP ${res.statusCode}`, placeholderEndpointHint(url) ?? 'check the network and the source, then run again');
    }
    // Opened before the first 'data' listener starts the response flowing.
    const handle = await fs.promises.open(realPath, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600).catch((error: unknown) => {
      res.resume();
      throw error;
    });
    const hash = createHash('sha256');
    const total = Number(res.headers['content-length']) || undefined;
    let received = 0;
    res.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      received += chunk.length;
      options.onProgress?.(received, total);
    });
    await builtin<typeof import('node:stream/promises')>('node:stream/promises').pipeline(res, handle.createWriteStream());
    return hash.digest('hex');
  }

  private open(url: string, options: HttpOptions): Promise<http.IncomingMessage> {
    const target = new URL(url);
    const client = builtin<typeof http>(target.protocol === 'https:' ? 'node:https' : 'node:http');
    const ca = options.caFile ? [fs.readFileSync(options.caFile)] : undefined;
    return new Promise((resolve, reject) => {
      const req = client.request(
        target,
        {
          method: options.method ?? 'GET',
          headers: options.headers,
          timeout: options.timeoutMs ?? 60_000,
          ...(ca ? { ca: [...tlsRootCertificates(), ...ca.map(String)] } : {}),
        },
        (res) => {
          const location = res.headers.location;
          if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && location && !options.noRedirect) {
            res.resume();
            const next = new URL(location, target);
            if (target.protocol === 'https:' && next.protocol !== 'https:') {
              reject(new DeployError(`${url} redirects to a non-https URL; refusing`));
              return;
            }
            this.open(next.toString(), options).then(resolve, reject);
            return;
          }
          resolve(res);
        },
      );
      req.on('timeout', () => req.destroy(new DeployError(`${url}: no answer within ${options.timeoutMs ?? 60_000} ms`)));
      req.on('error', (error) =>
        reject(error instanceof DeployError ? error : new DeployError(`${url}: ${(error as Error).message}`, placeholderEndpointHint(url) ?? 'check the network, then run again')),
      );
      req.end(options.body);
    });
  }
}

/** The extra CA is added to the public roots, not instead of them. */
function tlsRootCertificates(): string[] {
  const tls = process.getBuiltinModule('node:tls') as typeof import('node:tls');
  return [...tls.rootCertificates];
}
