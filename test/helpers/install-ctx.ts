import fs from 'node:fs';
import path from 'node:path';
import type { Components } from '../../src/components.js';
import type { Answers } from '../../src/answers/index.js';
import { createHost, type Host } from '../../src/host/index.js';
import type { InstallContext, InstallOptions, Notify } from '../../src/pipeline/step.js';
import { loadProfile } from '../../src/profile.js';
import { tempDir } from './tmp.js';

/** An InstallContext over a SERVICE_DEPLOY_ROOT sandbox; `binDir` (stand-in commands) goes first on PATH. */
export function sandboxContext(options: {
  root?: string;
  binDir?: string;
  env?: Record<string, string>;
  install?: Partial<InstallOptions>;
  answers?: Partial<Answers>;
} = {}): InstallContext & { root: string; host: Host } {
  const root = options.root ?? tempDir('sd-root-');
  const env: NodeJS.ProcessEnv = {
    PATH: `${options.binDir ? `${options.binDir}:` : ''}${process.env.PATH}`,
    HOME: process.env.HOME,
    SERVICE_DEPLOY_ROOT: root,
    ...options.env,
  };
  const host = createHost({ env, quiet: true });
  return {
    root,
    host,
    profile: loadProfile({}),
    answers: { customerName: 'Acme', customerSlug: 'acme', apiKey: 'pkt_test_0123456789', modelId: 'test-model', meshHostname: 'openclaw-acme', mcpToken: 'mcp', ...options.answers } as Answers,
    components: {} as Components,
    options: { check: false, diff: false, channel: true, catalog: true, rotateChannelSecrets: false, lockTimeoutMs: 1000, ...options.install },
    notified: new Set<Notify>(),
    progress: () => {},
  };
}

/** Writes an executable stand-in script into `dir` (created) and returns `dir`. */
export function standIn(dir: string, name: string, script: string): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, name), script, { mode: 0o755 });
  return dir;
}
