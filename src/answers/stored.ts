import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { profileOverrides } from '../profile.js';
import { StoredAnswersSchema, type Answers, type StoredAnswers } from './schema.js';

/** The answers a re-run offers as defaults (0600: it holds the API key and MCP token). */
export async function readStoredAnswers(host: Host): Promise<StoredAnswers | undefined> {
  const text = await host.files.read(LAYOUT.answersFile);
  if (!text) return undefined;
  try {
    return StoredAnswersSchema.parse(JSON.parse(text));
  } catch {
    host.log.warn(`${LAYOUT.answersFile} is unreadable; ignoring it (the install asks again)`);
    return undefined;
  }
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
  if (Object.keys(serviceOverrides).length > 0) stored.serviceOverrides = serviceOverrides;
  return `${JSON.stringify(stored, null, 2)}\n`;
}
