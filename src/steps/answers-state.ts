import { StoredAnswersSchema, type StoredAnswers } from '../config/answers.js';
import type { Host } from '../host/index.js';
import type { Step } from '../install/step.js';
import { LAYOUT } from '../layout.js';
import { profileOverrides } from '../profile.js';
import { planFile, writeDesired } from './lib/files.js';

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

async function storedAnswersFile(host: Host, answers: StoredAnswers) {
  const { customerName, apiKey, modelId, meshHostname, mcpToken } = answers;
  const serviceOverrides = { ...(await readStoredAnswers(host))?.serviceOverrides, ...profileOverrides(host.env) };
  const stored: StoredAnswers = { customerName, apiKey, modelId, meshHostname, mcpToken };
  if (Object.keys(serviceOverrides).length > 0) stored.serviceOverrides = serviceOverrides;
  return { path: LAYOUT.answersFile, content: `${JSON.stringify(stored, null, 2)}\n`, mode: 0o600 };
}

export const answersStateStep: Step = {
  id: 'answers',
  title: 'Save the answers for the next run',
  async check({ host, answers }) {
    const change = await planFile(host, await storedAnswersFile(host, answers));
    return { changes: change ? [change] : [] };
  },
  async apply({ host, answers }) {
    await host.files.ensureDir(LAYOUT.stateDir, 0o700);
    await writeDesired(host, await storedAnswersFile(host, answers));
  },
};
