import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { profileOverrides } from '../profile.js';
import { UsageError } from '../errors.js';
import { parseStoredAnswers, type Answers, type StoredAnswers } from './schema.js';

/**
 * The answers a re-run offers as defaults (0600: it holds the API key and MCP token).
 * Untrusted like any input from disk: a file that breaks the install's rules (hand
 * edited, say) is refused naming the file and field, never used as it is.
 */
export async function readStoredAnswers(host: Host): Promise<StoredAnswers | undefined> {
  const info = await host.files.stat(LAYOUT.answersFile);
  if (!info) return undefined;
  if (!info.isFile) throw new UsageError(`${LAYOUT.answersFile} is not a regular file`, 'move it aside and run the install again with the answers');
  if (info.size > 65_536) throw new UsageError(`${LAYOUT.answersFile} is larger than 64 KiB; it is not ours`, 'move it aside and run the install again with the answers');
  const text = await host.files.read(LAYOUT.answersFile);
  if (!text) return undefined;
  return parseStoredAnswers(text, LAYOUT.answersFile);
}

/**
 * answers.json as this run should leave it: the answers (never the single-use mesh
 * auth key) and the service profile overrides in effect, merged with those recorded
 * before so the hourly guard, run by cron without them, keeps using them.
 */
export function storedAnswersContent(answers: Answers, env: NodeJS.ProcessEnv, current: StoredAnswers | undefined): string {
  const { customerName, apiKey, modelId, meshHostname, mcpToken } = answers;
  const serviceOverrides = { ...current?.serviceOverrides, ...profileOverrides(env) };
  const stored: StoredAnswers = { customerName, apiKey, modelId, meshHostname, mcpToken };
  if (answers.channelHosts?.length) stored.channelHosts = answers.channelHosts;
  if (Object.keys(serviceOverrides).length > 0) stored.serviceOverrides = serviceOverrides;
  return `${JSON.stringify(stored, null, 2)}\n`;
}
