import type { Answers } from '../answers/index.js';
import { MCP_TOKEN_ENV, SECRET_SOURCE_KEYS } from '../config/runtime-config.js';
import { DeployError } from '../errors.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureFolder, octal, planFile, writeDesired, type DesiredFile } from '../pipeline/files.js';
import { STATE_DIR } from '../pipeline/manifest.js';
import type { Change, Step } from '../pipeline/step.js';
import { desired, type WrittenFile, type WrittenFolder } from '../pipeline/writes.js';

/**
 * The gateway's secret source (issue 20, docs/security.md): a root-only folder outside
 * the agent's workspace, hidden from nothing but the gateway process itself.
 *
 * - `secrets.json` (0600): read by OpenClaw's `file` SecretRef provider; openclaw.json
 *   holds `{source: file, provider: service, id: /serviceApiKey}` where the key was.
 * - `gateway.env` (0600): the MCP token for the one secret-bearing field that takes no
 *   SecretRef (the MCP server's Authorization header, an env placeholder), loaded into
 *   the gateway by its unit (`EnvironmentFile=`).
 *
 * Both are written from the stored answers; a re-run, the guard and doctor compare them
 * with the answers, so a changed key reaches the gateway with one restart.
 */
export type RuntimeSecretAnswers = Pick<Answers, 'apiKey' | 'mcpToken'>;

const SECRETS_DIR: WrittenFolder = { path: LAYOUT.runtimeSecretsDir, type: 'folder', mode: 0o700 };
const SECRETS_FILE: WrittenFile = { path: LAYOUT.runtimeSecretsFile, type: 'file', mode: 0o600, check: 'sha256' };
const SECRETS_ENV: WrittenFile = { path: LAYOUT.runtimeSecretsEnv, type: 'file', mode: 0o600, check: 'sha256' };

export function runtimeSecretFiles(answers: RuntimeSecretAnswers): DesiredFile[] {
  const json = `${JSON.stringify({ [SECRET_SOURCE_KEYS.serviceApiKey]: answers.apiKey }, null, 2)}\n`;
  const env = [
    '# Managed by service-deploy: secrets for the gateway\'s config placeholders (root only).',
    `${MCP_TOKEN_ENV}=${answers.mcpToken}`,
    '',
  ].join('\n');
  return [desired(SECRETS_FILE, json), desired(SECRETS_ENV, env)];
}

export interface RuntimeSecretsPlan {
  changes: Change[];
  /** The folder's mode is wrong (or it is missing). */
  dirMode?: { before: number | undefined };
  files: DesiredFile[];
  /** A value changed (not only a mode): the gateway must restart to read it. */
  restart: boolean;
}

/** What differs between the secret source on disk and the answers (nothing written). */
export async function planRuntimeSecrets(host: Host, answers: RuntimeSecretAnswers): Promise<RuntimeSecretsPlan> {
  host.redactor.add(answers.apiKey, answers.mcpToken);
  const dirInfo = await host.files.stat(LAYOUT.runtimeSecretsDir);
  const changes: Change[] = [];
  const dirWrong = dirInfo === undefined || dirInfo.mode !== SECRETS_DIR.mode;
  if (dirInfo !== undefined && dirWrong) changes.push({ target: SECRETS_DIR.path, summary: `${SECRETS_DIR.path}: mode ${octal(dirInfo.mode)} -> ${octal(SECRETS_DIR.mode!)}` });
  const files: DesiredFile[] = [];
  let restart = false;
  for (const desired of runtimeSecretFiles(answers)) {
    const change = await planFile(host, desired);
    if (change) {
      changes.push(change);
      files.push(desired);
      if ((await host.files.read(desired.path)) !== desired.content) restart = true;
    }
  }
  return { changes, files, restart, dirMode: dirWrong ? { before: dirInfo?.mode } : undefined };
}

export async function applyRuntimeSecrets(host: Host, plan: RuntimeSecretsPlan): Promise<void> {
  await ensureFolder(host, STATE_DIR);
  await ensureFolder(host, SECRETS_DIR);
  if (plan.dirMode) await host.files.chmod(SECRETS_DIR.path, SECRETS_DIR.mode!);
  for (const file of plan.files) await writeDesired(host, file);
}

export const runtimeSecretsStep: Step = {
  id: 'runtime-secrets',
  title: "Gateway secret source (referenced by openclaw.json)",
  needs: ['package-lock'],
  writes: [SECRETS_DIR, SECRETS_FILE, SECRETS_ENV],
  async check({ host, answers }) {
    const plan = await planRuntimeSecrets(host, answers);
    if (plan.changes.length === 0 && !plan.dirMode) return { changes: [] };
    // A new key or token reaches the gateway at its next start.
    return { changes: plan.changes.length ? plan.changes : [{ target: SECRETS_DIR.path, summary: `create ${SECRETS_DIR.path} (${octal(SECRETS_DIR.mode!)})` }], notify: plan.restart ? ['gateway-restart'] : [], data: plan };
  },
  async apply({ host }, plan) {
    await applyRuntimeSecrets(host, plan.data as RuntimeSecretsPlan);
  },
  async verify({ host }) {
    for (const file of [SECRETS_FILE, SECRETS_ENV]) {
      const info = await host.files.stat(file.path);
      if (info?.mode !== file.mode) throw new DeployError(`${file.path} is not mode ${octal(file.mode)} after writing it`);
    }
  },
};
