// The single executable's entry point. It compiles the bundled program (an SEA asset)
// with a V8 code cache made at build time by running the program (scripts/code-cache.cjs),
// so the functions a start-up runs come precompiled; Node's own SEA code cache covers
// only what V8 compiles eagerly, which in a bundle is little more than the wrappers.
// Three caches (the CLI; the install's module graph; doctor and guard): V8 deserializes
// a whole cache, so each start takes the one it needs. `--version` is answered before any of that. A cache from another
// V8 (a cross-built binary has none) is ignored, not an error.
'use strict';
const sea = require('node:sea');

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${sea.getAsset('version.txt', 'utf8')}\n`);
} else {
  const vm = require('node:vm');
  // install is the default command; a bare --help is the CLI's.
  const help = args.includes('--help') || args.includes('-h');
  const command = args.find((arg) => !arg.startsWith('-')) ?? (help ? 'help' : 'install');
  const plan = ['install', 'restore', 'render'].includes(command) ? 'install' : ['doctor', 'guard', 'status'].includes(command) ? 'ops' : 'cli';
  let cachedData;
  try {
    cachedData = Buffer.from(sea.getAsset(`code-cache-${plan}.bin`));
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
