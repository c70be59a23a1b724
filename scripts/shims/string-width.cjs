// Build-time stand-in for the `string-width` package (used by yargs' cliui, listr2 and
// inquirer). The real module builds an Intl.Segmenter and large Unicode regexes when it
// loads, which cost more than the rest of `--help` together; our text is almost always
// plain ASCII, so measure that directly and load the real module only for other text.
'use strict';
const ANSI = /[\u001B\u009B][[\]()#;?]*(?:\d{1,4}(?:;\d{0,4})*)?[\dA-ORZcf-nqry=><~]/g;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
let real;
module.exports = function stringWidth(text, options) {
  if (typeof text !== 'string' || text.length === 0) return 0;
  const plain = text.includes('\u001B') || text.includes('\u009B') ? text.replace(ANSI, '') : text;
  if (PRINTABLE_ASCII.test(plain)) return plain.length;
  real ??= require('string-width-real').default;
  return real(text, options);
};
module.exports.default = module.exports;
