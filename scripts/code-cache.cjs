// Build step (run by scripts/build.mjs with the target's own Node): compiles the bundle
// exactly as scripts/sea-main.cjs does, runs `--help` once with output discarded, and
// writes the V8 code cache, which then holds every function that run compiled.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const [bundlePath, outPath] = process.argv.slice(2);
const source = fs.readFileSync(bundlePath, 'utf8');
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: 'service-deploy.cjs',
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
process.argv = [process.argv[0], bundlePath, '--help'];
process.stdout.write = () => true;
process.on('beforeExit', () => {
  fs.writeFileSync(outPath, script.createCachedData());
  process.exit(0);
});
const module_ = { exports: {} };
script.runInThisContext()(module_.exports, require, module_, bundlePath, path.dirname(bundlePath));
