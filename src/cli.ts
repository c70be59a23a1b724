import yargs from 'yargs';
import { CancelledError, DeployError, ExitCode, UsageError, exitCodeOf } from './errors.js';
import { printError } from './output.js';
import { VERSION } from './version.js';
import { commands } from './commands/index.js';
import { checkEnvironment } from './environment.js';

const EPILOG = `Exit codes: 0 done, 1 failed while working, 2 refused (bad usage, input or archive, or an
unsafe state; nothing was changed).
Secrets (API key, mesh auth key, MCP token, channel token) are read from environment
variables, files or prompts, never from flags: process arguments are visible to every user.
SERVICE_DEPLOY_ROOT=DIR maps files only: every path lands under DIR, but the commands run
(systemctl, apt-get, nginx...) are this machine's own. Use it with stand-in commands.
Docs: docs/quickstart.md and docs/operator.md (operators), README.md and docs/ (maintainers).`;

export function buildCli(args: string[]) {
  let cli = yargs(args)
    .scriptName('service-deploy')
    .usage('$0 [command] [options]\n\nDeploy and operate a private AI agent on this server.')
    .version(VERSION)
    .alias('version', 'V')
    .help()
    .alias('help', 'h')
    .strict()
    // A flag given twice takes its last value (scripts append overrides), not an array.
    .parserConfiguration({ 'duplicate-arguments-array': false })
    .recommendCommands()
    .wrap(Math.min(100, process.stdout.columns || 100))
    .epilog(EPILOG)
    // Every SERVICE_* variable is checked before any command runs (not for --help).
    .middleware(() => checkEnvironment(process.env))
    .exitProcess(false)
    .fail((message, error) => {
      // yargs calls this for parse errors (message) and for handler errors (error).
      if (error) throw error;
      throw new UsageError(message ?? 'invalid usage', 'see `service-deploy --help`');
    });
  for (const command of commands) cli = cli.command(command);
  return cli;
}

/** Parses, runs the matched command, and maps any error to a message and an exit code. */
export async function main(args: string[]): Promise<void> {
  try {
    await buildCli(args).parseAsync();
  } catch (error) {
    reportError(error);
    process.exitCode = exitCodeOf(error);
    return;
  }
  process.exitCode ??= ExitCode.ok;
}

export function reportError(error: unknown): void {
  if (error instanceof CancelledError) {
    printError(`Cancelled: ${error.message}`);
  } else if (error instanceof DeployError) {
    printError(`Error: ${error.message}`);
    if (error.hint) printError(`  -> ${error.hint}`);
  } else {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    printError(`Internal error: ${text}`);
    printError('  -> this is a bug in service-deploy; please report it with the output above');
  }
}
