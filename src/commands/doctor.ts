import type { Argv, CommandModule } from 'yargs';
import { withGlobals, type GlobalOptions } from './shared.js';

export interface DoctorArgs extends GlobalOptions {
  fix?: boolean;
  listChecks?: boolean;
  checks?: string[];
}

export const doctorCommand: CommandModule<object, DoctorArgs> = {
  command: 'doctor [checks..]',
  describe: 'Diagnose this server: one line per check with the fix in words (--fix applies the safe ones)',
  builder: (y) =>
    withGlobals(y)
      // The CLI's "last flag wins" setting would keep only the last of several check names.
      .parserConfiguration({ 'duplicate-arguments-array': true })
      .positional('checks', { describe: 'Run only these checks (see --list-checks)' })
      .option('fix', { type: 'boolean', describe: 'Apply the safe fixes (guard, drop-in + restart, nginx site, cron), then check again' })
      .option('list-checks', { type: 'boolean', describe: 'List the checks in order and exit' })
      .example('$0 doctor', 'Check everything; exit 1 if any check fails')
      .example('$0 doctor --fix', 'Repair what can be repaired safely, then re-check')
      .example('$0 doctor channel-drop-in nginx --json', 'Only these checks, as JSON (schema: docs/json.md)') as Argv<DoctorArgs>,
  handler: async (argv) => {
    // The JSON documents' schemas only for --json.
    const [{ createHost }, { runDoctor, formatReport, selectChecks, reportError }, { printLine }, json, report] = await Promise.all([
      import('../host/index.js'),
      import('../doctor/run.js'),
      import('../output.js'),
      argv.json ? import('../json/index.js') : undefined,
      argv.json ? import('../doctor/output.js') : undefined,
    ]);
    if (argv.listChecks) {
      const checks = selectChecks(argv.checks ?? []);
      if (json) return json.emitJson(json.doctorChecksOutput, { ok: true, checks: checks.map((c) => ({ id: c.id, title: c.title })) });
      for (const c of checks) printLine(`${c.id.padEnd(18)} ${c.title}`);
      return;
    }
    const host = createHost({ verbose: argv.verbose, quiet: argv.json });
    const result = await runDoctor(host, { names: argv.checks ?? [], fix: Boolean(argv.fix) });
    const error = reportError(result);
    if (json) json.emitJson(report!.doctorOutput, { ...result, ...(error ? { error } : {}) });
    else for (const line of formatReport(result)) printLine(line);
    if (!result.ok) process.exitCode = 1;
  },
};
