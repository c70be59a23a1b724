/**
 * SQLite integrity checks with Node's built-in `node:sqlite` (the SQLite this binary's
 * own Node carries): no program from the server is needed, so a backup is checked
 * the same way before a reset removes the runtime, in a sandbox, and on a server whose
 * OpenClaw is broken. Only private copies are opened (a backup's databases extracted
 * into a 0700 temp folder), never a live database.
 */

/** The first 16 bytes of every SQLite 3 database file. */
export const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

export function isSqliteHeader(bytes: Buffer): boolean {
  return bytes.length >= SQLITE_MAGIC.length && bytes.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC);
}

/**
 * `PRAGMA integrity_check` of the database at `realPath` (a private copy: opening it
 * applies a WAL or rolls back a hot journal beside it). Returns the problems SQLite
 * reports (empty when it says "ok"), or why it could not be opened.
 */
export async function integrityProblems(realPath: string): Promise<string[]> {
  const { DatabaseSync } = await import('node:sqlite');
  let db: InstanceType<typeof DatabaseSync> | undefined;
  try {
    db = new DatabaseSync(realPath);
    const rows = db.prepare('PRAGMA integrity_check').all() as Array<Record<string, unknown>>;
    const lines = rows.map((r) => String(Object.values(r)[0]));
    return lines.length === 1 && lines[0] === 'ok' ? [] : lines.slice(0, 10);
  } catch (error) {
    return [(error as Error).message];
  } finally {
    db?.close();
  }
}
