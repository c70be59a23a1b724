import yargs from 'yargs';
import { ArgumentError, ExitCode, exitCodeOf } from './errors.js';
import { jsonDocumentsPrinted, reportError, resetJsonDocuments, wantsJson } from './output.js';
import { VERSION } from './version.js';
import { commands } from './commands/index.js';
import { checkEnvironment } from './environment.js';
import type { FallbackCompletionFunction } from 'yargs';
import { voiceProviders } from './profile-values.js';

const EPILOG = `Exit codes: 0 done, 1 failed while working, 2 refused (bad usage, input or archive, or an
unsafe state; nothing was changed).
Secrets (API key, mesh auth key, MCP token, channel token) are read from environment
variables, files or prompts, never from flags: process arguments are visible to every user.
SERVICE_DEPLOY_ROOT=DIR maps files only: every path lands under DIR, but the commands run
(systemctl, apt-get, nginx...) are this machine's own. Use it with stand-in commands.
Docs: docs/quickstart.md and docs/operator.md (operators), README.md and docs/ (maintainers).`;

/** Flags whose values are completed from the service profile (environment overrides applied). */
const VALUE_COMPLETIONS: Record<string, () => string[]> = {
  '--provider': () => voiceProviders(),
};

/** Completes the values of VALUE_COMPLETIONS' flags; yargs completes commands, flags and choices. */
function completeValues(args: string[]): FallbackCompletionFunction {
  return (current, _argv, defaults, done) => {
    const words = args.slice(args.indexOf('--get-yargs-completions') + 1);
    const values = VALUE_COMPLETIONS[words.at(-2) ?? ''];
    if (values) return done(values().filter((value) => value.startsWith(current)));
    defaults((_error, completions) => done(completions ?? []));
  };
}

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
    // TAB in bash runs `service-deploy --get-yargs-completions WORDS...` (the script printed
    // by the `completion` command below): commands, subcommands, flags, choices. yargs' own
    // `completion` command would go on to strict validation with exitProcess(false).
    .completion('__completion-script', false, completeValues(args))
    .wrap(Math.min(100, process.stdout.columns || 100))
    .epilog(EPILOG)
    // Every SERVICE_* variable is checked before any command runs (not for --help).
    .middleware(() => checkEnvironment(process.env))
    .exitProcess(false)
    .fail((message, error) => {
      // yargs calls this for parse errors (message) and for handler errors (error).
      if (error) throw error;
      throw usageError(message ?? 'invalid usage', args);
    });
  for (const command of commands) cli = cli.command(command);
  const shell = cli;
  return cli.command('completion', 'Print the bash completion script: service-deploy completion >> ~/.bashrc', {}, () => {
    shell.showCompletionScript();
  });
}

/** Parses, runs the matched command, and maps any error to a message and an exit code. */
export async function main(args: string[]): Promise<void> {
  resetJsonDocuments();
  try {
    await buildCli(args).parseAsync();
  } catch (error) {
    reportError(error, args.includes('--verbose'));
    process.exitCode = exitCodeOf(error);
    // --json: JSON on stdout whatever happens. A command that already printed its own
    // document (with ok: false and its error) is not printed over.
    if (wantsJson(args, commandPath(args) === 'install') && jsonDocumentsPrinted() === 0) (await import('./json/index.js')).emitError(error);
    return;
  }
  process.exitCode ??= ExitCode.ok;
}

const SUBCOMMANDS: Record<string, string[]> = {
  partner: ['onboard', 'map-agent', 'add-member', 'onboard-flow'],
  devices: ['list', 'approve'],
  gateway: ['status', 'restart', 'logs'],
  channel: ['show'],
};

/** The command a command line names (`render`, `partner onboard`), for messages; install is the default. */
export function commandPath(args: readonly string[]): string {
  const words = args.filter((arg) => !arg.startsWith('-'));
  const top = commands.map((c) => String(Array.isArray(c.command) ? c.command[0] : c.command).split(' ')[0]);
  if (!words[0] || !top.includes(words[0])) return 'install';
  return words[1] && SUBCOMMANDS[words[0]]?.includes(words[1]) ? `${words[0]} ${words[1]}` : words[0];
}

/** yargs' parse errors, reworded to name the flag and the command (exit 2, code usage). */
function usageError(message: string, args: readonly string[]): ArgumentError {
  const command = commandPath(args);
  const hint = `see \`service-deploy ${command} --help\` for its options; nothing was changed`;
  const unknown = /^Unknown arguments?: (.+)$/s.exec(message);
  if (!unknown) return new ArgumentError(message, hint);
  // yargs names an unknown --reset-clean twice (reset-clean, resetClean): once is enough.
  const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  const names = [...new Set(unknown[1]!.split(', ').map((name) => (given(kebab(name)) ? kebab(name) : name)))];
  function given(name: string) {
    return args.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`) || arg === `--no-${name}` || arg === `-${name}`);
  }
  // As typed: `--no-such-flag` is reported by yargs as `such-flag`.
  const shown = (name: string) => (name.length === 1 ? `-${name}` : args.includes(`--no-${name}`) && !args.some((a) => a === `--${name}` || a.startsWith(`--${name}=`)) ? `--no-${name}` : `--${name}`);
  const flags = names.filter(given).map(shown);
  const words = names.filter((name) => !given(name)).map((name) => JSON.stringify(name));
  const parts = [
    ...(flags.length ? [`${flags.join(', ')} ${flags.length > 1 ? 'are not options' : 'is not an option'} of \`${command}\``] : []),
    ...(words.length ? [`unexpected argument${words.length > 1 ? 's' : ''} ${words.join(', ')} for \`${command}\``] : []),
  ];
  return new ArgumentError(parts.join('; '), hint);
}
