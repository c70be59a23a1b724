import { Inspector } from '../../host/inspect.js';
import { LAYOUT } from '../../layout.js';
import { desiredFor } from '../../steps/runtime-config.js';
import { fail, lazyFix, pass, type Check } from '../types.js';
import { answersFinding } from '../findings.js';

/** openclaw.json's managed keys written again: merged with the runtime's own, validated by OpenClaw first. */
export const runtimeConfigFix = lazyFix(
  { id: 'runtime-config', title: 'write the managed keys of openclaw.json again (validated by OpenClaw first)', phase: 'config' },
  async () => (await import('../fixes.js')).writeRuntimeConfig,
);

/** Managed keys the routing checks (providers, gateway-auth, gateway-bind) already report. */
const ROUTING = ['gateway.auth', 'gateway.token', 'gateway.bind', 'models', 'agents.defaults.model'];

export interface Drift {
  path: string;
  have: unknown;
  want: unknown;
}

/** Where two parsed configs differ, as dotted paths (objects compared key by key, anything else whole). */
export function configDrift(have: unknown, want: unknown, prefix = ''): Drift[] {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObject(have) && isObject(want)) {
    const keys = [...new Set([...Object.keys(want), ...Object.keys(have)])];
    return keys.flatMap((key) => configDrift(have[key], want[key], prefix ? `${prefix}.${key}` : key));
  }
  return JSON.stringify(have) === JSON.stringify(want) ? [] : [{ path: prefix, have, want }];
}

const SECRET_KEY = /(token|key|authorization|secret|password)$/i;

/** A value for the message: secret-looking keys masked (whatever their value), long ones cut. */
function show(value: unknown, path = ''): string {
  if (value === undefined) return 'missing';
  if (SECRET_KEY.test(path) && typeof value === 'string') return '"****"';
  const text = JSON.stringify(value, (key, v) => (SECRET_KEY.test(key) && typeof v === 'string' ? '****' : v));
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

const MOVE_ASIDE = [`mv ${LAYOUT.runtimeConfig} ${LAYOUT.runtimeConfig}.broken`, 'service-deploy install'];

/**
 * openclaw.json is rewritten by the runtime itself, so the install manifest holds no
 * hash for it: this check compares the keys the install owns (MCP servers, plugins,
 * session, heartbeat, browser, gateway mode and port) with what the install would
 * write, the user's own keys left out. --fix writes them back, validated by OpenClaw
 * first, and restarts the gateway.
 */
export const runtimeConfigCheck: Check = {
  id: 'runtime-config',
  title: 'Runtime config: the keys service-deploy manages (MCP, plugins, session, browser)',
  fixes: [runtimeConfigFix],
  async run(ctx) {
    const { host } = ctx;
    const info = await new Inspector(host.paths).info(LAYOUT.runtimeConfig);
    const stored = await ctx.answersRead();
    const answers = stored.answers;
    if (!answers) return answersFinding(stored, 'the managed settings are unknown');
    if (!info) {
      return fail(`${LAYOUT.runtimeConfig} is missing: the agent has no configuration`, 'write it again from the stored answers (validated by OpenClaw), then restart the gateway', {
        commands: ['service-deploy doctor --fix', 'service-deploy install'],
        action: runtimeConfigFix,
      });
    }
    if (info.type !== 'file') {
      return fail(`${LAYOUT.runtimeConfig} is ${info.type === 'symlink' ? `a symbolic link to ${info.target}` : `a ${info.type}`}, not the regular file the install wrote`, 'doctor does not follow it: move it aside and run the install (or restore the file from the last backup)', { commands: MOVE_ASIDE });
    }
    const { config, problem } = await ctx.runtimeConfig();
    if (!config) return fail(problem ?? `${LAYOUT.runtimeConfig} is unreadable`, 'restore it from the last backup, or move it aside and run the install (it writes a new one)', { commands: MOVE_ASIDE });
    const desired = await desiredFor({ host, answers, profile: ctx.profile, components: ctx.components, channel: await ctx.channelConfigured() }, config);
    const drift = configDrift(config, desired).filter((d) => !ROUTING.some((r) => d.path === r || d.path.startsWith(`${r}.`)));
    if (drift.length === 0) return pass('MCP servers, plugins, session, heartbeat and browser as the install set them');
    return fail(
      `${LAYOUT.runtimeConfig}: ${drift.map((d) => `${d.path} is ${show(d.have, d.path)} (want ${show(d.want, d.path)})`).join('; ')}`,
      'write the managed keys back (your own keys stay; OpenClaw validates the result first), then restart the gateway',
      { commands: ['service-deploy doctor --fix', 'service-deploy install'], action: runtimeConfigFix },
    );
  },
};
