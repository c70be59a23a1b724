import type { CommandModule } from 'yargs';
import { doctorCommand } from './commands/doctor.js';
import { guardCommand } from './commands/guard.js';
import { statusCommand } from './commands/status.js';
import { checkEnvironment } from './environment.js';
import { ExitCode, exitCodeOf } from './errors.js';
import { reportError } from './output.js';

/**
 * Commands run bare (no flag, no argument) skip the CLI parser: with nothing to parse,
 * yargs would only hand the command the same all-default options, after loading and
 * building the whole command line first. The hourly cron runs exactly `service-deploy
 * guard` on every server; `doctor` and `status` are usually typed bare. Any flag or
 * argument goes through cli.ts as usual.
 */
export const BARE_COMMANDS: Readonly<Record<string, CommandModule<object, any>>> = {
  guard: guardCommand,
  doctor: doctorCommand,
  status: statusCommand,
};

/** Runs `name` as cli.ts would with no options: the environment checked first, the same error handling. */
export async function runBare(name: string): Promise<void> {
  try {
    checkEnvironment(process.env);
    await BARE_COMMANDS[name]!.handler({ _: [name], $0: 'service-deploy' });
  } catch (error) {
    reportError(error);
    process.exitCode = exitCodeOf(error);
    return;
  }
  process.exitCode ??= ExitCode.ok;
}
