import type { CommandModule } from 'yargs';
import { notImplemented, withGlobals } from './shared.js';

function stub(command: string, describe: string, issue: string): CommandModule {
  return {
    command,
    describe,
    builder: (y) => withGlobals(y),
    handler: () => notImplemented(command, issue),
  };
}

export const statusCommand = stub('status', 'Show what is deployed on this server (components, versions, services)', 'the operations issue');
