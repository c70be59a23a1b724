import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.js';
import { installLockedProject, installScripts, lockedProject } from '../../src/runtime/locked-install.js';
import { shippedLock } from '../../src/runtime/locks.js';
import { waitUntil } from '../helpers/budget.js';

describe('installing a shipped lock', () => {
  it('runs the install scripts npm install ran: the ones the lock records, of packages installed here; none for a package that only has a binding.gyp (better-sqlite3 ships its prebuilt binaries)', () => {
    expect(installScripts(shippedLock('openclaw', 'x64')!)).toEqual(['@google/genai', 'koffi', 'openclaw', 'protobufjs']);
    const qmd = installScripts(shippedLock('qmd', 'x64')!);
    expect(qmd).toEqual(['node-llama-cpp', 'tree-sitter-go', 'tree-sitter-javascript', 'tree-sitter-python', 'tree-sitter-rust', 'tree-sitter-typescript']);
    expect(qmd).not.toContain('better-sqlite3');
    expect(shippedLock('qmd', 'x64')!.lock.packages['node_modules/better-sqlite3']).toBeDefined();
  });

  it('installs the shipped project with npm ci for the pinned spec; a source set for a mirror or a test replaces only the top package, over the lock', () => {
    const pinned = lockedProject('openclaw', 'openclaw', 'openclaw@2026.9.6');
    expect(pinned.command).toBe('ci');
    expect(pinned.manifestText).toBe(shippedLock('openclaw', process.arch === 'arm64' ? 'arm64' : 'x64')!.manifestText);
    const tarball = lockedProject('openclaw', 'openclaw', '/root/e2e/broken/openclaw-2026.9.6.tgz');
    expect(tarball.command).toBe('install');
    expect(JSON.parse(tarball.manifestText).dependencies).toEqual({ openclaw: 'file:/root/e2e/broken/openclaw-2026.9.6.tgz' });
    expect(tarball.shipped.lockText).toBe(pinned.shipped.lockText);
    expect(JSON.parse(lockedProject('openclaw', 'openclaw', 'openclaw@2026.9.5').manifestText).dependencies).toEqual({ openclaw: '2026.9.5' });
  });
});

describe('installing into a staging folder an earlier, killed install left an npm working in', () => {
  it('stops that npm (and what it started) first: nothing it writes ends up in the tree installed now', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-locked-'));
    let orphan: ReturnType<typeof spawn> | undefined;
    try {
      const bin = path.join(root, 'opt/service-deploy/node/bin');
      fs.mkdirSync(bin, { recursive: true });
      // The npm of this run: writes one package and exits.
      fs.writeFileSync(path.join(bin, 'npm'), '#!/bin/sh\nmkdir -p "$3/node_modules/fresh" && echo ok > "$3/node_modules/fresh/index.js"\n', { mode: 0o755 });
      const staging = path.join(root, 'opt/service-deploy/qmd-next');
      fs.mkdirSync(path.join(staging, 'node_modules'), { recursive: true });
      // The orphan: an npm-like writer whose arguments name the folder, still adding files.
      orphan = spawn(process.execPath, ['-e', 'const fs=require("fs");let n=0;setInterval(()=>{try{fs.mkdirSync(process.argv[1]+"/node_modules",{recursive:true});fs.writeFileSync(process.argv[1]+"/node_modules/orphan-"+(n++),"x")}catch{}},5)', staging], { stdio: 'ignore' });
      await waitUntil('the orphan writing', () => fs.readdirSync(path.join(staging, 'node_modules')).some((f) => f.startsWith('orphan-')));
      const warned: string[] = [];
      const host = createHost({ env: { SERVICE_DEPLOY_ROOT: root, PATH: process.env.PATH }, quiet: true });
      host.log.warn = (text: string) => void warned.push(text);
      // The shipped lock with no packages: no install scripts to rebuild.
      const shipped = shippedLock('qmd', 'x64')!;
      const project = { ...lockedProject('qmd', '@tobilu/qmd', '/tmp/qmd.tgz'), shipped: { ...shipped, lock: { ...shipped.lock, packages: {} } } };
      await installLockedProject(host, '/opt/service-deploy/qmd-next', project);
      const stopped = orphan;
      await waitUntil('the orphan gone', () => stopped.exitCode !== null || stopped.signalCode !== null);
      expect(stopped.signalCode).toBe('SIGKILL');
      // Whatever it wrote last has had time to land by now, if it were still running.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(fs.readdirSync(path.join(staging, 'node_modules')).sort()).toEqual(['fresh']);
      expect(warned.join('\n')).toMatch(new RegExp(`stopped 1 process\\(es\\) of an earlier, interrupted run still working in /opt/service-deploy/qmd-next: ${orphan.pid} `));
    } finally {
      orphan?.kill('SIGKILL');
      fs.rmSync(root, { recursive: true, force: true, maxRetries: 5 });
    }
  });
});
