/**
 * The connection every part of the SQLite store runs on (event-store.ts, pull-store.ts,
 * bulk-store.ts, account-store.ts, cluster-store.ts, schedule-store.ts, source-store.ts): the
 * prepared statements, the transactions (each call one IMMEDIATE transaction; the scheduler's own
 * bookkeeping relaxed, see writeRelaxed), the reader thread for counts and the checkpointer;
 * the store's migrate, ping and close. SqlitePart hands a part the statements and transactions.
 */
import { Checkpointer } from './checkpointer.ts';
import type { DataDirLock } from './data-dir-lock.ts';
import type { Connection } from './driver.ts';
import { migrate } from './migrate.ts';
import { prepareQueries, READER_SQL, type Queries } from './queries.ts';
import { prepareBulkQueries, type BulkQueries } from './bulk-queries.ts';
import { ReaderThread } from './reader-thread.ts';

export class SqliteDatabase {
  readonly q: Queries;
  readonly bq: BulkQueries;
  /** Counts over every event run here, off the event loop. */
  readonly reader: ReaderThread;
  /** WAL checkpoints, off the writer (checkpointer.ts). */
  readonly checkpointer: Checkpointer;
  private closed = false;

  constructor(
    readonly db: Connection,
    private readonly lock: DataDirLock,
    /** The database file. */
    readonly filePath: string,
  ) {
    this.q = prepareQueries(db);
    this.bq = prepareBulkQueries(db);
    this.reader = new ReaderThread(filePath, READER_SQL);
    this.q.walAutocheckpoint.get();
    this.checkpointer = new Checkpointer(filePath);
  }

  /** Runs `fn` in one IMMEDIATE transaction (the write lock is taken up front, never upgraded). */
  write<T>(fn: () => T): T {
    return this.db.immediate(fn);
  }

  /**
   * A write of the scheduler's own bookkeeping (claims, outcomes, lease renewals, rescues),
   * committed with synchronous=NORMAL: no fsync of its own. A process crash loses nothing (the
   * WAL is in the OS); a power loss may lose the newest of these commits, never a prefix gap, and
   * losing a claim or an outcome only makes an event due or executing again: it is delivered again
   * (at least once), never lost. The next synchronous=FULL commit (every acknowledged API write)
   * fsyncs the WAL with everything before it. Measured on this VM: an fsync per claim batch was
   * the largest stall of the event loop when events are due at many distinct milliseconds.
   */
  writeRelaxed<T>(fn: () => T): T {
    this.q.synchronousNormal.run();
    try {
      return this.db.immediate(fn);
    } finally {
      this.q.synchronousFull.run();
    }
  }

  async migrate(): Promise<void> {
    migrate(this.db, Date.now());
  }

  async ping(): Promise<void> {
    if (this.q.ping.get()?.ok !== 1) throw new Error('sqlite: ping failed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.reader.close();
      await this.checkpointer.close();
      this.db.close();
    } finally {
      this.lock.release();
    }
  }
}

/** A part of the SQLite store: its methods run the connection's statements in its transactions. */
export abstract class SqlitePart {
  protected readonly q: Queries;
  protected readonly bq: BulkQueries;
  protected readonly reader: ReaderThread;

  constructor(private readonly database: SqliteDatabase) {
    this.q = database.q;
    this.bq = database.bq;
    this.reader = database.reader;
  }

  /** One IMMEDIATE transaction. */
  protected write<T>(fn: () => T): T {
    return this.database.write(fn);
  }

  /** One IMMEDIATE transaction without an fsync of its own (SqliteDatabase.writeRelaxed). */
  protected writeRelaxed<T>(fn: () => T): T {
    return this.database.writeRelaxed(fn);
  }
}
