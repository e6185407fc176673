/**
 * The SQLite driver under the store, behind the little the store uses of one: open a connection,
 * prepare statements (rows as objects, or as arrays in column order), run SQL, one IMMEDIATE
 * transaction, a scalar function, close. Two drivers implement it, chosen per process by
 * BELFRY_SQLITE_DRIVER (`node`, the default: Node's built-in node:sqlite; `better-sqlite3`), so
 * the two can be measured on the same code (bench/, README "Built on").
 *
 * What the store may rely on, on both:
 * - `?` parameters bind positionally, `@x` ones from an object's `x` (extra keys are ignored);
 *   numbers bind as REAL, strings as TEXT, null as NULL; nothing else is bound.
 * - A statement returns integers as numbers, TEXT as strings; `run` answers changes and
 *   lastInsertRowid as numbers; `get` answers undefined when there is no row. Rows of node:sqlite
 *   have no prototype: read their fields, do not compare them whole to object literals.
 * - An error of the database carries its SQLite code; read it with sqliteErrorCode
 *   (store/sqlite-code.ts). `withSqliteCode` puts the name in `code` for errors that cross a thread.
 * - `immediate(fn)` runs fn in BEGIN IMMEDIATE … COMMIT (a savepoint when a transaction is open),
 *   rolled back when fn throws or the commit fails, as better-sqlite3's transaction().immediate().
 */
import BetterSqlite3 from 'better-sqlite3';
import { DatabaseSync, type SQLInputValue, type SQLOutputValue } from 'node:sqlite';
import { sqliteErrorCode } from '../sqlite-code.ts';

export type SqliteDriverName = 'node' | 'better-sqlite3';

/** The driver of this process: BELFRY_SQLITE_DRIVER, `node` when unset. */
export const SQLITE_DRIVER: SqliteDriverName = driverFromEnv(process.env.BELFRY_SQLITE_DRIVER);

function driverFromEnv(value: string | undefined): SqliteDriverName {
  if (value === undefined || value === '' || value === 'node') return 'node';
  if (value === 'better-sqlite3') return value;
  throw new Error(`BELFRY_SQLITE_DRIVER=${value}: expected node or better-sqlite3`);
}

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

/** Opens `file` with the driver of this process (or `driver`). */
export function openConnection(file: string, options: OpenOptions = {}, driver = SQLITE_DRIVER): Connection {
  return driver === 'node' ? openNode(file, options) : openBetter(file, options);
}

/** `err` with its SQLite code name in `code` (node:sqlite says ERR_SQLITE_ERROR there), for a wire that carries `code` only. */
export function withSqliteCode<E>(err: E): E {
  const code = sqliteErrorCode(err);
  if (code && (err as { code?: unknown }).code !== code) (err as { code?: unknown }).code = code;
  return err;
}

function openNode(file: string, options: OpenOptions): Connection {
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
    // better-sqlite3 ignores the keys of a parameter object that the statement does not name.
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

/** A transaction nested in an open one, as better-sqlite3 nests them. */
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

function openBetter(file: string, options: OpenOptions): Connection {
  const db = new BetterSqlite3(file, {
    readonly: options.readonly ?? false,
    fileMustExist: options.fileMustExist ?? false,
    timeout: options.timeoutMs ?? BUSY_TIMEOUT_MS_DEFAULT,
  });
  const tx = db.transaction((fn: () => unknown) => fn());
  return {
    prepare: <Row>(sql: string) => db.prepare<unknown[], Row>(sql) as unknown as Statement<Row>,
    prepareArrays: <Tuple extends unknown[]>(sql: string) =>
      db.prepare<unknown[], Tuple>(sql).raw(true) as unknown as Statement<Tuple>,
    exec: (sql) => void db.exec(sql),
    immediate: <T>(fn: () => T) => tx.immediate(fn) as T,
    function: (name, fn) => void db.function(name, { deterministic: true }, fn as (...args: unknown[]) => unknown),
    close: () => void db.close(),
  };
}
