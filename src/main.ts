/**
 * Entry point of the single executable. Kept tiny: `--version` answers before the
 * rest of the program is even initialised (cold start is a feature), and a closed
 * stdout (`service-deploy --help | head -1`) ends the process quietly.
 */
declare const SERVICE_DEPLOY_VERSION: string;

for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

/** Kept equal to the keys of BARE_COMMANDS in bare.ts (a test checks). */
const BARE = ['guard', 'doctor', 'status'];

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${SERVICE_DEPLOY_VERSION}\n`);
} else if (args.length === 1 && BARE.includes(args[0]!)) {
  // `service-deploy guard` (the hourly cron), `doctor`, `status`: nothing to parse (bare.ts).
  void import('./bare.js').then(({ runBare }) => runBare(args[0]!));
} else {
  void import('./cli.js').then(({ main }) => main(args));
}
