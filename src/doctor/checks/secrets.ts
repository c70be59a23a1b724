import { loadavg } from 'node:os';
import { LAYOUT } from '../../layout.js';
import { SECRETS_AUDIT_TIMEOUT_MS } from '../probes.js';
import { planRuntimeSecrets } from '../../steps/runtime-secrets.js';
import { fail, pass, skip, warn, type Check } from '../types.js';
import { listDrift, routingDrift } from '../config-findings.js';
import { guardFix } from './guard-cron.js';
import { livePackageDir } from '../../runtime/openclaw-place.js';

const GUARD_FIX = { commands: ['service-deploy doctor --fix', 'bash /usr/local/bin/service-guard.sh'], action: guardFix };

/**
 * Issue 20: openclaw.json holds no secret value, its references resolve from our
 * root-only source (0700 folder, 0600 files, content = the stored answers), and the
 * runtime's own `openclaw secrets audit --check` agrees.
 */
export const secretsCheck: Check = {
  id: 'secrets',
  title: 'Secrets by reference (openclaw.json holds none; root-only source)',
  async run(ctx) {
    const { host } = ctx;
    const { answers, problem } = await ctx.answersRead();
    if (!answers) return skip(`${problem ?? 'no stored answers'} (see gateway-auth)`);
    const text = await host.files.read(LAYOUT.runtimeConfig);
    if (text === undefined) return skip(`${LAYOUT.runtimeConfig} is missing (see config-valid)`);
    const channel = await ctx.channelEnv();
    const values: Array<[string, string | undefined]> = [
      ['the service API key', answers.apiKey],
      ['the MCP token', answers.mcpToken],
      ['the channel token', channel?.SERVICE_CHANNEL_TOKEN],
      ['the channel knock', channel?.SERVICE_CHANNEL_KNOCK],
    ];
    const named = values.filter(([, v]) => v && v.length >= 8 && text.includes(v)).map(([name]) => name);
    const drift = await routingDrift(ctx);
    const refs = Array.isArray(drift) ? drift.filter((r) => r.what.startsWith('secrets.') || r.before.startsWith('plaintext')) : [];
    if (named.length > 0 || refs.length > 0) {
      return fail(
        [named.length ? `${LAYOUT.runtimeConfig} holds ${named.join(', ')} in plain text` : '', refs.length ? listDrift(refs) : ''].filter(Boolean).join('; '),
        'put the references back (the guard does); a value the agent could read must be treated as leaked: rotate it at the portal and re-run the install',
        GUARD_FIX,
      );
    }
    const source = await planRuntimeSecrets(host, answers);
    if (source.changes.length > 0 || source.dirMode) {
      const what = source.changes.map((c) => c.summary).join('; ') || `${LAYOUT.runtimeSecretsDir} is missing`;
      return fail(`the gateway's secret source differs from the stored answers: ${host.redactor.redact(what)}`, 'write it again from the stored answers and restart the gateway (the guard does)', GUARD_FIX);
    }
    const checked = 'references only; source 0600 in a 0700 folder';
    // The runtime's audit judges a config it can read, with a CLI that starts; else its
    // failure is theirs to name (runtime-config, config-valid; agent-runtime, node-runtime).
    if (!Array.isArray(drift)) return pass(`${checked}; audit not run: ${(await ctx.runtimeConfig()).problem ?? `${LAYOUT.runtimeConfig} is unreadable`} (see runtime-config)`);
    if (!(await livePackageDir(host))) return pass(`${checked} (OpenClaw not installed: audit skipped)`);
    const audit = await ctx.secretsAudit();
    let report: { status?: string; summary?: Record<string, number>; findings?: Array<{ code?: string; jsonPath?: string; path?: string }> } | undefined;
    try {
      report = JSON.parse(audit.stdout);
    } catch {
      report = undefined;
    }
    if (report?.status === undefined && audit.timedOut) {
      // Killed at its limit (a loaded server): no verdict either way, so not a failure.
      return warn(
        `${checked}; openclaw secrets audit --check did not finish in ${SECRETS_AUDIT_TIMEOUT_MS / 1000} s (load average ${loadavg()[0]!.toFixed(1)}): not judged this time`,
        'run doctor again when the server is less busy, or the audit by hand',
        { commands: ['openclaw secrets audit --check'] },
      );
    }
    if (report?.status === undefined) {
      const cli = await ctx.openclawCliProblem();
      if (cli) return pass(`${checked}; audit not run: the OpenClaw CLI cannot start (${cli}; see agent-runtime)`);
      const output = host.redactor.redact((audit.stderr.trim() || audit.stdout.trim()).split('\n').slice(-3).join(' '));
      return fail(`openclaw secrets audit --check gave no report (exit ${audit.exitCode}): ${output}`, 'run it by hand to see why', { commands: ['openclaw secrets audit'] });
    }
    if (audit.exitCode !== 0 || report.status !== 'clean') {
      const findings = (report.findings ?? []).map((f) => `${f.code ?? 'finding'} ${f.jsonPath ?? f.path ?? ''}`.trim());
      const detail = findings.length ? findings.slice(0, 5).join('; ') : host.redactor.redact((audit.stderr.trim() || audit.stdout.trim()).split('\n').slice(-3).join(' '));
      // The guard repairs what it manages (a provider it removes takes its key along); a finding elsewhere is the user's.
      const guardRepairs = drift.length > 0;
      return fail(`openclaw secrets audit --check: ${report.status}: ${detail}`, guardRepairs ? 'managed fields are put back by the guard (see `openclaw secrets audit`)' : 'the audit names fields service-deploy does not manage: see `openclaw secrets audit` (a value in plain text: move it to a SecretRef)', {
        commands: guardRepairs ? ['openclaw secrets audit', ...GUARD_FIX.commands] : ['openclaw secrets audit', 'openclaw secrets configure'],
        ...(guardRepairs ? { action: guardFix } : {}),
      });
    }
    return pass(`${checked}; openclaw secrets audit --check: clean (${report.summary?.plaintextCount ?? 0} plaintext)`);
  },
};
