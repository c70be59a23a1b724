import yargs from 'yargs';
import { ArgumentError, ExitCode, exitCodeOf } from './errors.js';
import { jsonDocumentsPrinted, reportError, resetJsonDocuments, wantsJson } from './output.js';
import { VERSION } from './version.js';
import { commands } from './commands/index.js';
import { checkEnvironment } from './environment.js';
import type { FallbackCompletionFunction } from 'yargs';
import { voiceProviders } from './profile-values.js';
import { RENDER_TARGETS } from './install/render-targets.js';

const EPILOG = `Exit codes: 0 done, 1 failed while working, 2 refused (bad usage, input or archive, or an
unsafe state; nothing was changed).
Secrets (API key, mesh auth key, MCP token, channel token) are read from environment
variables, files or prompts, never from flags: process arguments are visible to every user.
SERVICE_DEPLOY_ROOT=DIR maps files only: every path lands under DIR, but the commands run
(systemctl, apt-get, nginx...) are this machine's own. Use it with stand-in commands.
On this server: \`service-deploy COMMAND --help\` for each command, \`service-deploy doctor\` to
find and fix problems, \`service-deploy status\` for what is deployed. The guides are not
installed here: quickstart.md and operator.md in the docs/ folder of the service-deploy
sources (README.md there for maintainers).`;

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
    // yargs offers a one-letter alias with two dashes (--y) after `--`: it is -y.
    defaults((_error, completions) => done((completions ?? []).filter((word) => !/^--[^-]$/.test(word.split(':')[0]!))));
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
      // yargs calls this for parse errors (message) and for handler errors (error); its
      // own YError is a parse error too (a flag that takes a value given none).
      if (error && error.name !== 'YError') throw error;
      throw usageError(message ?? error?.message ?? 'invalid usage', args);
    });
  for (const command of commands) cli = cli.command(command);
  const shell = cli;
  return cli.command(
    'completion [shell]',
    'Print the shell completion script: service-deploy completion >> ~/.bashrc (zsh: service-deploy completion zsh >> ~/.zshrc)',
    (y) => y.positional('shell', { type: 'string', choices: ['bash', 'zsh'], default: 'bash', describe: 'The shell the script is for' }),
    (argv) => {
      if (argv.shell === 'zsh') zshCompletionScript();
      else shell.showCompletionScript();
    },
  );
}

/**
 * yargs writes the zsh script (and zsh's `name:description` completions) when it sees zsh
 * in SHELL or ZSH_NAME as it starts: a parser made for that purpose only, so the script
 * does not depend on the shell this command happens to run in.
 */
function zshCompletionScript(): void {
  const saved = process.env.ZSH_NAME;
  process.env.ZSH_NAME = 'zsh';
  try {
    // Its `completion` names the command in the script's "Installation:" line.
    yargs([]).scriptName('service-deploy').completion('completion zsh', false).showCompletionScript();
  } finally {
    if (saved === undefined) delete process.env.ZSH_NAME;
    else process.env.ZSH_NAME = saved;
  }
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
  devices: ['list', 'approve', 'remove'],
  gateway: ['status', 'restart', 'logs'],
  channel: ['show'],
};

/** Every top-level command name: the registry's and `completion` (declared in buildCli). */
function commandNames(): string[] {
  return [...commands.map((c) => String(Array.isArray(c.command) ? c.command[0] : c.command).split(' ')[0]!), 'completion'];
}

/** The command a command line names (`render`, `partner onboard`), for messages; install is the default. */
export function commandPath(args: readonly string[]): string {
  const words = args.filter((arg) => !arg.startsWith('-'));
  if (!words[0] || !commandNames().includes(words[0])) return 'install';
  return words[1] && SUBCOMMANDS[words[0]]?.includes(words[1]) ? `${words[0]} ${words[1]}` : words[0];
}

/** What each command's missing positional argument is, for yargs' "Not enough non-option arguments". */
const POSITIONALS: Record<string, string> = {
  restore: 'ARCHIVE, the backup to put back: /tmp/openclaw-backup-*.tar.gz (written by --reset-clean and uninstall) or a copy in /var/backups/service-deploy',
  render: `FILE, one of: ${RENDER_TARGETS.join(', ')}`,
  'devices approve': 'ID, the request id `service-deploy devices list` shows',
  'devices remove': 'DEVICE_ID, the id of a paired device `service-deploy devices list` shows',
  gateway: 'ACTION: status, restart or logs',
  channel: 'ACTION: show',
};

/** The command name closest to a mistyped one (at most two edits apart), if any. */
function closestCommand(word: string, names: readonly string[] = commandNames()): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of names) {
    const d = editDistance(word.toLowerCase(), name);
    if (d < bestDistance) [best, bestDistance] = [name, d];
  }
  return best;
}

/** Levenshtein distance (insert, delete, replace one character). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/** yargs' parse errors, reworded to name the flag and the command (exit 2, code usage). */
function usageError(message: string, args: readonly string[]): ArgumentError {
  const command = commandPath(args);
  const hint = `see \`service-deploy ${command} --help\` for its options; nothing was changed`;
  if (/^Not enough non-option arguments/.test(message) && POSITIONALS[command]) {
    return new ArgumentError(`\`service-deploy ${command}\` needs ${POSITIONALS[command]}`, `see \`service-deploy ${command} --help\`; nothing was changed`);
  }
  const valueless = /^Not enough arguments following: (.+)$/.exec(message);
  if (valueless) return new ArgumentError(`--${valueless[1]} needs a value`, hint);
  const unknown = /^Unknown arguments?: (.+)$/s.exec(message);
  if (!unknown) return new ArgumentError(message, hint);
  // The default command takes no words: a first word it does not know is a mistyped command.
  const first = args[0];
  if (command === 'install' && first !== undefined && !first.startsWith('-') && first !== 'install') {
    const like = closestCommand(first);
    return new ArgumentError(
      `${JSON.stringify(first)} is not a command${like ? `; did you mean \`${like}\`?` : ''}`,
      `\`service-deploy --help\` lists the commands (${commandNames().join(', ')}); nothing was changed`,
    );
  }
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
