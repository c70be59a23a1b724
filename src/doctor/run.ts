import { UsageError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { COMPONENT_NAMES, collectVersions, isBehind, versionsLine, type ComponentName, type Versions } from '../ops/versions.js';
import { DoctorContext, readAnswers } from './context.js';
import { CHECKS, FIXES } from './index.js';
import type { Check, CheckReport, CheckStatus } from './types.js';

export const DOCTOR_JSON_SCHEMA_VERSION = 1;

export interface FixReport {
  /** The fix's id (types.ts Fix). */
  id: string;
  title: string;
  ok: boolean;
  error?: string;
}

export interface DoctorReport {
  schemaVersion: number;
  ok: boolean;
  summary: Record<CheckStatus, number>;
  checks: CheckReport[];
  /** Present with --fix: the actions run, then `checks` is the re-check. */
  fixes?: FixReport[];
  /** With --fix: the checks before the fixes. */
  before?: CheckReport[];
  /** false: nothing of a deployment is on this server, and no check ran. */
  deployed: boolean;
  /** This binary's release and each component's installed version against its pin (also when nothing is deployed). */
  versions: DoctorVersions;
}

/** What runs here (ops/versions.ts), judged: `behind` when a component is not at the pin (or missing). */
export interface DoctorVersions {
  release: string;
  components: Record<ComponentName, { installed: string | null; pinned: string; behind: boolean }>;
}

function judgedVersions(versions: Versions): DoctorVersions {
  const components = Object.fromEntries(
    COMPONENT_NAMES.map((name) => {
      const c = versions.components[name];
      return [name, { installed: c.installed ?? null, pinned: c.pinned, behind: isBehind(c) }];
    }),
  ) as DoctorVersions['components'];
  return { release: versions.release, components };
}

/** The report's versions; with a context, Node's version is the one its node-runtime check reads (one read per pass). */
async function readVersions(host: Host, ctx?: DoctorContext): Promise<DoctorVersions> {
  return judgedVersions(await collectVersions(host, ctx ? { components: ctx.components, nodeVersion: async () => (await ctx.nodeVersion()).version } : {}));
}

/** What any install leaves, even a failed or damaged one: none of these means nothing was deployed here. */
const DEPLOYMENT_TRACES = [
  LAYOUT.answersFile,
  LAYOUT.manifestFile,
  LAYOUT.runtimeConfig,
  LAYOUT.gatewayUnitFile,
  LAYOUT.openclawProject,
  // OpenClaw as releases before the locks installed it (a global package in the Node prefix).
  `${LAYOUT.nodePrefix}/lib/node_modules/openclaw`,
  LAYOUT.nginxSite,
  LAYOUT.guardCron,
];

export async function nothingDeployed(host: Host): Promise<boolean> {
  for (const p of DEPLOYMENT_TRACES) if (await host.files.exists(p)) return false;
  return true;
}

export function selectChecks(names: readonly string[], all: readonly Check[] = CHECKS): readonly Check[] {
  if (names.length === 0) return all;
  const unknown = names.filter((n) => !all.some((c) => c.id === n));
  if (unknown.length > 0) throw new UsageError(`unknown check ${unknown.join(', ')}`, `the checks are: ${all.map((c) => c.id).join(', ')} (service-deploy doctor --list-checks)`);
  return all.filter((c) => names.includes(c.id));
}

/** Runs the checks in parallel; results keep the declared order; a throwing check is "crashed". */
export async function runChecks(ctx: DoctorContext, checks: readonly Check[]): Promise<CheckReport[]> {
  return Promise.all(
    checks.map(async (check): Promise<CheckReport> => {
      const started = performance.now();
      const base = { id: check.id, title: check.title };
      try {
        const result = await check.run(ctx);
        const durationMs = Math.round(performance.now() - started);
        if (!result) return { ...base, status: 'pass', message: 'ok', fixable: false, durationMs };
        if (result.kind === 'pass') return { ...base, status: 'pass', message: result.detail, fixable: false, durationMs };
        if (result.kind === 'skip') return { ...base, status: 'skip', message: result.reason, fixable: false, durationMs };
        return {
          ...base,
          status: result.severity,
          message: ctx.host.redactor.redact(result.message),
          fix: result.fix,
          ...(result.commands ? { commands: result.commands } : {}),
          fixable: result.action !== undefined,
          ...(result.action ? { action: result.action.id } : {}),
          durationMs,
        };
      } catch (error) {
        return {
          ...base,
          status: 'crashed',
          message: ctx.host.redactor.redact(`the check itself failed: ${error instanceof Error ? error.message : String(error)}`),
          fix: 'run `service-deploy doctor --verbose` and report this with its output',
          fixable: false,
          durationMs: Math.round(performance.now() - started),
        };
      }
    }),
  );
}

export function summarize(reports: readonly CheckReport[]): Record<CheckStatus, number> {
  const summary: Record<CheckStatus, number> = { pass: 0, warn: 0, fail: 0, skip: 0, crashed: 0 };
  for (const r of reports) summary[r.status]++;
  return summary;
}

export async function runDoctor(host: Host, options: { names: readonly string[]; fix: boolean }): Promise<DoctorReport> {
  const checks = selectChecks(options.names);
  // All checks on an empty server would be a page of FAILs saying one thing; named checks
  // still run (`doctor os` before a first install).
  if (options.names.length === 0 && (await nothingDeployed(host))) return { ...report([], await readVersions(host)), ok: false, deployed: false };
  // --fix repairs: it starts like an install, by removing what an interrupted run left.
  // (The repair code is loaded only for --fix: each fix loads its own when it runs.)
  const repair = options.fix ? await import('../install/leftovers.js') : undefined;
  if (repair) await repair.sweepLeftovers(host);
  // answers.json the strict reader refuses is a finding of the checks that need it (not exit 2): the profile then has no overrides.
  const stored = await readAnswers(host);
  const ctx = new DoctorContext(host, stored.answers?.serviceOverrides, stored);
  const ids = new Set(checks.map((c) => c.id));
  await ctx.startProbes(ids);
  const [first, versions] = await Promise.all([runChecks(ctx, checks), readVersions(host, ctx)]);
  if (!repair) return report(first, versions);
  const wanted = new Set(first.filter((r) => r.status === 'fail' || r.status === 'warn').flatMap((r) => (r.action ? [r.action] : [])));
  if (wanted.size === 0) return { ...report(first, versions), fixes: [] };
  const fixes: FixReport[] = [];
  for (const fix of FIXES) {
    // One named by no finding still runs when it says so (the gateway restart, after a fix changed what the gateway reads).
    if (!wanted.has(fix.id) && !fix.alsoWhen?.(ctx)) continue;
    try {
      if ((await fix.run(ctx)) !== false) fixes.push({ id: fix.id, title: fix.title, ok: true });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      fixes.push({ id: fix.id, title: fix.title, ok: false, error: host.redactor.redact(message) });
    }
    ctx.refresh();
  }
  await ctx.startProbes(ids);
  const [after, versionsAfter] = await Promise.all([runChecks(ctx, checks), readVersions(host, ctx)]);
  return { ...report(after, versionsAfter), fixes, before: first };
}

function report(checks: CheckReport[], versions: DoctorVersions): DoctorReport {
  const summary = summarize(checks);
  return { schemaVersion: DOCTOR_JSON_SCHEMA_VERSION, ok: summary.fail === 0 && summary.crashed === 0, summary, checks, deployed: true, versions };
}

export const NOT_DEPLOYED = {
  message: 'Nothing deployed here: no service-deploy installation was found on this server.',
  hint: 'run `service-deploy install`; `service-deploy doctor os` checks that this server is supported',
};

/** `error` of a report that is not ok (docs/json.md: doctor). */
export function reportError(result: DoctorReport): { code: string; message: string; hint: string; exitCode: number } | undefined {
  if (result.ok) return undefined;
  if (!result.deployed) return { code: 'not-deployed', ...NOT_DEPLOYED, exitCode: 1 };
  const bad = result.checks.filter((c) => c.status === 'fail' || c.status === 'crashed').map((c) => c.id);
  const fixable = result.checks.some((c) => c.fixable && c.status === 'fail');
  return {
    code: 'checks-failed',
    message: `${bad.length} check${bad.length === 1 ? '' : 's'} failed: ${bad.join(', ')}`,
    hint: `each check's fix says what to do${fixable && !result.fixes ? '; `service-deploy doctor --fix` repairs the fixable ones' : ''}`,
    exitCode: 1,
  };
}

const LABEL: Record<CheckStatus, string> = { pass: 'pass', warn: 'warn', fail: 'FAIL', skip: 'skip', crashed: 'CRASH' };

/** The human report: one line per check, its fix and commands under it, then a summary. */
export function formatReport(result: DoctorReport): string[] {
  if (!result.deployed) return [NOT_DEPLOYED.message, `  -> ${NOT_DEPLOYED.hint}`];
  const lines: string[] = [];
  if (result.fixes) {
    if (result.fixes.length === 0) lines.push('nothing to fix automatically');
    for (const f of result.fixes) lines.push(`${f.ok ? 'fixed' : 'fix failed'}: ${f.title}${f.error ? ` (${f.error})` : ''}`);
    if (result.fixes.length) lines.push('re-check:');
  }
  const width = Math.max(...result.checks.map((c) => c.id.length), 8);
  for (const c of result.checks) {
    lines.push(`${LABEL[c.status].padEnd(5)} ${c.id.padEnd(width)}  ${c.message}`);
    if (c.fix && c.status !== 'pass' && c.status !== 'skip') {
      lines.push(`${' '.repeat(width + 8)}fix: ${c.fix}${c.fixable ? ' [--fix]' : ''}`);
      for (const cmd of c.commands ?? []) lines.push(`${' '.repeat(width + 8)}  $ ${cmd}`);
    }
  }
  lines.push(versionsLine(result.versions));
  const s = result.summary;
  const fixable = result.checks.filter((c) => c.fixable && (c.status === 'fail' || c.status === 'warn')).length;
  lines.push(
    `summary: ${s.pass} pass, ${s.warn} warn, ${s.fail} fail, ${s.skip} skip${s.crashed ? `, ${s.crashed} crashed` : ''}` +
      (fixable > 0 && !result.fixes ? ` (${fixable} fixable: run \`service-deploy doctor --fix\`)` : ''),
  );
  return lines;
}
