// Build-time stand-in for `assert` inside yargs, which uses two of its functions for
// internal invariants. Node's assert module loads its diff and error-formatting
// machinery (streams, colours) when required: a few ms on every start of the CLI.
'use strict';
function fail(message) {
  const error = new Error(message);
  error.code = 'ERR_ASSERTION';
  throw error;
}
exports.strictEqual = (actual, expected, message) => {
  if (!Object.is(actual, expected)) fail(message ?? `Expected values to be strictly equal: ${actual} !== ${expected}`);
};
exports.notStrictEqual = (actual, expected, message) => {
  if (Object.is(actual, expected)) fail(message ?? `Expected "actual" to be strictly unequal to: ${expected}`);
};
