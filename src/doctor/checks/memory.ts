import { LAYOUT } from '../../layout.js';
import { MEMORY_COLLECTION, MEMORY_PATTERN, REFRESH_PERIOD_MINUTES, openModes, readQmdCollection } from '../../steps/memory-index.js';
import { probeQmd, qmdHealthUrl } from '../../steps/memory-service.js';
import { fail, pass, type Check } from '../types.js';

const USER = 'XDG_RUNTIME_DIR=/run/user/0';
const REFRESH = `${USER} systemctl --user start ${LAYOUT.qmdRefreshService}`;
// --user-unit=, not `--user -u`: a volatile journal keeps no per-user files (Services.journalTail).
const QMD_LOG = `journalctl --user-unit=${LAYOUT.qmdMcpService} -n 50 --no-pager`;

/**
 * QMD is the agent's memory: the collection over the memory files exists, QMD's MCP
 * server (the one the agent's sessions reach) runs and answers, the refresh timer runs,
 * the index was refreshed within two periods, and it is private.
 */
export const memoryCheck: Check = {
  id: 'memory',
  title: 'Memory (QMD collection, its MCP server answering, refreshed, private)',
  async run(ctx) {
    const { host } = ctx;
    const yml = await host.files.read(LAYOUT.qmdCollectionsFile);
    const collection = yml === undefined ? undefined : readQmdCollection(yml, MEMORY_COLLECTION);
    if (!collection) {
      return fail(
        `QMD has no "${MEMORY_COLLECTION}" collection (${LAYOUT.qmdCollectionsFile}${yml === undefined ? ' is missing' : ''}): the agent's memory search finds nothing`,
        're-run the install, which creates it over the memory files',
        { commands: ['service-deploy install'] },
      );
    }
    const workspace = host.paths.real(LAYOUT.workspaceDir);
    if (collection.path !== workspace || collection.pattern !== MEMORY_PATTERN) {
      return fail(
        `the "${MEMORY_COLLECTION}" collection indexes ${collection.path} (${collection.pattern}), not ${workspace} (${MEMORY_PATTERN})`,
        're-run the install, which puts the collection back over the memory files',
        { commands: ['service-deploy install'] },
      );
    }
    if (!(await ctx.unit('user', LAYOUT.qmdMcpService)).active) {
      return fail(`${LAYOUT.qmdMcpService} is not running: the agent's memory tools (qmd__query, qmd__get) fail`, 'start it (or re-run the install, which writes its unit again); read its log if it does not stay up', {
        commands: [`${USER} systemctl --user enable --now ${LAYOUT.qmdMcpService}`, QMD_LOG],
      });
    }
    const probe = await probeQmd(host, 10_000);
    if (!probe.ok) {
      return fail(`${LAYOUT.qmdMcpService} runs but ${qmdHealthUrl(host)} does not answer: ${probe.detail}`, 'restart it and read its log (another program on its port?)', {
        commands: [`${USER} systemctl --user restart ${LAYOUT.qmdMcpService}`, QMD_LOG],
      });
    }
    if (!(await ctx.unit('user', LAYOUT.qmdRefreshTimer)).active) {
      return fail(`${LAYOUT.qmdRefreshTimer} is not active: the memory index is not refreshed`, 'start the timer (or re-run the install)', {
        commands: [`${USER} systemctl --user enable --now ${LAYOUT.qmdRefreshTimer}`],
      });
    }
    const stamp = await host.files.stat(LAYOUT.qmdRefreshStamp);
    const limitMs = 2 * REFRESH_PERIOD_MINUTES * 60_000;
    const ageMs = stamp ? host.now().getTime() - stamp.mtimeMs : undefined;
    if (ageMs === undefined || ageMs > limitMs) {
      return fail(
        `the memory index was ${ageMs === undefined ? 'never refreshed here' : `last refreshed ${Math.round(ageMs / 60_000)} min ago`} (the timer runs every ${REFRESH_PERIOD_MINUTES} min)`,
        `refresh it now and read the refresh log if it fails`,
        { commands: [REFRESH, `journalctl --user-unit=${LAYOUT.qmdRefreshService} -n 50 --no-pager`] },
      );
    }
    const open = await openModes(host);
    if (open.length > 0) {
      return fail(`the memory index is readable by others: ${open.join(', ')}`, 'make it private (folders 0700, files 0600); the refresh does this too', {
        commands: [`chmod -R go-rwx ${LAYOUT.qmdCacheDir} ${LAYOUT.qmdConfigDir}`],
      });
    }
    return pass(`collection "${MEMORY_COLLECTION}" over ${LAYOUT.workspaceDir}, served by ${LAYOUT.qmdMcpService}, refreshed ${Math.round(ageMs / 60_000)} min ago, private`);
  },
};
