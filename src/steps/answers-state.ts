import { readStoredAnswers, storedAnswersContent } from '../answers/index.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureDirRecorded, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { STATE_DIR } from '../pipeline/manifest.js';
import type { InstallContext, Step } from '../pipeline/step.js';
import { desired, type WrittenFile } from '../pipeline/writes.js';

/** The answers a re-run offers (0600: the API key and the MCP token are in it). */
const ANSWERS_FILE: WrittenFile = { path: LAYOUT.answersFile, type: 'file', mode: 0o600, check: 'sha256' };

async function storedAnswersFile(host: Host, answers: InstallContext['answers']): Promise<DesiredFile> {
  return desired(ANSWERS_FILE, storedAnswersContent(answers, host.env, await readStoredAnswers(host)));
}

export const answersStateStep: Step = {
  id: 'answers',
  title: 'Save the answers for the next run',
  needs: ['package-lock'],
  writes: [ANSWERS_FILE],
  async check({ host, answers }) {
    const desired = await storedAnswersFile(host, answers);
    const change = await planFile(host, desired);
    return { changes: change ? [change] : [], data: desired };
  },
  async apply({ host }, plan) {
    await ensureDirRecorded(host, STATE_DIR);
    await writeDesired(host, plan.data as DesiredFile);
  },
};
