// Rotating the service API key the way docs/operator.md says ("Secrets and rotation"):
// the new key in the answers file, the install run again. The old key stays one of the
// run's secrets, so every later scan (argv, logs, world-readable files, the gateway's
// view of the disk, model requests) looks for it too.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { expect } from 'vitest';
import { log, type World } from './harness.js';

const ANSWERS = '/root/e2e/answers.env';

/**
 * A new service API key in the answers file the e2e's installs read (written from here,
 * never argv); the AI gateway stand-in accepts only the current key from now on.
 * Returns the old key.
 */
export function rotateApiKeyInAnswers(world: World): string {
  const file = world.container.hostPath(ANSWERS);
  const oldKey = world.secrets.apiKey!;
  const newKey = `pkt_e2e_${randomBytes(16).toString('hex')}`;
  const text = fs.readFileSync(file, 'utf8');
  expect(text, `${ANSWERS} has the key`).toContain(`SERVICE_API_KEY='${oldKey}'`);
  fs.writeFileSync(file, text.replace(`SERVICE_API_KEY='${oldKey}'`, `SERVICE_API_KEY='${newKey}'`), { mode: 0o600 });
  world.secrets.apiKeyRotatedOut = oldKey;
  world.secrets.apiKey = newKey;
  return oldKey;
}

/**
 * After the re-run: the new key in the secret source and the stored answers, the old one
 * in neither, nor in openclaw.json (which holds references only) or the gateway's
 * environment; then every file under the deployment's folders, /etc and the logs.
 */
export async function oldKeyGone(world: World, oldKey: string): Promise<{ filesWithOldKey: string[]; scanned: string[] }> {
  const c = world.container;
  const newKey = world.secrets.apiKey!;
  const read = (p: string) => fs.readFileSync(c.hostPath(p), 'utf8');
  const source = read('/var/lib/service-deploy/runtime-secrets/secrets.json');
  expect(source.includes(newKey), 'the secret source holds the new key').toBe(true);
  expect(source.includes(oldKey), 'the secret source still holds the old key').toBe(false);
  const answers = read('/var/lib/service-deploy/answers.json');
  expect(answers.includes(newKey), 'the stored answers hold the new key').toBe(true);
  expect(answers.includes(oldKey), 'the stored answers still hold the old key').toBe(false);
  const config = read('/root/.openclaw/openclaw.json');
  expect([oldKey, newKey].filter((k) => config.includes(k)), 'a key in openclaw.json (it holds references)').toEqual([]);
  const pid = Number(await world.userUnit('MainPID'));
  expect(pid).toBeGreaterThan(0);
  const inEnvironment = await c.sh(`tr '\\0' '\\n' </proc/${pid}/environ | grep -cF -f /dev/stdin; true`, { input: `${oldKey}\n${newKey}\n` });
  expect(inEnvironment.stdout.trim(), "variables holding a key in the gateway's environment").toBe('0');
  // Everywhere else the deployment keeps state (the key on stdin, never argv).
  const scanned = ['/root/.openclaw', '/var/lib/service-deploy', '/var/backups/service-deploy', '/etc', '/var/log', '/opt/service-deploy/plugins'];
  const r = await c.sh(`grep -rlF -f /dev/stdin ${scanned.join(' ')} 2>/dev/null; true`, { input: `${oldKey}\n`, timeoutMs: 120_000 });
  const filesWithOldKey = r.stdout.split('\n').filter(Boolean);
  log(`key rotation: the secret source and the stored answers hold the new key; openclaw.json and the gateway's environment neither; the old key in ${scanned.join(', ')}: ${filesWithOldKey.join(', ') || 'nowhere'}`);
  return { filesWithOldKey, scanned };
}
