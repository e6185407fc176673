/**
 * The SQLite driver under the store: Node's built-in node:sqlite (DatabaseSync), behind the little
 * the store uses of it: open a connection, prepare statements (rows as objects, or as arrays in
 * column order), run SQL, one IMMEDIATE transaction, a scalar function, close. Chosen over
 * better-sqlite3 by measurement (README, "Built on"): as fast for the store, and nothing to
 * download or compile at install.
 *
 * What the store relies on:
 * - `?` parameters bind positionally, `@x` ones from an object's `x` (extra keys are ignored);
 *   numbers bind as REAL, strings as TEXT, null as NULL. Node 24 refuses `undefined`.
 * - A statement returns integers as numbers, TEXT as strings; `run` answers changes and
 *   lastInsertRowid as numbers; `get` answers undefined when there is no row. Rows have no
 *   prototype: read their fields, do not compare them whole to object literals.
 * - An error of the database has `code` ERR_SQLITE_ERROR and the SQLite result code in `errcode`;
 *   read its name with sqliteErrorCode (store/sqlite-code.ts). `withSqliteCode` puts the name in
 *   `code` for errors that cross a thread.
 * - `immediate(fn)` runs fn in BEGIN IMMEDIATE … COMMIT (a savepoint when a transaction is open),
 *   rolled back when fn throws or the commit fails.
 */
// DatabaseSync: Node 24 has only this name; Node 26 also calls the class Database and deprecates
// the old name in its documentation only (DEP0210). Move when 24 is no longer supported.
import { DatabaseSync, type SQLInputValue, type SQLOutputValue } from 'node:sqlite';
import { sqliteErrorCode } from '../sqlite-code.ts';

export interface RunResult {
  changes: number;
  lastInsertRowid: number;
}

export interface Statement<Row = unknown> {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): Row | undefined;
  all(...params: unknown[]): Row[];
}

export interface OpenOptions {
  readonly?: boolean;
  /** Fail when the file does not exist instead of creating it. */
  fileMustExist?: boolean;
  /** How long a statement waits for a lock before failing with SQLITE_BUSY (busy_timeout). Default 5000. */
  timeoutMs?: number;
}

export interface Connection {
  prepare<Row = unknown>(sql: string): Statement<Row>;
  /** A statement whose rows are arrays in column order (no object, no property per column). */
  prepareArrays<Tuple extends unknown[]>(sql: string): Statement<Tuple>;
  exec(sql: string): void;
  /** Runs `fn` in one IMMEDIATE transaction (the write lock taken up front); see the module comment. */
  immediate<T>(fn: () => T): T;
  /** Registers a deterministic scalar SQL function. */
  function(name: string, fn: (...args: SQLOutputValue[]) => SQLInputValue): void;
  close(): void;
}

const BUSY_TIMEOUT_MS_DEFAULT = 5000;

/** Opens `file`. */
export function openConnection(file: string, options: OpenOptions = {}): Connection {
  let db: DatabaseSync;
  try {
    // node:sqlite opens read-write with SQLITE_OPEN_CREATE; a read-only open never creates.
    if (options.fileMustExist && !options.readonly) new DatabaseSync(file, { readOnly: true }).close();
    db = new DatabaseSync(file, {
      readOnly: options.readonly ?? false,
      timeout: options.timeoutMs ?? BUSY_TIMEOUT_MS_DEFAULT,
    });
  } catch (err) {
    throw withSqliteCode(err);
  }
  const prepare = (sql: string, arrays: boolean) => {
    const stmt = db.prepare(sql);
    // The store's parameter objects may carry keys a statement does not name.
    stmt.setAllowUnknownNamedParameters(true);
    if (arrays) stmt.setReturnArrays(true);
    return stmt as unknown as Statement<never>;
  };
  let begin: Statement | null = null;
  let commit: Statement | null = null;
  let rollback: Statement | null = null;
  return {
    prepare: <Row>(sql: string) => prepare(sql, false) as Statement<Row>,
    prepareArrays: <Tuple extends unknown[]>(sql: string) => prepare(sql, true) as Statement<Tuple>,
    exec: (sql) => db.exec(sql),
    immediate<T>(fn: () => T): T {
      if (db.isTransaction) return savepoint(db, fn);
      begin ??= prepare('BEGIN IMMEDIATE', false);
      commit ??= prepare('COMMIT', false);
      rollback ??= prepare('ROLLBACK', false);
      begin.run();
      try {
        const result = fn();
        commit.run();
        return result;
      } catch (err) {
        // SQLite may have rolled back already (a full disk, an I/O error).
        if (db.isTransaction) rollback.run();
        throw err;
      }
    },
    function: (name, fn) => db.function(name, { deterministic: true }, fn),
    close: () => db.close(),
  };
}

/** `err` with its SQLite code name in `code` (node:sqlite says ERR_SQLITE_ERROR there), for a wire that carries `code` only. */
export function withSqliteCode<E>(err: E): E {
  const code = sqliteErrorCode(err);
  if (code && (err as { code?: unknown }).code !== code) (err as { code?: unknown }).code = code;
  return err;
}

/** A transaction nested in an open one: a savepoint, rolled back alone when fn throws. */
function savepoint<T>(db: DatabaseSync, fn: () => T): T {
  db.exec('SAVEPOINT belfry_nested');
  try {
    const result = fn();
    db.exec('RELEASE belfry_nested');
    return result;
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK TO belfry_nested; RELEASE belfry_nested');
    throw err;
  }
}
