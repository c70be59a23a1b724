// Build step (run by scripts/build.mjs with the target's own Node): compiles the bundle
// exactly as scripts/sea-main.cjs does, runs it the way users start it, with output
// discarded and nothing written, and saves V8 code caches holding every function those
// runs compiled (usage: code-cache.cjs BUNDLE CLI_CACHE INSTALL_CACHE):
//   CLI_CACHE       after --help: the CLI and its help
//   INSTALL_CACHE   after install with no answers in an empty sandbox root as well:
//                   the install's module graph, up to where the missing answers stop it
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const vm = require('node:vm');

const [bundlePath, cliCachePath, installCachePath] = process.argv.slice(2);
const source = fs.readFileSync(bundlePath, 'utf8');
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: 'service-deploy.cjs',
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
const program = script.runInThisContext();
const sandbox = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-code-cache-'));
const runs = [
  { args: ['--help'], cache: cliCachePath },
  { args: ['install', '--non-interactive'], cache: installCachePath },
];

process.stdout.write = () => true;
process.stderr.write = () => true;
for (const key of Object.keys(process.env)) if (key.startsWith('SERVICE_')) delete process.env[key];
process.env.SERVICE_DEPLOY_ROOT = sandbox;

let next = 0;
function runNext() {
  if (next > 0) fs.writeFileSync(runs[next - 1].cache, script.createCachedData());
  if (next === runs.length) {
    fs.rmSync(sandbox, { recursive: true, force: true });
    process.exit(0);
  }
  process.argv = [process.argv[0], bundlePath, ...runs[next++].args];
  const module_ = { exports: {} };
  program(module_.exports, require, module_, bundlePath, path.dirname(bundlePath));
}
// Each run ends when its promises settle; then the next one starts.
process.on('beforeExit', () => {
  process.exitCode = 0;
  runNext();
});
runNext();
