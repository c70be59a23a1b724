import * as z from './zod.js';
import { readTemplate } from './assets.js';

const ComponentsSchema = z.object({
  node: z.object({ version: z.string(), distUrl: z.string(), prefix: z.string() }),
  openclaw: z.object({ package: z.string(), version: z.string() }),
  losslessClaw: z.object({ package: z.string(), version: z.string(), pluginId: z.string() }),
  qmd: z.object({
    package: z.string(),
    version: z.string(),
    /** The native packages of the CPU build, per arch: installed instead of QMD's optional GPU prebuilds. */
    cpuBuild: z.object({ x64: z.array(z.string()), arm64: z.array(z.string()) }),
  }),
  meshClient: z.object({ package: z.string(), aptRepoUrl: z.string() }),
  systemPackages: z.array(z.string()),
  browser: z.object({
    debian: z.object({ package: z.string(), executable: z.string() }),
    ubuntu: z.object({ package: z.string(), aptRepoUrl: z.string(), keyUrl: z.string(), executable: z.string() }),
  }),
});

export interface Components extends z.infer<typeof ComponentsSchema> {
  /** Where packages come from: undefined = their real sources; tests set local ones. */
  sources: {
    nodeDistUrl: string;
    /** npm install spec for OpenClaw (a version, or a local tarball in tests). */
    openclawSpec: string;
    losslessClawSpec: string;
    qmdSpec: string;
    /** The mesh client's apt repository (signing key and packages). */
    meshAptUrl: string;
    /** The browser's apt signing key (Ubuntu: Google Chrome). */
    browserKeyUrl: string;
    /** Extra CA file for the download sources (tests' loopback HTTPS). */
    caFile?: string;
  };
}

/**
 * The pinned components (templates/components.json, embedded). Tests and offline
 * mirrors point the sources elsewhere: SERVICE_NODE_DIST_URL, SERVICE_OPENCLAW_SOURCE,
 * SERVICE_LOSSLESS_CLAW_SOURCE, SERVICE_QMD_SOURCE, SERVICE_MESH_APT_URL, SERVICE_BROWSER_KEY_URL,
 * SERVICE_DOWNLOAD_CA_FILE.
 */
export function loadComponents(env: NodeJS.ProcessEnv = process.env): Components {
  const raw = JSON.parse(readTemplate('components.json')) as Record<string, unknown>;
  delete raw.$comment;
  const pinned = ComponentsSchema.parse(raw);
  return {
    ...pinned,
    sources: {
      nodeDistUrl: (env.SERVICE_NODE_DIST_URL || pinned.node.distUrl).replace(/\/+$/, ''),
      openclawSpec: env.SERVICE_OPENCLAW_SOURCE || `${pinned.openclaw.package}@${pinned.openclaw.version}`,
      losslessClawSpec: env.SERVICE_LOSSLESS_CLAW_SOURCE || `${pinned.losslessClaw.package}@${pinned.losslessClaw.version}`,
      qmdSpec: env.SERVICE_QMD_SOURCE || `${pinned.qmd.package}@${pinned.qmd.version}`,
      meshAptUrl: (env.SERVICE_MESH_APT_URL || pinned.meshClient.aptRepoUrl).replace(/\/+$/, ''),
      browserKeyUrl: env.SERVICE_BROWSER_KEY_URL || pinned.browser.ubuntu.keyUrl,
      caFile: env.SERVICE_DOWNLOAD_CA_FILE || undefined,
    },
  };
}
