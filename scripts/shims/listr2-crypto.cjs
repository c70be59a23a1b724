// Build-time stand-in for `crypto` inside listr2, which takes one function from it:
// randomUUID() for each task's id, an internal key that is never shown and guards
// nothing. Loading node:crypto starts OpenSSL (a fifth of a bare Node start) on every
// install; a task id only has to be unique in this process, which a counter makes sure.
'use strict';
let count = 0;
exports.randomUUID = () => {
  count++;
  const hex = (n, width) => n.toString(16).padStart(width, '0').slice(-width);
  // The shape of a version-4 UUID: 8-4-4-4-12 hex digits.
  return `${hex(count, 8)}-${hex(process.pid & 0xffff, 4)}-4${hex(Math.floor(Math.random() * 0x1000), 3)}-8${hex(Math.floor(Math.random() * 0x1000), 3)}-${hex(Math.floor(Math.random() * 2 ** 48), 12)}`;
};
