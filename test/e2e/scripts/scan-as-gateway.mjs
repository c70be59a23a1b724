// Issue 27 item 2: every file the gateway can read, searched for every secret value.
// Run by test/e2e/secrets.ts (scanAsGateway) with the deployed Node, inside the gateway's
// own mount and UTS namespaces (nsenter -t <MainPID>) and with its credentials (setpriv:
// uid 0, every capability dropped, no_new_privs), so it sees exactly the file system the
// unit's sandbox gives the gateway and may open exactly what the gateway may open.
//
// Input on stdin (never argv): a JSON object {name: secret value}. Output on stdout: one
// JSON report, {files, unreadable, bytes, findings: [{path, secrets, compressed?}], skipped}.
// Walks / without following symbolic links; /proc, /sys and /dev are not walked (the
// gateway's own environment, in /proc, holds the channel and MCP values by design, spec
// 2.6). Regular files only (a FIFO would block); gzip files are searched decompressed too
// (the backups are .tar.gz). Files above MAX_BYTES are listed as skipped, never silently.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const PRUNED = new Set(['/proc', '/sys', '/dev']);
const MAX_BYTES = 1024 ** 3;
const CHUNK = 4 * 1024 * 1024;

const secrets = Object.entries(JSON.parse(fs.readFileSync(0, 'utf8'))).map(([name, value]) => [name, Buffer.from(String(value))]);
const longest = Math.max(...secrets.map(([, v]) => v.length));
const report = { files: 0, unreadable: 0, bytes: 0, findings: [], skipped: [] };
const seenDirs = new Set();

function found(buffer) {
  return secrets.filter(([, v]) => buffer.indexOf(v) >= 0).map(([name]) => name);
}

/** The secrets in a file read in chunks, each chunk searched with the previous one's tail (a value across the edge). */
function searchFile(file, size) {
  const names = new Set();
  const fd = fs.openSync(file, 'r');
  try {
    let tail = Buffer.alloc(0);
    let head;
    const chunk = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      const data = Buffer.concat([tail, chunk.subarray(0, n)]);
      head ??= Buffer.from(data.subarray(0, 2));
      for (const name of found(data)) names.add(name);
      tail = Buffer.from(data.subarray(Math.max(0, data.length - longest + 1)));
      report.bytes += n;
    }
    return { names, gzip: head !== undefined && head[0] === 0x1f && head[1] === 0x8b };
  } finally {
    fs.closeSync(fd);
  }
}

function visit(file) {
  let info;
  try {
    info = fs.lstatSync(file);
  } catch {
    return; // gone meanwhile
  }
  if (info.isDirectory()) {
    if (PRUNED.has(file)) return;
    const key = `${info.dev}:${info.ino}`;
    if (seenDirs.has(key)) return; // a folder bound twice
    seenDirs.add(key);
    let names;
    try {
      names = fs.readdirSync(file);
    } catch {
      report.unreadable++;
      return;
    }
    for (const name of names) visit(path.join(file, name));
    return;
  }
  if (!info.isFile()) return;
  if (info.size > MAX_BYTES) {
    report.skipped.push({ path: file, size: info.size });
    return;
  }
  let result;
  try {
    result = searchFile(file, info.size);
  } catch {
    report.unreadable++;
    return;
  }
  report.files++;
  const names = result.names;
  let compressed = false;
  if (result.gzip) {
    try {
      for (const name of found(zlib.gunzipSync(fs.readFileSync(file), { maxOutputLength: MAX_BYTES }))) {
        if (!names.has(name)) compressed = true;
        names.add(name);
      }
    } catch {
      // not gzip after all, or larger than MAX_BYTES unpacked: searched as stored only
    }
  }
  if (names.size > 0) report.findings.push({ path: file, secrets: [...names].sort(), ...(compressed ? { compressed: true } : {}) });
}

// A folder to walk instead of / (for trying the script out); the e2e walks /.
visit(process.argv[2] ?? '/');
report.findings.sort((a, b) => a.path.localeCompare(b.path));
process.stdout.write(`${JSON.stringify(report)}\n`);
