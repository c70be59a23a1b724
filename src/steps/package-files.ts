import type { Host } from '../host/index.js';
import { installedFilesProblem } from '../pipeline/manifest.js';
import type { ProgramFiles } from '../runtime/openclaw.js';

export interface PackageState {
  install: boolean;
  /** Set when the pinned version is there but damaged: a file missing or changed since npm wrote it. */
  damaged?: string;
}

/**
 * What a package step must do: nothing, install (missing or another version), or
 * reinstall the pinned version because a file it needs is missing or changed since
 * it was installed (the install manifest knows).
 */
export async function packageState(host: Host, have: string | undefined, want: string, files: ProgramFiles): Promise<PackageState> {
  if (have !== want) return { install: true };
  const damaged = await installedFilesProblem(host, files.required, [...files.required, ...files.optional]);
  return damaged ? { install: true, damaged } : { install: false };
}

/**
 * npm does not re-extract a package whose version is already installed, so a damaged
 * one is moved aside first (and put back if the install fails: a running gateway
 * keeps working with what it has).
 */
export async function installAfresh(host: Host, packageDir: string, damaged: boolean, install: () => Promise<void>): Promise<void> {
  if (!damaged || !(await host.files.exists(packageDir))) return install();
  const aside = `${packageDir}.damaged-${process.pid}`;
  await host.files.remove(aside);
  await host.files.rename(packageDir, aside);
  try {
    await install();
  } catch (error) {
    if (!(await host.files.exists(packageDir))) await host.files.rename(aside, packageDir);
    throw error;
  }
  await host.files.remove(aside);
}
