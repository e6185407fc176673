/**
 * The SQLite backend of Store: one file in the data dir, one connection, one process (a lock
 * file), WAL with synchronous=FULL so that a resolved write is on disk; the scheduler's own
 * bookkeeping (claims, outcomes, leases, rescues) commits without an fsync of its own (see
 * writeRelaxed: at least once still holds across a power loss).
 *
 * Its clock (timeNow) is this process's Date.now(): one process owns the file, so there is no
 * other clock to agree with. The cluster methods (leases, heartbeats, the shard map's fence) judge
 * by the `now` their caller passes (Store's ClusterNow), so a test can run them on a simulated clock.
 *
 * The driver (driver.ts: Node's node:sqlite) is synchronous: every method does its
 * whole work, in one transaction, before it returns; the methods are async only to satisfy the Store interface. Batches keep each call
 * short (a 1000-event insert holds the event loop for a few milliseconds), and every read is
 * bounded (lists walk at most a page's worth of an index, store/event-list-plan.ts). The counts,
 * whose cost grows with the table, run on a reader thread with a connection of their own
 * (reader-thread.ts).
 *
 * Each part of Store is a class of its own on the one connection (database.ts): SqliteEvents
 * (event-store.ts), SqlitePull (pull-store.ts), SqliteSchedules (schedule-store.ts), SqliteSources
 * (source-store.ts), SqliteBulk (bulk-store.ts), SqliteAccounts (account-store.ts) and
 * SqliteCluster (cluster-store.ts); sqliteStore below composes them (core/compose.ts).
 */
import { join } from 'node:path';
import { sqliteErrorCode } from '../sqlite-code.ts';
import type { Store, StoreCapabilities } from '../store.ts';
import { composeStore } from '../core/compose.ts';
import type { Checkpointer } from './checkpointer.ts';
import { acquireDataDirLock } from './data-dir-lock.ts';
import { checkIntegrity, DamagedDatabaseError, isDamageCode, type IntegrityCheck } from './integrity-check.ts';
import { createPrivateFile, makePrivateDir } from './data-dir.ts';
import { openConnection, type Connection } from './driver.ts';
import type { InsertRowsResult } from './event-writes.ts';
import * as writes from './event-writes.ts';
import { migrate } from './migrate.ts';
import { PRAGMAS } from './queries.ts';
import { SqliteDatabase } from './database.ts';
import { SqliteAccounts } from './account-store.ts';
import { SqliteBulk } from './bulk-store.ts';
import { SqliteCluster } from './cluster-store.ts';
import { SqliteEvents } from './event-store.ts';
import { SqlitePull } from './pull-store.ts';
import { SqliteSchedules } from './schedule-store.ts';
import { SqliteSources } from './source-store.ts';

export const SQLITE_FILE_NAME_DEFAULT = 'belfry.db';

export interface SqliteStoreOptions {
  /** Created when missing. */
  dataDir: string;
  /** Default `belfry.db`. */
  fileName?: string;
  /**
   * Checks the file with PRAGMA quick_check before opening it, for at most this long
   * (integrity-check.ts); a damaged file fails the open with DamagedDatabaseError. Absent or 0:
   * no check.
   */
  integrityCheckMsMax?: number;
}

/**
 * Opens (creating and migrating as needed) the store of `dataDir`; takes the data dir's lock. The
 * dir is created 0700 and the files 0600 (data-dir.ts).
 */
export async function openSqliteStore(opts: SqliteStoreOptions): Promise<SqliteStore> {
  makePrivateDir(opts.dataDir);
  const lock = acquireDataDirLock(opts.dataDir);
  let db: Connection | undefined;
  const filePath = join(opts.dataDir, opts.fileName ?? SQLITE_FILE_NAME_DEFAULT);
  try {
    const integrity = opts.integrityCheckMsMax ? await checkIntegrity(filePath, opts.integrityCheckMsMax) : null;
    createPrivateFile(filePath);
    db = openConnection(filePath);
    for (const pragma of PRAGMAS) db.exec(`PRAGMA ${pragma}`);
    const mode = db.prepare<{ journal_mode: string }>('PRAGMA journal_mode').get()?.journal_mode;
    if (mode !== 'wal') throw new Error(`sqlite: ${filePath} refused WAL mode (journal_mode=${String(mode)})`);
    migrate(db, Date.now());
    const store = sqliteStore(new SqliteDatabase(db, lock, filePath));
    store.integrity = integrity;
    return store;
  } catch (err) {
    db?.close();
    lock.release();
    // Damage the check did not run long enough to find, or found by the open itself.
    const code = sqliteErrorCode(err);
    if (isDamageCode(code)) throw new DamagedDatabaseError(filePath, [`${code}: ${(err as Error).message}`]);
    throw err;
  }
}
/** The SQLite store: every part of Store, and what this backend has besides. */
export interface SqliteStore extends Store {
  /** The connection; for diagnostics and tests. */
  readonly db: Connection;
  /** WAL checkpoints, off the writer (checkpointer.ts). */
  readonly checkpointer: Checkpointer;
  /** The database file. */
  readonly filePath: string;
  /** What the check at open found (openSqliteStore's integrityCheckMsMax), null when not asked. */
  integrity: IntegrityCheck | null;
  /**
   * eventInsertMany for the store thread (thread-store.ts): the events come encoded by
   * encodeInsertRows and the answer is insertRows' own, so neither crosses the thread as records.
   */
  eventInsertRows(rows: (string | number | null)[], now: number): Promise<InsertRowsResult>;
}

/** The store on `database`: each part a class of its own on the same connection, composed (core/compose.ts). */
function sqliteStore(database: SqliteDatabase): SqliteStore {
  const capabilities: StoreCapabilities = { multiNode: false };
  const events = new SqliteEvents(database);
  const own = {
    capabilities,
    db: database.db,
    checkpointer: database.checkpointer,
    filePath: database.filePath,
    integrity: null as IntegrityCheck | null,
    migrate: () => database.migrate(),
    ping: () => database.ping(),
    close: () => database.close(),
    eventInsertRows: (rows: (string | number | null)[], now: number) => events.eventInsertRows(rows, now),
  };
  return composeStore(own, {
    events,
    pull: new SqlitePull(database),
    schedules: new SqliteSchedules(
      database.db,
      (fn) => database.write(fn),
      (params) => writes.insertMany(database.q, params),
    ),
    sources: new SqliteSources(database.db, (fn) => database.write(fn)),
    bulk: new SqliteBulk(database),
    accounts: new SqliteAccounts(database),
    cluster: new SqliteCluster(database),
  });
}
