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
export const doctorCommand = stub('doctor', 'Diagnose a deployed server, with the fix for each problem (--fix applies the safe ones)', 'the operations issue');
export const guardCommand = stub('guard', "Enforce the gateway routing (run hourly by cron): only the service's AI gateway", 'the operations issue');
