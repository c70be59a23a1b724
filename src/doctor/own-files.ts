import { channelDropInFile } from '../guard/channel.js';
import { productionSiteFromEnv } from '../channel/nginx.js';
import { LAYOUT } from '../layout.js';
import type { DesiredFile } from '../pipeline/files.js';
import { openclawWrapper } from '../steps/agent-runtime.js';
import { pluginFiles } from '../steps/channel.js';
import { gatewayUnitFile } from '../steps/gateway-service.js';
import { guardCron, guardScript } from '../steps/guard.js';
import type { StoredAnswers } from '../answers/index.js';

/** What rendering needs from doctor's context (kept narrow: context.ts uses this module). */
export interface RenderContext {
  answers(): Promise<StoredAnswers | undefined>;
  channelEnv(): Promise<Record<string, string> | undefined>;
  channelConfigured(): Promise<boolean>;
}

/** What must follow when doctor --fix writes the file again. */
export type Effect = 'units' | 'gateway' | 'nginx';

export interface OwnFile {
  path: string;
  /** The file as the install writes it, or undefined when it cannot be made here (no answers, no channel.env). */
  render(ctx: RenderContext): Promise<DesiredFile | undefined>;
  effect?: Effect;
  /** Part of the channel endpoint: belongs on this server only where the channel is configured. */
  channel?: true;
}

/**
 * The files doctor --fix may write again because their content comes from this
 * binary alone (templates, the stored answers, channel.env): the same functions the
 * install uses. Everything else in the manifest (secrets, certificates, downloads,
 * npm packages) is named with the command that restores it.
 */
export const OWN_FILES: readonly OwnFile[] = [
  { path: LAYOUT.guardScript, render: async () => guardScript() },
  {
    path: LAYOUT.guardCron,
    render: async (ctx) => {
      const answers = await ctx.answers();
      return answers ? guardCron(answers.meshHostname) : undefined;
    },
  },
  { path: LAYOUT.gatewayUnitFile, render: async () => gatewayUnitFile(), effect: 'units' },
  { path: LAYOUT.channelDropIn, render: async () => channelDropInFile(), effect: 'units', channel: true },
  { path: LAYOUT.openclawWrapper, render: async () => openclawWrapper() },
  ...pluginFiles().map((file): OwnFile => ({ path: file.path, render: async () => file, effect: 'gateway', channel: true })),
  {
    path: LAYOUT.nginxSite,
    render: async (ctx) => {
      const site = siteFromEnv((await ctx.channelEnv()) ?? {});
      return site === undefined ? undefined : { path: LAYOUT.nginxSite, content: site, mode: 0o600 };
    },
    effect: 'nginx',
    channel: true,
  },
];

/** The site the install writes for this channel.env, or undefined when channel.env cannot make one. */
export function siteFromEnv(env: Record<string, string>): string | undefined {
  try {
    return productionSiteFromEnv(env);
  } catch {
    return undefined;
  }
}

export function ownFile(p: string): OwnFile | undefined {
  return OWN_FILES.find((f) => f.path === p);
}
