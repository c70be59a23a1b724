import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Protocol from '../../src/channel/protocol.js';
import { REPO } from '../helpers/binary.js';

export interface SignVector {
  name: string;
  token: string;
  method: string;
  path: string;
  timestamp: string;
  nonce: string;
  body: string;
  bodySha256: string;
  canonical: string;
  signature: string;
}
export interface VerifyVector {
  name: string;
  token: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  now: number;
  expect: string;
}

/** The JSON block between the test-vector markers of docs/channel-protocol.md. */
export function loadVectors(): { sign: SignVector[]; verify: VerifyVector[] } {
  const doc = fs.readFileSync(path.join(REPO, 'docs/channel-protocol.md'), 'utf8');
  const match = /<!-- test-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- test-vectors:end -->/.exec(doc);
  if (!match) throw new Error('docs/channel-protocol.md has no test-vector block');
  return JSON.parse(match[1]!);
}

/** The plugin's plain-JS protocol module (templates/service-channel.protocol.js), typed like its TS twin. */
export type PluginProtocol = typeof Protocol & {
  parseChannelRequest(text: string): { ok: true; value: { message: string; sessionId?: string } } | { ok: false; message: string };
};
export async function loadPluginProtocol(): Promise<PluginProtocol> {
  return (await import(pathToFileURL(path.join(REPO, 'templates/service-channel.protocol.js')).href)) as PluginProtocol;
}
