// Build step: the top-level `--help` text, as the program prints it to a pipe (no
// terminal width: 100 columns), run from the chunks with this Node and saved for the SEA
// loader (scripts/sea-main.cjs), which prints it without loading the program when the
// command line is exactly `--help` or `-h` and the width would be the same.
//   usage: help-text.cjs CHUNKS_DIR OUT_FILE
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const { createLoader } = require('./sea-main.cjs');

const [chunksDir, outFile] = process.argv.slice(2);
if (!chunksDir || !outFile) throw new Error('usage: help-text.cjs CHUNKS_DIR OUT_FILE');
const loader = createLoader((name) => fs.readFileSync(path.join(chunksDir, name), 'utf8'), () => undefined, path.join(path.dirname(chunksDir), 'service-deploy.cjs'), vm, path);

let text = '';
Object.defineProperty(process.stdout, 'columns', { value: undefined });
Object.defineProperty(process.stdout, 'isTTY', { value: false });
process.stdout.write = (chunk) => {
  text += String(chunk);
  return true;
};
process.argv = [process.argv[0], 'service-deploy', '--help'];
process.on('beforeExit', () => {
  if (process.exitCode || !text.startsWith('service-deploy')) throw new Error(`--help printed no help (exit ${process.exitCode}): ${text.slice(0, 200)}`);
  fs.writeFileSync(outFile, text);
  process.exit(0);
});
loader.load('main.js');
