import type { Components } from '../components.js';
import type { OsInfo } from '../host/os.js';
import { osFamily, readOs } from '../host/os.js';
import { LOCKS, type Step } from '../pipeline/step.js';
import { aptInstall, missingPackages } from '../host/apt.js';
import { ensureFolder, writeRecorded } from '../pipeline/files.js';
import { installedFilesProblem, recordFromDisk } from '../pipeline/manifest.js';
import { recordAddedPackages } from '../pipeline/packages.js';
import type { WrittenFile } from '../pipeline/writes.js';
import { KEYRINGS_DIR } from './mesh-client.js';

/**
 * A headless browser for the agent's browser tool. Ubuntu's chromium is a snap
 * (no good for a root user service), so Ubuntu (and its derivatives) get Google Chrome
 * from its signed apt repository; Debian has a real chromium package. Undefined for an
 * OS of neither family (os-release ID / ID_LIKE): the browser skill is then skipped.
 */
export function browserFor(os: OsInfo, components: Components) {
  const family = osFamily(os);
  if (family === 'debian') return { ...components.browser.debian, aptRepoUrl: undefined };
  if (family === 'ubuntu') return components.browser.ubuntu;
  return undefined;
}

function noBrowser(os: OsInfo): string {
  return `no browser package is known for ${os.prettyName} (neither Ubuntu nor Debian by ID/ID_LIKE in /etc/os-release); the browser skill is unavailable here`;
}

const CHROME_KEYRING = '/usr/share/keyrings/google-chrome.gpg';
export const CHROME_SOURCES = '/etc/apt/sources.list.d/google-chrome.list';
export const CHROME_KEY = CHROME_KEYRING.replace(/\.gpg$/, '.asc');
/** Google's apt repository: a reset keeps it (the browser package stays), uninstall removes it. */
const BROWSER_KEY: WrittenFile = { path: CHROME_KEY, type: 'file', mode: 0o644, check: 'sha256', life: 'server' };
const BROWSER_SOURCES: WrittenFile = { path: CHROME_SOURCES, type: 'file', mode: 0o644, check: 'sha256', life: 'server' };

export const browserStep: Step = {
  id: 'browser',
  title: 'Browser skill (headless browser)',
  // system-packages: on Ubuntu apt fetches Google's repository over https (ca-certificates).
  needs: ['preflight', 'package-lock', 'system-packages', LOCKS.apt],
  // Nothing the gateway's first start waits for: its apt run yields the cores to those steps.
  background: true,
  writes: [BROWSER_KEY, BROWSER_SOURCES],
  async skip({ host, components }) {
    const os = await readOs(host.files);
    const browser = browserFor(os, components);
    if (!browser) return noBrowser(os);
    if (browser.aptRepoUrl && process.arch !== 'x64') return 'Google Chrome has no arm64 Linux build; the browser skill is unavailable here';
    return undefined;
  },
  async check({ host, components }) {
    const os = await readOs(host.files);
    const browser = browserFor(os, components);
    if (!browser) throw new Error(noBrowser(os));
    const [missing, repoDamage] = await Promise.all([
      missingPackages(host, [browser.package]),
      browser.aptRepoUrl ? installedFilesProblem(host, [], [CHROME_KEY, CHROME_SOURCES]) : undefined,
    ]);
    // No gateway restart: the pinned OpenClaw looks for browser.executablePath each time it
    // launches the browser (and when it checks the browser can be used), not when it starts,
    // so the gateway starts without waiting for this package.
    if (missing.length > 0) return { changes: [{ target: 'apt', summary: `install ${browser.package}` }], data: { install: true } };
    // Installed, but our apt source or its key changed or vanished since we wrote them.
    if (repoDamage) return { changes: [{ target: CHROME_SOURCES, summary: `add the browser's apt repository again (${repoDamage})` }], data: { install: false } };
    return { changes: [] };
  },
  async apply(ctx, plan) {
    const { host, components, options } = ctx;
    const os = await readOs(host.files);
    const browser = browserFor(os, components);
    if (!browser) throw new Error(noBrowser(os));
    if (browser.aptRepoUrl) {
      ctx.progress('adding the browser apt repository');
      const partial = host.files.tempPathFor(CHROME_KEYRING);
      await ensureFolder(host, KEYRINGS_DIR);
      try {
        // Google publishes an ASCII-armoured key; apt's signed-by accepts armoured keys in .asc files.
        await host.net.download(components.sources.browserKeyUrl, host.paths.real(partial), { caFile: components.sources.caFile });
        await host.files.chmod(partial, BROWSER_KEY.mode);
        await host.files.rename(partial, CHROME_KEY);
      } finally {
        await host.files.remove(partial);
      }
      await recordFromDisk(host, { path: BROWSER_KEY.path, options: { mode: BROWSER_KEY.mode } });
      await writeRecorded(host, BROWSER_SOURCES, `deb [arch=amd64 signed-by=${CHROME_KEY}] ${browser.aptRepoUrl} stable main\n`);
    }
    if ((plan.data as { install: boolean }).install) await recordAddedPackages(host, await aptInstall(host, [browser.package], options.lockTimeoutMs / 1000, ctx.progress));
  },
};
