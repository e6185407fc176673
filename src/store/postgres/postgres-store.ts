/**
 * The PostgreSQL backend of Store: many Belfry nodes share one database. All tables live in one
 * schema (default `belfry`; every pooled connection sets it as its search_path), created and
 * upgraded by migrate() under an advisory lock so nodes may start together.
 *
 * - Claims lock rows with FOR UPDATE SKIP LOCKED: a node never waits for another node's claim.
 * - Every state change is one statement that also appends its transition (see queries.ts).
 * - Cluster state (leader lease, heartbeats, shard map) is timed by the DATABASE clock, so nodes
 *   with skewed clocks agree; timeNow() returns it.
 * - A resolved write is durable (synchronous_commit as configured, `on` by default), except the
 *   inserts of tenants whose settings say `durability: "relaxed"`, and claims: those commit with
 *   synchronous_commit = off (see docs/postgres.md for what a crash can lose then). Claims run
 *   on a small pool of their own whose connections are set so (no extra round trip): a claim lost
 *   in a crash of the server leaves its event scheduled, to be claimed and delivered again.
 * - Reads whose time follows the data (forecasts, the background counts) run on a read pool of
 *   their own (POSTGRES_READ_POOL_SIZE), so any number of them never holds a connection the API's
 *   writes need.
 *
 * Each part of Store is a class of its own on the same pools (database.ts): PostgresEvents
 * (event-store.ts), PostgresPull (pull-store.ts), PostgresSchedules (schedule-store.ts),
 * PostgresSources (source-store.ts), PostgresBulk (bulk-store.ts), PostgresAccounts
 * (account-store.ts) and PostgresCluster (cluster-store.ts); postgresStore below composes them
 * (core/compose.ts).
 */
import type pg from 'pg';
import type { Store, StoreCapabilities } from '../store.ts';
import { composeStore } from '../core/compose.ts';
import { createPool } from './db.ts';
import { PostgresDueWakeups } from './wakeups.ts';
import { POSTGRES_READ_STATEMENT_TIMEOUT_MS, PostgresDatabase } from './database.ts';
import { PostgresAccounts } from './account-store.ts';
import { PostgresBulk } from './bulk-store.ts';
import { PostgresCluster } from './cluster-store.ts';
import { PostgresEvents } from './event-store.ts';
import { CitusWorkers } from './citus/direct.ts';
import { CITUS_INSERT_CACHED_CONNECTIONS, CITUS_INSERT_POOL_SIZE, CitusEvents } from './citus/events.ts';
import { CitusCluster } from './citus/cluster.ts';
import { CitusBulk } from './citus/bulk.ts';
import { CitusPull } from './citus/pull.ts';
import { ensureCitusFunctions } from './citus/functions.ts';
import { eventsDistributed } from './citus/distribute.ts';
import { PostgresPull } from './pull-store.ts';
import { PostgresSchedules } from './schedule-store.ts';
import { PostgresSources } from './source-store.ts';

export { POSTGRES_READ_STATEMENT_TIMEOUT_MS };

export const POSTGRES_SCHEMA_DEFAULT = 'belfry';
/**
 * Connections per node. A node's hot paths (insert batches, claim batches, outcome batches, the
 * read-ahead) run a handful of statements at a time; more connections than that only add
 * server processes. See docs/postgres.md for sizing against max_connections.
 */
export const POSTGRES_POOL_SIZE_DEFAULT = 10;
/**
 * Connections of the claim pool (synchronous_commit = off), besides poolSize: the scheduler's
 * claims in flight at once (scheduler/claimer.ts CLAIMS_IN_FLIGHT_DEFAULT) plus its spare one.
 */
export const POSTGRES_CLAIM_POOL_SIZE = 5;
/**
 * Connections of the read pool, besides poolSize and the claim pool: the reads whose time grows
 * with the data rather than with a page (forecasts, the background counts). On their own few
 * connections, any number of them in flight waits for these rather than for the connections the
 * API's writes and the scheduler's batches need; the API lets each tenant run one forecast at a
 * time per node (api/routes/forecast.ts), so one tenant's forecasts leave room for another's.
 */
export const POSTGRES_READ_POOL_SIZE = 2;
export interface PostgresStoreOptions {
  /** A libpq-style URL: `postgres://user:password@host:5432/database`. */
  url: string;
  /** Lower-case identifier; created by migrate() when missing. Default `belfry`. */
  schema?: string;
  /** Default POSTGRES_POOL_SIZE_DEFAULT. */
  poolSize?: number;
  /** Errors of idle pooled connections (the server restarted, the network dropped); ignored by default. */
  onPoolError?: (err: Error) => void;
  /**
   * Distribute a new schema on Citus (the database must be a Citus coordinator with the citus
   * extension): events and what grows with them by shard, the rest as reference tables
   * (citus/distribute.ts). A schema distributed before is used as such whatever this says.
   */
  citus?: boolean;
}

/** Opens a pool on `url`, then creates or upgrades the schema. */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = opts.schema ?? POSTGRES_SCHEMA_DEFAULT;
  const size = opts.poolSize ?? POSTGRES_POOL_SIZE_DEFAULT;
  if (!Number.isInteger(size) || size < 1 || size > 1_000)
    throw new RangeError(`postgres: poolSize must be 1..1000, got ${size}`);
  const onError = opts.onPoolError ?? (() => {});
  const pool = createPool({ url: opts.url, schema, size, onError });
  const claimPool = createPool({ url: opts.url, schema, size: POSTGRES_CLAIM_POOL_SIZE, onError, asyncCommit: true });
  const readPool = createPool({
    url: opts.url,
    schema,
    size: POSTGRES_READ_POOL_SIZE,
    onError,
    statementTimeoutMs: POSTGRES_READ_STATEMENT_TIMEOUT_MS,
  });
  const citus = opts.citus ?? false;
  const migrated = new PostgresDatabase(pool, schema, claimPool, readPool);
  let distributed: boolean;
  try {
    await migrated.migrate({ citus });
    distributed = await eventsDistributed(pool, schema);
    if (distributed) await ensureCitusFunctions(pool, schema);
  } catch (err) {
    await migrated.close();
    throw err;
  }
  if (!distributed) return postgresStore(migrated, opts.url, citus, false);
  // On Citus the pools start again with settings of their own (docs/citus.md, Connections): a
  // statement over many shards uses one connection per worker, kept between transactions, and
  // batch inserts run on a small pool of their own whose connections keep more.
  await migrated.close();
  const oneConnectionPerWorker = ['citus.max_adaptive_executor_pool_size=1'];
  return postgresStore(
    new PostgresDatabase(
      createPool({ url: opts.url, schema, size, onError, settings: oneConnectionPerWorker }),
      schema,
      createPool({
        url: opts.url,
        schema,
        size: POSTGRES_CLAIM_POOL_SIZE,
        onError,
        asyncCommit: true,
        settings: oneConnectionPerWorker,
      }),
      createPool({
        url: opts.url,
        schema,
        size: POSTGRES_READ_POOL_SIZE,
        onError,
        statementTimeoutMs: POSTGRES_READ_STATEMENT_TIMEOUT_MS,
        settings: oneConnectionPerWorker,
      }),
      createPool({
        url: opts.url,
        schema,
        size: CITUS_INSERT_POOL_SIZE,
        onError,
        settings: [`citus.max_cached_conns_per_worker=${CITUS_INSERT_CACHED_CONNECTIONS}`],
      }),
      new CitusWorkers(opts.url, schema, onError),
    ),
    opts.url,
    citus,
    true,
  );
}

/** The PostgreSQL store: every part of Store, and what this backend has besides. */
export interface PostgresStore extends Store {
  /** The pool (its connections use `schema`); for diagnostics and tests. */
  readonly pool: pg.Pool;
  readonly schema: string;
  /** Claims' pool: commits that do not wait for the WAL flush (see the header); for tests. */
  readonly claimPool: pg.Pool;
  /** Long reads' pool (POSTGRES_READ_POOL_SIZE); for tests. */
  readonly readPool: pg.Pool;
  readonly dueWakeups: PostgresDueWakeups;
  /** Whether the schema is distributed on Citus (citus/distribute.ts), and the Citus statements serve it. */
  readonly distributed: boolean;
  /** On Citus, the workers' pools of claims and outcomes (citus/direct.ts); for diagnostics and tests. */
  readonly citusWorkers: CitusWorkers | null;
}

/**
 * The store on `database`: each part a class of its own on the same pools, composed
 * (core/compose.ts). `url` is the server's, for the wake-up listener's own connection; `citus`,
 * whether migrate() distributes a new schema on Citus; `distributed`, whether the schema is (the
 * Citus parts then serve it).
 */
function postgresStore(database: PostgresDatabase, url: string, citus: boolean, distributed: boolean): PostgresStore {
  const capabilities: StoreCapabilities = {
    multiNode: true,
    // On Citus: a look a second keeps events loaded 2 s ahead with the default lookahead (3 s);
    // events scheduled meanwhile come by wake-up.
    ...(distributed ? { readAheadPollMs: 1_000, claimsInFlight: 8 } : {}),
  };
  const events = distributed ? new CitusEvents(database) : new PostgresEvents(database);
  const own = {
    capabilities,
    pool: database.pool,
    schema: database.schema,
    claimPool: database.claimPool,
    readPool: database.readPool,
    distributed,
    citusWorkers: database.citusWorkers,
    dueWakeups: new PostgresDueWakeups(database.pool, url, database.schema),
    migrate: () => database.migrate({ citus }),
    warmUp: (shardCount: number) => events.warmUp(shardCount),
    ping: () => database.ping(),
    close: () => database.close(),
  };
  return composeStore(own, {
    events,
    pull: distributed ? new CitusPull(database) : new PostgresPull(database),
    schedules: new PostgresSchedules(database.pool, distributed),
    sources: new PostgresSources(database.pool),
    bulk: distributed ? new CitusBulk(database) : new PostgresBulk(database),
    accounts: new PostgresAccounts(database),
    cluster: distributed ? new CitusCluster(database) : new PostgresCluster(database),
  });
}
