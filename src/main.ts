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
const isVersion = (arg: string | undefined): boolean => arg === '--version' || arg === '-V';
if (args.length === 1 && isVersion(args[0])) {
  process.stdout.write(`${SERVICE_DEPLOY_VERSION}\n`);
} else if (args.length === 2 && args.includes('--verbose') && args.some(isVersion)) {
  // The Node.js the binary is built on: its security releases are ours (docs/release.md).
  const { node, v8, openssl } = process.versions;
  process.stdout.write(`service-deploy ${SERVICE_DEPLOY_VERSION}\nNode.js ${node} linux-${process.arch} (V8 ${v8}, OpenSSL ${openssl})\n`);
} else if (args.length === 1 && BARE.includes(args[0]!)) {
  // `service-deploy guard` (the hourly cron), `doctor`, `status`: nothing to parse (bare.ts).
  void import('./bare.js').then(({ runBare }) => runBare(args[0]!));
} else {
  void import('./cli.js').then(({ main }) => main(args));
}
