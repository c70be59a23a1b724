import { notImplemented } from '../commands/shared.js';
import { createHost } from '../host/index.js';

export const INSTALL_LOCK = '/run/service-deploy/install.lock';

export async function runInstall(_argv: unknown): Promise<void> {
  const host = createHost();
  const lock = await host.locks.acquire(INSTALL_LOCK, 'install');
  try {
    notImplemented('install', 'the install pipeline issue');
  } finally {
    await lock.release();
  }
}
