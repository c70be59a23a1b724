// Build-time stand-in for `escalade/sync` inside yargs, which walks up from the current
// folder reading every directory until it finds a package.json, to guess the program's
// version (we give ours) and for `pkgConf` (unused). Finding nothing, yargs keeps its
// defaults: nothing about the parsing depends on the folder the command runs in.
'use strict';
module.exports = () => undefined;
module.exports.default = module.exports;
