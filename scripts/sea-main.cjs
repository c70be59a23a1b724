// The single executable's entry point. The program is split by the build into CommonJS
// chunks (SEA assets `chunks/*.js`): `main.js`, the CLI, and one chunk per lazily
// imported part (the install, doctor, guard, partner...) plus the chunks they share.
// A chunk is compiled only when first required, each with its own V8 code cache
// (`chunks/<name>.cache`, made at build time by scripts/code-cache.cjs running the
// program), and evaluated once: one module instance per chunk, so `instanceof` of our
// error classes holds across chunks. A start thus reads, deserializes and runs only
// what its command needs. A cache from another V8 (a cross-built binary has none) is
// ignored by V8, not an error. `--version` is answered before any of that, and so is
// a bare `--help` wherever the program would print it at its full width of 100
// columns (a pipe, or a terminal that wide): the build saved that text
// (scripts/help-text.cjs); a narrower terminal gets it from the program, wrapped to fit.
//
// scripts/code-cache.cjs requires this file outside a single executable to compile the
// chunks exactly as here (same wrapper, same options): a cache only fits its source.
'use strict';

const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {';
const WRAPPER_TAIL = '\n})';

/**
 * A chunk loader over `readSource(name)` and `readCache(name)` (undefined: none);
 * `filename` is every chunk's __filename (what import.meta.url names). A chunk's
 * stack frames name it `chunks/<name>` (src/stack.ts maps them to the sources).
 * `scripts` keeps each compiled vm.Script (the code cache is made from it);
 * `reset()` forgets the module instances, so the program can be run again.
 */
function createLoader(readSource, readCache, filename, vm, path) {
  const scripts = new Map();
  let modules = new Map();
  const dirname = path.dirname(filename);
  function compile(name) {
    let script = scripts.get(name);
    if (!script) {
      script = new vm.Script(WRAPPER_HEAD + readSource(name) + WRAPPER_TAIL, {
        filename: `chunks/${name}`,
        cachedData: readCache(name),
        importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
      });
      scripts.set(name, script);
    }
    return script;
  }
  function load(name) {
    const loaded = modules.get(name);
    if (loaded) return loaded.exports;
    const module_ = { exports: {} };
    // Registered before it runs: a chunk cycle sees the exports object being filled.
    modules.set(name, module_);
    compile(name).runInThisContext()(module_.exports, requireFrom, module_, filename, dirname);
    return module_.exports;
  }
  // Chunks import each other as "./<name>"; anything else is a Node built-in.
  function requireFrom(id) {
    return id.startsWith('./') ? load(id.slice(2)) : require(id);
  }
  return {
    scripts,
    load,
    reset() {
      modules = new Map();
    },
  };
}

const sea = require('node:sea');
if (!sea.isSea()) {
  module.exports = { createLoader };
} else {
  const args = process.argv.slice(2);
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
    process.stdout.write(`${sea.getAsset('version.txt', 'utf8')}\n`);
  } else if (args.length === 1 && (args[0] === '--help' || args[0] === '-h') && !(process.stdout.isTTY && process.stdout.columns > 0 && process.stdout.columns < 100)) {
    // `--help | head -1` closes the pipe early: end quietly, as the program does.
    process.stdout.on('error', (error) => {
      if (error.code === 'EPIPE') process.exit(0);
      throw error;
    });
    process.stdout.write(sea.getAsset('help.txt', 'utf8'));
  } else {
    const loader = createLoader(
      (name) => sea.getAsset(`chunks/${name}`, 'utf8'),
      (name) => {
        try {
          return Buffer.from(sea.getAsset(`chunks/${name}.cache`));
        } catch {
          return undefined;
        }
      },
      process.execPath,
      require('node:vm'),
      require('node:path'),
    );
    loader.load('main.js');
  }
}
