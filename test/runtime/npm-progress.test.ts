import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.js';
import { LAYOUT } from '../../src/layout.js';
import { npm, npmProgress } from '../../src/runtime/openclaw.js';
import { tempDir } from '../helpers/tmp.js';

// npm 11 at loglevel http, as it printed installing two packages (one with dependencies).
const NPM_HTTP_LOG = `npm http fetch GET 200 https://registry.example/is-number 269ms (cache miss)
npm http fetch GET 200 https://registry.example/chalk 23ms (cache miss)
npm http fetch GET 200 https://registry.example/ansi-styles 21ms (cache miss)
npm http cache has-flag@https://registry.example/has-flag/-/has-flag-4.0.0.tgz 0ms (cache hit)
npm http cache chalk@https://registry.example/chalk/-/chalk-4.1.2.tgz 0ms (cache hit)
npm http fetch GET 200 https://registry.example/has-flag/-/has-flag-4.0.0.tgz 115ms (cache miss)
npm http fetch GET 200 https://registry.example/@scope/name/-/name-1.2.3.tgz 122ms (cache miss)
npm warn deprecated something@1.0.0: not this one
npm http fetch GET 404 https://registry.example/missing 20ms`;

describe("npm's progress", () => {
  it('counts package documents (resolved) and tarballs (downloaded) from the http log, nothing else', () => {
    const said: string[] = [];
    const read = npmProgress((text) => said.push(text));
    for (const line of NPM_HTTP_LOG.split('\n')) read(line);
    expect(said).toEqual([
      '1 packages resolved, 0 downloaded',
      '2 packages resolved, 0 downloaded',
      '3 packages resolved, 0 downloaded',
      '3 packages resolved, 1 downloaded',
      '3 packages resolved, 2 downloaded',
    ]);
  });

  it('npm() with progress asks npm for its http log and reports as the lines come; without, it does not', async () => {
    const root = tempDir();
    const bin = path.join(root, LAYOUT.nodePrefix, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(path.join(root, 'http.log'), `${NPM_HTTP_LOG}\n`);
    fs.writeFileSync(path.join(bin, 'npm'), `#!/bin/sh\necho "loglevel=$npm_config_loglevel" >>${root}/calls\n[ "$npm_config_loglevel" = http ] && cat ${root}/http.log >&2\nexit 0\n`, { mode: 0o755 });
    const host = createHost({ env: { SERVICE_DEPLOY_ROOT: root, PATH: '/usr/bin:/bin' }, stderr: () => undefined });
    const said: string[] = [];
    await npm(host, ['install', 'x'], { progress: (text) => said.push(text) });
    expect(said.at(-1)).toBe('3 packages resolved, 2 downloaded');
    await npm(host, ['install', 'x']);
    expect(fs.readFileSync(path.join(root, 'calls'), 'utf8')).toBe('loglevel=http\nloglevel=\n');
  });
});
