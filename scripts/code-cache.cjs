// Build step (run by scripts/build.mjs with the target's own Node, one process per
// cache): compiles the bundle exactly as scripts/sea-main.cjs does, runs it the way
// users start it, with output discarded and nothing written, and saves the V8 code
// cache, which then holds every function those runs compiled.
//   usage: code-cache.cjs BUNDLE OUT cli|install|ops
//   cli       --help: the CLI and its help
//   install   --help, then install with no answers in an empty sandbox root: the
//             install's module graph, up to where the missing answers stop it
//   ops       --help, then doctor and guard in that root with an empty PATH (every
//             command they try fails at once): the operations' code
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const vm = require('node:vm');

const PLANS = {
  cli: [['--help']],
  install: [['--help'], ['install', '--non-interactive']],
  ops: [['--help'], ['doctor'], ['guard']],
};
const [bundlePath, outPath, planName] = process.argv.slice(2);
const runs = PLANS[planName];
if (!runs) throw new Error(`unknown plan ${planName}`);

const source = fs.readFileSync(bundlePath, 'utf8');
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: 'service-deploy.cjs',
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
const program = script.runInThisContext();
const sandbox = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-code-cache-'));

process.stdout.write = () => true;
process.stderr.write = () => true;
for (const key of Object.keys(process.env)) if (key.startsWith('SERVICE_')) delete process.env[key];
process.env.SERVICE_DEPLOY_ROOT = sandbox;
process.env.PATH = path.join(sandbox, 'no-commands-here');

let next = 0;
function runNext() {
  if (next === runs.length) {
    fs.writeFileSync(outPath, script.createCachedData());
    fs.rmSync(sandbox, { recursive: true, force: true });
    process.exit(0);
  }
  process.argv = [process.argv[0], bundlePath, ...runs[next++]];
  const module_ = { exports: {} };
  program(module_.exports, require, module_, bundlePath, path.dirname(bundlePath));
}
// Each run ends when its promises settle; then the next one starts.
process.on('beforeExit', () => {
  process.exitCode = 0;
  runNext();
});
runNext();
