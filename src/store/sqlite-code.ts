/**
 * SQLite's result codes by name (`SQLITE_BUSY`, `SQLITE_BUSY_SNAPSHOT`, `SQLITE_CORRUPT_INDEX`),
 * read from an error of node:sqlite (`ERR_SQLITE_ERROR` in `code`, the extended result code as a
 * number in `errcode`) or from one that has the name in `code` already (rebuilt from the store
 * thread's wire, which carries `code` only: sqlite/driver.ts withSqliteCode). Failure
 * classification (failure-kind.ts) and the SQLite store read codes only through `sqliteErrorCode`;
 * no driver is imported here.
 */

/** Primary result codes 1..28, in order. */
const PRIMARY = [
  'ERROR',
  'INTERNAL',
  'PERM',
  'ABORT',
  'BUSY',
  'LOCKED',
  'NOMEM',
  'READONLY',
  'INTERRUPT',
  'IOERR',
  'CORRUPT',
  'NOTFOUND',
  'FULL',
  'CANTOPEN',
  'PROTOCOL',
  'EMPTY',
  'SCHEMA',
  'TOOBIG',
  'CONSTRAINT',
  'MISMATCH',
  'MISUSE',
  'NOLFS',
  'AUTH',
  'FORMAT',
  'RANGE',
  'NOTADB',
  'NOTICE',
  'WARNING',
] as const;

/** Extended result codes (`primary | n << 8`) by primary, then n (sqlite3.h). */
const EXTENDED: Partial<Record<(typeof PRIMARY)[number], Record<number, string>>> = {
  ERROR: { 1: 'MISSING_COLLSEQ', 2: 'RETRY', 3: 'SNAPSHOT', 4: 'RESERVESIZE', 5: 'KEY', 6: 'UNABLE' },
  IOERR: {
    1: 'READ',
    2: 'SHORT_READ',
    3: 'WRITE',
    4: 'FSYNC',
    5: 'DIR_FSYNC',
    6: 'TRUNCATE',
    7: 'FSTAT',
    8: 'UNLOCK',
    9: 'RDLOCK',
    10: 'DELETE',
    11: 'BLOCKED',
    12: 'NOMEM',
    13: 'ACCESS',
    14: 'CHECKRESERVEDLOCK',
    15: 'LOCK',
    16: 'CLOSE',
    17: 'DIR_CLOSE',
    18: 'SHMOPEN',
    19: 'SHMSIZE',
    20: 'SHMLOCK',
    21: 'SHMMAP',
    22: 'SEEK',
    23: 'DELETE_NOENT',
    24: 'MMAP',
    25: 'GETTEMPPATH',
    26: 'CONVPATH',
    27: 'VNODE',
    28: 'AUTH',
    29: 'BEGIN_ATOMIC',
    30: 'COMMIT_ATOMIC',
    31: 'ROLLBACK_ATOMIC',
    32: 'DATA',
    33: 'CORRUPTFS',
    34: 'IN_PAGE',
    35: 'BADKEY',
    36: 'CODEC',
  },
  LOCKED: { 1: 'SHAREDCACHE', 2: 'VTAB' },
  BUSY: { 1: 'RECOVERY', 2: 'SNAPSHOT', 3: 'TIMEOUT' },
  CANTOPEN: { 1: 'NOTEMPDIR', 2: 'ISDIR', 3: 'FULLPATH', 4: 'CONVPATH', 5: 'DIRTYWAL', 6: 'SYMLINK' },
  CORRUPT: { 1: 'VTAB', 2: 'SEQUENCE', 3: 'INDEX' },
  READONLY: { 1: 'RECOVERY', 2: 'CANTLOCK', 3: 'ROLLBACK', 4: 'DBMOVED', 5: 'CANTINIT', 6: 'DIRECTORY' },
  ABORT: { 2: 'ROLLBACK' },
  CONSTRAINT: {
    1: 'CHECK',
    2: 'COMMITHOOK',
    3: 'FOREIGNKEY',
    4: 'FUNCTION',
    5: 'NOTNULL',
    6: 'PRIMARYKEY',
    7: 'TRIGGER',
    8: 'UNIQUE',
    9: 'VTAB',
    10: 'ROWID',
    11: 'PINNED',
    12: 'DATATYPE',
  },
  NOTICE: { 1: 'RECOVER_WAL', 2: 'RECOVER_ROLLBACK', 3: 'RBU' },
  WARNING: { 1: 'AUTOINDEX' },
  AUTH: { 1: 'USER' },
};

/** The name of SQLite result code `errcode` (primary or extended), e.g. 517 → `SQLITE_BUSY_SNAPSHOT`. */
export function sqliteCodeName(errcode: number): string {
  const primary = PRIMARY[(errcode & 0xff) - 1];
  if (!primary) return `SQLITE_${errcode}`;
  const detail = EXTENDED[primary]?.[errcode >> 8];
  return detail ? `SQLITE_${primary}_${detail}` : `SQLITE_${primary}`;
}

/** The `SQLITE_*` code of an error of either driver (or of one rebuilt from the store thread), else null. */
export function sqliteErrorCode(err: unknown): string | null {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  if (typeof e?.code === 'string' && e.code.startsWith('SQLITE_')) return e.code;
  if (e?.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') return sqliteCodeName(e.errcode);
  return null;
}
