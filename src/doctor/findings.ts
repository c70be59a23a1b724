import { LAYOUT } from '../layout.js';
import type { AnswersRead } from './context.js';
import { fail, type Finding } from './types.js';

// Findings several checks share (checks/ holds the checks only); openclaw.json's: config-findings.ts.

/**
 * The finding of a check that needs the stored answers and has none: missing, or a
 * file the install's strict reader refuses (a symbolic link, not valid), named with
 * the reader's own words and the command that makes a new one.
 */
export function answersFinding(read: AnswersRead, consequence: string): Finding {
  if (read.problem) {
    return fail(`${read.problem}: ${consequence}`, 'doctor does not read it: move it aside and run the install again with the answers', {
      commands: [`mv ${LAYOUT.answersFile} ${LAYOUT.answersFile}.broken`, 'service-deploy install'],
    });
  }
  return fail(`no stored answers (${LAYOUT.answersFile}): ${consequence}`, 'run `service-deploy install` (it asks for them and stores them 0600)', {
    commands: ['service-deploy install'],
  });
}
