/**
 * What every part of the PostgreSQL store runs on (event-store.ts, pull-store.ts, bulk-store.ts,
 * account-store.ts, cluster-store.ts; schedule-store.ts and source-store.ts take the main pool):
 * the pools (on Citus, the workers' too) and the cache of tenants' durability; the store's migrate,
 * ping and close.
 * PostgresPart hands a part the pools and the cache.
 */
import type pg from 'pg';
import type { CitusWorkers } from './citus/direct.ts';
import { run } from './db.ts';
import { migrate } from './migrate.ts';
import { TenantDurability } from './tenant-durability.ts';

/**
 * Bound on one statement of the read pool. A forecast over 10,000,000 events took 2.1 s; past
 * this one answers 503 and gives its connection back, so slow forecasts cannot hold the read
 * pool for the main pool's 30 s. The background counts set their own (TX.beginLongRead).
 */
export const POSTGRES_READ_STATEMENT_TIMEOUT_MS = 10_000;

export class PostgresDatabase {
  /** Which tenants' inserts commit relaxed (their settings' durability), cached. */
  readonly durability = new TenantDurability();
  private closed = false;

  constructor(
    /** The pool (its connections use `schema`). */
    readonly pool: pg.Pool,
    readonly schema: string,
    /** Claims' pool: commits that do not wait for the WAL flush (see postgres-store.ts). */
    readonly claimPool: pg.Pool = pool,
    /** Long reads' pool (POSTGRES_READ_POOL_SIZE). */
    readonly readPool: pg.Pool = pool,
    /** Inserts' pool on Citus (citus/events.ts CITUS_INSERT_POOL_SIZE); the main pool elsewhere. */
    readonly insertPool: pg.Pool = pool,
    /** On Citus: the workers' own pools, for claims and outcomes on their shards (citus/direct.ts). */
    readonly citusWorkers: CitusWorkers | null = null,
  ) {}

  async migrate(opts: { citus?: boolean } = {}): Promise<void> {
    await migrate(this.pool, this.schema, opts);
  }

  async ping(): Promise<void> {
    if ((await run<{ ok: number }>(this.pool, 'ping')).rows[0]?.ok !== 1) throw new Error('postgres: ping failed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([
      this.pool.end(),
      ...[this.claimPool, this.readPool, this.insertPool].filter((p) => p !== this.pool).map((p) => p.end()),
      this.citusWorkers?.close(),
    ]);
  }
}

/** A part of the PostgreSQL store: its methods run on the store's pools. */
export abstract class PostgresPart {
  protected readonly pool: pg.Pool;
  protected readonly claimPool: pg.Pool;
  protected readonly readPool: pg.Pool;
  protected readonly insertPool: pg.Pool;
  protected readonly durability: TenantDurability;

  constructor(database: PostgresDatabase) {
    this.pool = database.pool;
    this.claimPool = database.claimPool;
    this.readPool = database.readPool;
    this.insertPool = database.insertPool;
    this.durability = database.durability;
  }
}
