// The single executable's entry point. It compiles the bundled program (an SEA asset)
// with a V8 code cache made at build time by running the program (scripts/code-cache.cjs),
// so the functions a start-up runs come precompiled; Node's own SEA code cache covers
// only what V8 compiles eagerly, which in a bundle is little more than the wrappers.
// Two caches: a small one for the CLI (help, most commands) and a larger one that also
// holds the install's module graph; V8 deserializes a whole cache, so each start takes
// the one it needs. `--version` is answered before any of that. A cache from another
// V8 (a cross-built binary has none) is ignored, not an error.
'use strict';
const sea = require('node:sea');

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${sea.getAsset('version.txt', 'utf8')}\n`);
} else {
  const vm = require('node:vm');
  const installLike = args.length === 0 || args[0].startsWith('-') || ['install', 'restore', 'render'].includes(args[0]);
  let cachedData;
  try {
    cachedData = Buffer.from(sea.getAsset(installLike ? 'code-cache-install.bin' : 'code-cache-cli.bin'));
  } catch {
    cachedData = undefined;
  }
  const source = sea.getAsset('service-deploy.cjs', 'utf8');
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: 'service-deploy.cjs',
    cachedData,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const module_ = { exports: {} };
  script.runInThisContext()(module_.exports, require, module_, process.execPath, require('node:path').dirname(process.execPath));
}
