/**
 * A strict reader of (already decompressed) tar streams, for archives we do not trust.
 *
 * Why not node-tar's Parser (which writes our backups): it drops pax records it does
 * not know (GNU sparse maps, `SCHILY.filetype=socket`, extended attributes), skips
 * unknown entry types quietly, and decodes names lossily, so a validator built on it
 * cannot see what a crafted archive really says. This reader reports every entry with
 * its raw type flag, every pax key that applied to it, whether its name is valid
 * UTF-8, and fails on a bad checksum, a truncated stream, an archive without its end
 * marker or data after it. It understands ustar, the POSIX pax extensions ('x') and
 * GNU long names ('L', 'K'); global pax headers ('g') are refused.
 */

export class TarFormatError extends Error {
  override readonly name = 'TarFormatError';
}

export interface TarEntry {
  /** Position in the archive, from 1. */
  index: number;
  /** The entry's name (pax or GNU long name applied); lossy when `nameIsUtf8` is false. */
  name: string;
  nameIsUtf8: boolean;
  /** The raw type flag ('0' file, '2' symlink, '5' directory...). */
  typeflag: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeMs: number;
  linkname: string;
  linknameIsUtf8: boolean;
  /** pax keys that applied to this entry (path, size, mtime...). */
  paxKeys: string[];
}

/** Receives a file's data; the reader awaits it (back-pressure). */
export type BodySink = (chunk: Buffer) => void | Promise<void>;

export interface TarLimits {
  /** Refuse the stream once this many bytes were read (a decompression bomb stops here). */
  maxBytes: number;
  /** Longest pax header or GNU long name body. */
  maxMetaBytes?: number;
}

const BLOCK = 512;
const TYPE_NAMES: Record<string, string> = {
  '0': 'regular file',
  '1': 'hard link',
  '2': 'symbolic link',
  '3': 'character device',
  '4': 'block device',
  '5': 'directory',
  '6': 'FIFO',
  '7': 'contiguous file',
  D: 'GNU dump directory',
  M: 'GNU multi-volume continuation',
  N: 'GNU old long name',
  S: 'GNU sparse file',
  V: 'tape volume header',
  A: 'Solaris ACL',
  E: 'Solaris extended attribute',
  I: 'inode metadata',
  X: 'Solaris extended header',
};

/** "symbolic link", "FIFO", "unknown type 'Q'": a type flag in words. */
export function typeName(typeflag: string): string {
  return TYPE_NAMES[typeflag] ?? `unknown type ${JSON.stringify(typeflag)}`;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const lossy = new TextDecoder('utf-8');

function decodeName(bytes: Buffer): { text: string; ok: boolean } {
  try {
    return { text: utf8.decode(bytes), ok: true };
  } catch {
    return { text: lossy.decode(bytes), ok: false };
  }
}

function cString(block: Buffer, start: number, length: number): Buffer {
  const field = block.subarray(start, start + length);
  const nul = field.indexOf(0);
  return nul < 0 ? field : field.subarray(0, nul);
}

/** An octal number field (spaces and NULs around it), or GNU base-256 when the high bit is set. */
function numberField(block: Buffer, start: number, length: number, what: string): number {
  const field = block.subarray(start, start + length);
  if (field[0]! & 0x80) {
    if (field[0] === 0xff) throw new TarFormatError(`negative ${what} in a tar header`);
    let value = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i++) {
      value = value * 256 + field[i]!;
      if (!Number.isSafeInteger(value)) throw new TarFormatError(`${what} in a tar header is too large`);
    }
    return value;
  }
  const text = field.toString('latin1').replace(/[\0 ]+$/, '').replace(/^[ ]+/, '');
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`bad ${what} field in a tar header (${JSON.stringify(text.slice(0, 16))})`);
  return parseInt(text, 8);
}

function checksumOk(block: Buffer): boolean {
  const stored = numberField(block, 148, 8, 'checksum');
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : block[i]!;
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  return stored === unsigned || stored === signed;
}

/** Pulls exact byte counts from a chunked stream. */
class ByteReader {
  private chunk: Buffer = Buffer.alloc(0);
  private done = false;
  total = 0;
  constructor(
    private readonly source: AsyncIterator<Buffer>,
    private readonly maxBytes: number,
  ) {}

  private async more(): Promise<boolean> {
    if (this.done) return false;
    const next = await this.source.next();
    if (next.done) {
      this.done = true;
      return false;
    }
    const buf = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    this.total += buf.length;
    if (this.total > this.maxBytes) throw new TarFormatError(`the archive unpacks to more than ${this.maxBytes} bytes`);
    this.chunk = this.chunk.length === 0 ? buf : Buffer.concat([this.chunk, buf]);
    return true;
  }

  /** Exactly n bytes; undefined at a clean end of stream; throws when it ends inside them. */
  async take(n: number): Promise<Buffer | undefined> {
    while (this.chunk.length < n) {
      if (!(await this.more())) {
        if (this.chunk.length === 0) return undefined;
        throw new TarFormatError('the archive is truncated (it ends inside an entry)');
      }
    }
    const out = this.chunk.subarray(0, n);
    this.chunk = this.chunk.subarray(n);
    return out;
  }

  /** Passes n bytes to `sink` (or drops them) chunk by chunk, then skips the block padding. */
  async pass(n: number, sink: BodySink | undefined): Promise<void> {
    let left = n;
    while (left > 0) {
      if (this.chunk.length === 0 && !(await this.more())) throw new TarFormatError('the archive is truncated (it ends inside a file)');
      const part = this.chunk.subarray(0, Math.min(left, this.chunk.length));
      this.chunk = this.chunk.subarray(part.length);
      left -= part.length;
      if (sink) await sink(part);
    }
    const pad = (BLOCK - (n % BLOCK)) % BLOCK;
    if (pad > 0 && (await this.take(pad)) === undefined) throw new TarFormatError('the archive is truncated (it ends inside a file)');
  }

  /** True if nothing but zero bytes is left (at most `max` of them). */
  async restIsZero(max: number): Promise<boolean> {
    let seen = 0;
    for (;;) {
      if (this.chunk.some((b) => b !== 0)) return false;
      seen += this.chunk.length;
      if (seen > max) return false;
      this.chunk = Buffer.alloc(0);
      if (!(await this.more())) return true;
    }
  }
}

const PAX_NUMBERS = new Set(['size', 'uid', 'gid']);
const PAX_TIMES = new Set(['mtime', 'atime', 'ctime']);

interface Pax {
  values: Map<string, { text: string; ok: boolean }>;
}

function parsePax(body: Buffer, index: number): Pax {
  const values = new Map<string, { text: string; ok: boolean }>();
  let at = 0;
  while (at < body.length) {
    if (body[at] === 0) break; // padding some writers leave
    const space = body.indexOf(0x20, at);
    const length = space < 0 ? NaN : Number(body.subarray(at, space).toString('latin1'));
    if (!Number.isSafeInteger(length) || length <= space - at || at + length > body.length || body[at + length - 1] !== 0x0a) {
      throw new TarFormatError(`entry ${index}: a malformed pax extended header`);
    }
    const record = body.subarray(space + 1, at + length - 1);
    const eq = record.indexOf(0x3d);
    if (eq <= 0) throw new TarFormatError(`entry ${index}: a malformed pax record`);
    const key = record.subarray(0, eq).toString('latin1');
    values.set(key, decodeName(record.subarray(eq + 1)));
    at += length;
  }
  return { values };
}

/**
 * Reads every entry of `source` (a decompressed tar stream). For each entry,
 * `onEntry` may return a sink for its data (files); the data of other entries is read
 * and dropped. Resolves after the end marker; throws TarFormatError on a malformed,
 * truncated or oversized stream, and whatever `onEntry` or a sink throws.
 */
export async function readTar(
  source: AsyncIterable<Buffer>,
  onEntry: (entry: TarEntry) => BodySink | undefined | Promise<BodySink | undefined>,
  limits: TarLimits,
): Promise<number> {
  const reader = new ByteReader(source[Symbol.asyncIterator](), limits.maxBytes);
  const maxMeta = limits.maxMetaBytes ?? 1 << 20;
  let index = 0;
  let pax: Pax | undefined;
  let longName: Buffer | undefined;
  let longLink: Buffer | undefined;
  for (;;) {
    const block = await reader.take(BLOCK);
    if (block === undefined) throw new TarFormatError('the archive is truncated (no end-of-archive marker)');
    if (block.every((b) => b === 0)) {
      const second = await reader.take(BLOCK);
      if (second === undefined || !second.every((b) => b === 0)) throw new TarFormatError('the archive has a damaged end-of-archive marker');
      if (pax || longName || longLink) throw new TarFormatError('the archive ends with an extended header that names no entry');
      if (!(await reader.restIsZero(1 << 20))) throw new TarFormatError('the archive has data after its end-of-archive marker');
      return index;
    }
    index++;
    if (!checksumOk(block)) throw new TarFormatError(`entry ${index}: bad tar header checksum (not a tar archive, or damaged)`);
    const magic = block.subarray(257, 263).toString('latin1');
    const posix = magic === 'ustar\0';
    if (!posix && magic !== 'ustar ') throw new TarFormatError(`entry ${index}: not a ustar header (${JSON.stringify(magic)})`);
    const rawFlag = String.fromCharCode(block[156]!);
    const typeflag = rawFlag === '\0' ? '0' : rawFlag;
    let size = numberField(block, 124, 12, 'size');

    if (typeflag === 'x' || typeflag === 'L' || typeflag === 'K' || typeflag === 'g') {
      if (typeflag === 'g') throw new TarFormatError(`entry ${index}: a global pax header (never in a service-deploy backup)`);
      if (size > maxMeta) throw new TarFormatError(`entry ${index}: an extended header of ${size} bytes (more than ${maxMeta})`);
      const chunks: Buffer[] = [];
      await reader.pass(size, (c) => void chunks.push(Buffer.from(c)));
      const body = Buffer.concat(chunks);
      if (typeflag === 'x') {
        if (pax) throw new TarFormatError(`entry ${index}: two pax headers in a row`);
        pax = parsePax(body, index);
      } else if (typeflag === 'L') longName = cString(body, 0, body.length);
      else longLink = cString(body, 0, body.length);
      index--; // meta entries do not count
      continue;
    }

    let name = decodeName(cString(block, 0, 100));
    if (posix) {
      const prefix = cString(block, 345, 155);
      if (prefix.length > 0) name = decodeName(Buffer.concat([prefix, Buffer.from('/'), cString(block, 0, 100)]));
    }
    let linkname = decodeName(cString(block, 157, 100));
    if (longName) name = decodeName(longName);
    if (longLink) linkname = decodeName(longLink);
    const paxKeys: string[] = [];
    let mtimeMs = numberField(block, 136, 12, 'mtime') * 1000;
    let uid = numberField(block, 108, 8, 'uid');
    let gid = numberField(block, 116, 8, 'gid');
    for (const [key, value] of pax?.values ?? []) {
      paxKeys.push(key);
      if (key === 'path') name = value;
      else if (key === 'linkpath') linkname = value;
      else if (PAX_NUMBERS.has(key) || PAX_TIMES.has(key)) {
        const ok = PAX_NUMBERS.has(key) ? /^\d{1,16}$/.test(value.text) : /^-?\d{1,16}(\.\d{1,12})?$/.test(value.text);
        if (!ok) throw new TarFormatError(`entry ${index}: bad pax ${key} value`);
        if (key === 'size') size = Number(value.text);
        if (key === 'uid') uid = Number(value.text);
        if (key === 'gid') gid = Number(value.text);
        if (key === 'mtime') mtimeMs = Math.round(Number(value.text) * 1000);
      }
    }
    pax = undefined;
    longName = undefined;
    longLink = undefined;
    if (!Number.isSafeInteger(size) || size < 0) throw new TarFormatError(`entry ${index}: bad size`);

    const entry: TarEntry = {
      index,
      name: name.text,
      nameIsUtf8: name.ok,
      typeflag,
      mode: numberField(block, 100, 8, 'mode') & 0o7777,
      uid,
      gid,
      size,
      mtimeMs,
      linkname: linkname.text,
      linknameIsUtf8: linkname.ok,
      paxKeys,
    };
    const sink = await onEntry(entry);
    // Hard and symbolic links carry no data whatever their size field says (POSIX).
    const dataBytes = typeflag === '1' || typeflag === '2' ? 0 : size;
    await reader.pass(dataBytes, sink);
  }
}
