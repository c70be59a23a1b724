import { CancelledError } from '../errors.js';
import type { Prompter } from './resolve.js';

/** @inquirer/prompts on the terminal; secrets masked. Ctrl-C is a cancel, not a failure. */
export async function terminalPrompter(): Promise<Prompter> {
  const { input, password } = await import('@inquirer/prompts');
  const cancelled = (error: unknown): never => {
    if ((error as Error)?.name === 'ExitPromptError') throw new CancelledError('install cancelled at a prompt; nothing was changed');
    throw error;
  };
  return {
    input: (q) => input({ message: q.message, default: q.default, validate: q.validate }).catch(cancelled),
    secret: (q) => password({ message: q.message, mask: '*', validate: q.validate }).catch(cancelled),
  };
}

export async function confirm(message: string): Promise<boolean> {
  const { confirm: ask } = await import('@inquirer/prompts');
  return ask({ message, default: false }).catch((error: unknown) => {
    if ((error as Error)?.name === 'ExitPromptError') return false;
    throw error;
  });
}
