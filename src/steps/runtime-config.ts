import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { readOs } from '../host/os.js';
import type { InstallContext, Step } from '../pipeline/step.js';
import { LAYOUT } from '../layout.js';
import {
  desiredRuntimeConfig,
  parseRuntimeConfig,
  sameConfig,
  serializeRuntimeConfig,
  type ManagedSettings,
  type RuntimeConfig,
} from '../config/runtime-config.js';
import { browserFor } from './browser.js';
import { ensureDirRecorded, octal, planFile, writeRecorded } from '../pipeline/files.js';
import { recordFromDisk } from '../pipeline/manifest.js';
import type { WrittenFile, WrittenFolder } from '../pipeline/writes.js';
import { openclaw } from '../runtime/openclaw.js';

/** OpenClaw's state folder (its home for the agent: config, sessions, workspace): root-only, in every backup. */
export const RUNTIME_DIR: WrittenFolder = { path: LAYOUT.runtimeDir, type: 'folder', mode: 0o700, check: 'metadata', life: 'backup' };
/**
 * openclaw.json: the runtime rewrites it itself, so doctor checks the keys we own (the
 * runtime-config check and its fix, which OpenClaw validates first), not a hash.
 */
export const RUNTIME_CONFIG: WrittenFile = { path: LAYOUT.runtimeConfig, type: 'file', mode: 0o600, check: 'structure' };

export async function readRuntimeConfig(host: Host): Promise<{ text?: string; config?: RuntimeConfig }> {
  const text = await host.files.read(LAYOUT.runtimeConfig);
  if (text === undefined) return {};
  try {
    return { text, config: await parseRuntimeConfig(text) };
  } catch (error) {
    throw new DeployError(`${LAYOUT.runtimeConfig} is not valid JSON5: ${(error as Error).message}`, `fix or move the file aside, then run again`);
  }
}

/** The config this server should have: the existing one with the managed settings put right. */
export async function desiredFor(
  ctx: Pick<InstallContext, 'host' | 'profile' | 'components'> & { answers: ManagedSettings['answers']; channel: boolean },
  existing: RuntimeConfig | undefined,
): Promise<RuntimeConfig> {
  const os = await readOs(ctx.host.files);
  const browser = browserFor(os, ctx.components);
  const browserSkipped = browser === undefined || (browser.aptRepoUrl !== undefined && process.arch !== 'x64');
  return desiredRuntimeConfig(existing, {
    answers: ctx.answers,
    profile: ctx.profile,
    components: ctx.components,
    channel: ctx.channel,
    browserExecutable: browserSkipped ? undefined : browser?.executable,
  });
}

/**
 * Validates a candidate config with the pinned OpenClaw's own `config validate`,
 * from a 0600 file beside the real one. Throws with OpenClaw's messages if invalid.
 */
export async function validateCandidate(host: Host, content: string): Promise<void> {
  const candidate = host.files.tempPathFor(LAYOUT.runtimeConfig);
  try {
    await host.files.writeNew(candidate, content, { mode: RUNTIME_CONFIG.mode });
    const result = await openclaw(host, ['config', 'validate', '--json'], { configPath: candidate, allowFailure: true });
    if (result.exitCode !== 0) {
      let issues = result.stderr.trim() || result.stdout.trim();
      try {
        const parsed = JSON.parse(result.stdout) as { issues?: Array<{ path: string; message: string }> };
        if (parsed.issues?.length) issues = parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
      } catch {
        // not JSON: keep the raw text
      }
      throw new DeployError(`OpenClaw rejects the new config: ${host.redactor.redact(issues)}`, 'the current config was left as it was; report this with `service-deploy render runtime-config`');
    }
  } finally {
    await host.files.remove(candidate);
  }
}

/**
 * ~/.openclaw/openclaw.json: managed settings put right, user keys kept, the legacy
 * gateway.token migrated. "Changed" means the parsed config differs, so a file the
 * user reformatted or commented is left alone when its settings are right.
 */
export const runtimeConfigStep: Step = {
  id: 'runtime-config',
  title: 'Runtime config (openclaw.json)',
  // mcp: the token it writes was accepted by the tool server first.
  needs: ['agent-runtime', 'context-engine', 'channel-plugin', 'runtime-secrets', 'mcp'],
  writes: [RUNTIME_DIR, RUNTIME_CONFIG],
  async check(ctx) {
    const { host } = ctx;
    const { config } = await readRuntimeConfig(host);
    const desired = await desiredFor({ ...ctx, channel: ctx.options.channel }, config);
    const content = serializeRuntimeConfig(desired);
    const info = await host.files.stat(LAYOUT.runtimeConfig);
    const contentSame = config !== undefined && sameConfig(config, desired);
    if (contentSame && info?.mode === RUNTIME_CONFIG.mode) return { changes: [] };
    const change = contentSame
      ? { target: RUNTIME_CONFIG.path, summary: `${RUNTIME_CONFIG.path}: mode -> ${octal(RUNTIME_CONFIG.mode)}` }
      : await planFile(host, { path: RUNTIME_CONFIG.path, content, mode: RUNTIME_CONFIG.mode });
    return { changes: change ? [change] : [], notify: contentSame ? [] : ['gateway-restart'], data: { content, contentSame } };
  },
  async apply({ host }, plan) {
    const { content, contentSame } = plan.data as { content: string; contentSame: boolean };
    await ensureDirRecorded(host, RUNTIME_DIR);
    if (contentSame) {
      await host.files.chmod(RUNTIME_CONFIG.path, RUNTIME_CONFIG.mode);
      await recordFromDisk(host, { path: RUNTIME_CONFIG.path, options: { mode: RUNTIME_CONFIG.mode, check: RUNTIME_CONFIG.check } });
      return;
    }
    await validateCandidate(host, content);
    await writeRecorded(host, RUNTIME_CONFIG, content);
  },
};
