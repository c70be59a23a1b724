import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import { ensureFolder } from './files.js';
import type { WrittenFile, WrittenFolder } from './writes.js';

/** The folder of the install's log and the guard's (root only): a reset keeps it, uninstall removes it. */
export const LOG_DIR: WrittenFolder = { path: LAYOUT.logDir, type: 'folder', mode: 0o700, check: 'metadata', life: 'server' };
/** Every command an install ran, with its output (the host's logger appends to it; not checked: it grows). */
export const INSTALL_LOG: WrittenFile = { path: LAYOUT.installLog, type: 'file', mode: 0o600, life: 'server' };
/** The one old copy kept when it is rotated. */
export const INSTALL_LOG_OLD: WrittenFile = { path: `${LAYOUT.installLog}.1`, type: 'file', mode: 0o600, life: 'server' };

/** install.log becomes install.log.1 at the start of a run once it is this big (one old copy kept). */
export const INSTALL_LOG_ROTATE_BYTES = 2 * 1024 * 1024;

/** From here on every line of the run also goes to install.log. */
export async function openInstallLog(host: Host): Promise<void> {
  await ensureFolder(host, LOG_DIR);
  host.log.attachFile(host.paths.real(INSTALL_LOG.path), { rotateAtBytes: INSTALL_LOG_ROTATE_BYTES });
}
