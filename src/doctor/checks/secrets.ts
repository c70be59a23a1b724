import { LAYOUT } from '../../layout.js';
import { openclaw } from '../../runtime/openclaw.js';
import { planRuntimeSecrets } from '../../steps/runtime-secrets.js';
import { fail, pass, skip, type Check } from '../types.js';
import { listDrift, routingDrift } from './routing-shared.js';

const GUARD_FIX = { commands: ['service-deploy doctor --fix', 'bash /usr/local/bin/service-guard.sh'], action: 'guard' as const };

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
    const answers = await ctx.answers();
    if (!answers) return skip('no stored answers (see gateway-auth)');
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
    if (!(await host.files.exists(LAYOUT.openclawBin))) return pass('references only; source 0600 in a 0700 folder (OpenClaw not installed: audit skipped)');
    const audit = await openclaw(host, ['secrets', 'audit', '--check', '--json'], { allowFailure: true, timeoutMs: 90_000 });
    let report: { status?: string; summary?: Record<string, number>; findings?: Array<{ code?: string; jsonPath?: string; path?: string }> } | undefined;
    try {
      report = JSON.parse(audit.stdout);
    } catch {
      report = undefined;
    }
    if (audit.exitCode !== 0 || report?.status !== 'clean') {
      const findings = (report?.findings ?? []).map((f) => `${f.code ?? 'finding'} ${f.jsonPath ?? f.path ?? ''}`.trim());
      const detail = findings.length ? findings.slice(0, 5).join('; ') : host.redactor.redact((audit.stderr.trim() || audit.stdout.trim()).split('\n').slice(-3).join(' '));
      return fail(`openclaw secrets audit --check: ${report?.status ?? `exit ${audit.exitCode}`}: ${detail}`, 'see `openclaw secrets audit`; managed fields are put back by the guard', {
        commands: ['openclaw secrets audit', ...GUARD_FIX.commands],
        action: 'guard',
      });
    }
    return pass(`references only; source 0600 in a 0700 folder; openclaw secrets audit --check: clean (${report.summary?.plaintextCount ?? 0} plaintext)`);
  },
};
