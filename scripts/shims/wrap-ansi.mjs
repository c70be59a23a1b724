// Build-time stand-in for `wrap-ansi` (used by yargs' cliui to lay out --help). The real
// module walks every character of every wrapped line again to carry colour codes across
// line breaks, most of the cost of printing help; our help text is plain printable
// ASCII, where that walk changes nothing. Such text takes the same algorithm below with
// one column per character; anything else goes to the real module. Parity with the real
// module is tested (test/sea.test.ts renders every help screen both ways).
import wrapAnsiReal from 'wrap-ansi-real';

const PLAIN = /^[\x20-\x7e\n]*$/;

export default function wrapAnsi(string, columns, options = {}) {
  const text = String(string);
  if (!PLAIN.test(text)) return wrapAnsiReal(text, columns, options);
  return text
    .split('\n')
    .map((line) => exec(line, columns, options))
    .join('\n');
}

// wrap-ansi 9's exec() for text without escapes, where the width of a string is its length.
function exec(string, columns, options) {
  if (options.trim !== false && string.trim() === '') return '';
  const words = string.split(' ');
  let rows = [''];
  for (const [index, word] of words.entries()) {
    if (options.trim !== false) rows[rows.length - 1] = rows.at(-1).trimStart();
    let rowLength = rows.at(-1).length;
    if (index !== 0) {
      if (rowLength >= columns && (options.wordWrap === false || options.trim === false)) {
        rows.push('');
        rowLength = 0;
      }
      if (rowLength > 0 || options.trim === false) {
        rows[rows.length - 1] += ' ';
        rowLength++;
      }
    }
    if (options.hard && word.length > columns) {
      const remainingColumns = columns - rowLength;
      const breaksStartingThisLine = 1 + Math.floor((word.length - remainingColumns - 1) / columns);
      const breaksStartingNextLine = Math.floor((word.length - 1) / columns);
      if (breaksStartingNextLine < breaksStartingThisLine) rows.push('');
      wrapWord(rows, word, columns);
      continue;
    }
    if (rowLength + word.length > columns && rowLength > 0 && word.length > 0) {
      if (options.wordWrap === false && rowLength < columns) {
        wrapWord(rows, word, columns);
        continue;
      }
      rows.push('');
    }
    if (rowLength + word.length > columns && options.wordWrap === false) {
      wrapWord(rows, word, columns);
      continue;
    }
    rows[rows.length - 1] += word;
  }
  if (options.trim !== false) rows = rows.map(trimSpacesRight);
  return rows.join('\n');
}

function wrapWord(rows, word, columns) {
  let visible = rows.at(-1).length;
  for (let index = 0; index < word.length; index++) {
    const character = word[index];
    if (visible + 1 <= columns) rows[rows.length - 1] += character;
    else {
      rows.push(character);
      visible = 0;
    }
    visible += 1;
    if (visible === columns && index < word.length - 1) {
      rows.push('');
      visible = 0;
    }
  }
  if (!visible && rows.at(-1).length > 0 && rows.length > 1) rows[rows.length - 2] += rows.pop();
}

function trimSpacesRight(string) {
  const words = string.split(' ');
  let last = words.length;
  while (last > 0 && words[last - 1].length === 0) last--;
  if (last === words.length) return string;
  return words.slice(0, last).join(' ') + words.slice(last).join('');
}
