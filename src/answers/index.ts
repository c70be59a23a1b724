/**
 * The install's answers, one door: the six answers' schema and validation, their
 * resolution (flags < env < files < prompts, see resolve.ts), the terminal prompter,
 * and the copy kept on the server for the next run. Nothing else in src/ reaches
 * into this folder's files.
 */
export {
  ANSWER_FIELDS,
  ANSWER_SOURCES,
  SECRET_FIELDS,
  StoredAnswersSchema,
  parseStoredAnswers,
  ANSWER_MAX_LENGTH,
  defaultMeshHostname,
  slugify,
  validateAnswer,
  type AnswerField,
  type Answers,
  type StoredAnswers,
} from './schema.js';
export { resolveAnswers, resolveDeploymentInputs, type AnswerFlags, type AnswerInputs, type DeploymentInputs, type Prompter } from './resolve.js';
export { readStoredAnswers, storedAnswersContent } from './stored.js';
export { confirm, terminalPrompter } from './prompter.js';
