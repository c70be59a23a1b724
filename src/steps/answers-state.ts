import { readStoredAnswers, storedAnswersContent } from '../answers/index.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureDirRecorded, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import type { InstallContext, Step } from '../pipeline/step.js';

async function storedAnswersFile(host: Host, answers: InstallContext['answers']): Promise<DesiredFile> {
  return { path: LAYOUT.answersFile, content: storedAnswersContent(answers, host.env, await readStoredAnswers(host)), mode: 0o600 };
}

export const answersStateStep: Step = {
  id: 'answers',
  title: 'Save the answers for the next run',
  async check({ host, answers }) {
    const desired = await storedAnswersFile(host, answers);
    const change = await planFile(host, desired);
    return { changes: change ? [change] : [], data: desired };
  },
  async apply({ host }, plan) {
    await ensureDirRecorded(host, LAYOUT.stateDir, 0o700);
    await writeDesired(host, plan.data as DesiredFile);
  },
};
