// The single executable's entry point. It compiles the bundled program (an SEA asset)
// with a V8 code cache that the build made by running `--help` once, so the functions
// a start-up actually runs come precompiled; Node's own SEA code cache covers only the
// functions V8 compiles eagerly, which in a bundle is little more than the wrappers.
// A cache from another V8 (a cross-built binary has none) is ignored, not an error.
'use strict';
const sea = require('node:sea');
const vm = require('node:vm');

const source = sea.getAsset('service-deploy.cjs', 'utf8');
let cachedData;
try {
  cachedData = Buffer.from(sea.getAsset('code-cache.bin'));
} catch {
  cachedData = undefined;
}
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: 'service-deploy.cjs',
  cachedData,
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
const module_ = { exports: {} };
script.runInThisContext()(module_.exports, require, module_, process.execPath, require('node:path').dirname(process.execPath));
