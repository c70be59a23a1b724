import { describe, expect, it } from 'vitest';
import { installScripts, lockedProject } from '../../src/runtime/locked-install.js';
import { shippedLock } from '../../src/runtime/locks.js';

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
