import type { Argv, CommandModule } from 'yargs';
import { withGlobals, type GlobalOptions } from './shared.js';

export interface GuardArgs extends GlobalOptions {
  check?: boolean;
}

export const guardCommand: CommandModule<object, GuardArgs> = {
  command: 'guard',
  describe: "Enforce the gateway routing (run hourly by cron): only the service's AI gateway, gateway.auth, the channel drop-in",
  builder: (y) =>
    withGlobals(y)
      .option('check', { type: 'boolean', describe: 'Show what would be restored; change nothing' })
      .example('$0 guard', 'Restore the routing now (what cron runs hourly via /usr/local/bin/service-guard.sh)')
      .example('$0 guard --check --json', 'Report drift without touching anything') as Argv<GuardArgs>,
  handler: async (argv) => {
    // The JSON documents' schemas only for --json.
    const [{ createHost }, { runGuard, formatRestoration }, { printLine }, json] = await Promise.all([
      import('../host/index.js'),
      import('../guard/index.js'),
      import('../output.js'),
      argv.json ? import('../json/index.js') : undefined,
    ]);
    const host = createHost({ verbose: argv.verbose, quiet: argv.json });
    const outcome = await runGuard(host, { check: Boolean(argv.check) });
    if (json) {
      json.emitJson(json.guardOutput, { ok: true, check: outcome.check, changed: outcome.restorations.length > 0, restarted: outcome.restarted, restorations: outcome.restorations });
      return;
    }
    for (const r of outcome.restorations) printLine(outcome.check ? `would restore ${r.what}: ${r.before} -> ${r.after}` : formatRestoration(r));
    if (outcome.restorations.length === 0) printLine('guard: nothing to restore');
    else if (!outcome.check) printLine(`guard: ${outcome.restorations.length} restored${outcome.restarted ? '; gateway restarted' : ''}`);
  },
};
