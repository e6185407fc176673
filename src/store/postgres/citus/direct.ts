/**
 * Claims and outcome batches sent by the node straight to the worker that holds their Citus shard,
 * as plain PostgreSQL statements on that shard's own tables.
 *
 * Why: on Citus a statement on a distributed table is planned by Citus, then its shard query is
 * planned again by PostgreSQL, on every call: a distributed plan is never a generic one. Measured
 * on one worker with an empty claim: 2.0-2.2 ms a call on the worker (the distributed function of
 * functions.ts: 2.4-3.2 ms through the coordinator), against 0.19 ms for the same statement on the
 * shard table, prepared once with a generic plan. A claim or an outcome batch of one Citus shard
 * holds a few events (a batch is split over 32 Citus shards), so that fixed cost was most of the
 * database CPU per fired event.
 *
 * How: the Placement (placement.ts) also reads, for each Citus shard, the worker that holds it
 * and its shard tables' names. A pool per worker (the store URL's user, password and database,
 * the worker's host and port) runs, in one transaction: Citus' own write lock on the shard's
 * metadata (lock_shard_metadata, share mode: what Citus' router writes take, which a shard move
 * or split takes in exclusive mode before it moves the data); a check, under that lock, that the
 * worker still holds the shard (its pg_dist_placement, which Citus keeps in step on every node);
 * then plain PostgreSQL's statement (queries.ts, transitions included as a CTE) on the shard's
 * tables. So a write lands on the shard's one live copy, or does not happen.
 *
 * When the shard is no longer there (moved, split), the caller forgets the placement and sends the
 * call through the coordinator (functions.ts) instead; when a worker cannot be reached with the
 * store's credentials, the node does the same for WORKER_DOWN_MS before it tries that worker again.
 */
import type pg from 'pg';
import { StoreUnavailableError } from '../../store.ts';
import { createPool, rethrowUnavailable } from '../db.ts';
import { SQL } from '../queries.ts';
import { pinned } from './queries.ts';

/** Where one Citus shard of events lives, and its tables' names there (quoted, schema-qualified). */
export interface ShardHome {
  /** Citus' shard id of events (a decimal string: a bigint). */
  citusShard: string;
  host: string;
  port: number;
  events: string;
  transitions: string;
  /** shard_assignments' one shard (a reference table: a copy on every node). */
  assignments: string;
}

/** Connections per worker: as many as a node's claims and outcome batches keep in flight. */
export const WORKER_POOL_SIZE = 6;
/** How long a worker that refused or dropped a connection is left to the coordinator's route. */
export const WORKER_DOWN_MS = 10_000;

/**
 * How each kind of call begins its transaction on the worker, before the placement check ($ID:
 * the Citus shard id); 5 is PostgreSQL's ShareLock, the mode Citus' router writes take on a
 * shard's metadata.
 */
const BEGIN = {
  claim: 'BEGIN; SET LOCAL synchronous_commit TO off; SELECT lock_shard_metadata(5, ARRAY[$ID]::bigint[]);',
  record: 'BEGIN; SELECT lock_shard_metadata(5, ARRAY[$ID]::bigint[]);',
  read: 'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;',
};

/** Thrown when the shard is not (or no longer) on the worker: the caller takes the coordinator's route. */
export class ShardAway extends Error {}

/** Whether `err` means the shard's tables are gone from the worker (undefined_table: a split dropped them). */
function tablesGone(err: unknown): boolean {
  return (err as { code?: unknown })?.code === '42P01';
}

/** `sql` (of queries.ts) on the shard tables of `home`; throws when a table reference is left. */
function onShard(sql: string, home: ShardHome): string {
  const out = sql
    .replace(/\b(FROM|UPDATE|JOIN) events\b/g, `$1 ${home.events}`)
    .replace(/\bINSERT INTO transitions\b/g, `INSERT INTO ${home.transitions}`)
    .replace(/\bFROM shard_assignments\b/g, `FROM ${home.assignments}`);
  const left = /\b(FROM|UPDATE|JOIN|INTO) (events|transitions|shard_assignments)\b/.exec(out);
  if (left) throw new Error(`citus: ${left[0]} left in a statement for a shard table`);
  return out;
}

/** The statements a worker runs, as pinned for the Citus shard's Belfry shards, their transitions included. */
const DIRECT_SQL = {
  // As SQL.eventGroupLock / eventClaim / eventRecordAttempts, on the shards $3 / $9 / $11.
  groupLock: pinned(SQL.eventGroupLock, 3, true),
  claim: pinned(SQL.eventClaim, 9, true),
  record: pinned(SQL.eventRecordAttempts, 11, true),
};

/** The workers' pools, one per host and port, opened when first used. */
export class CitusWorkers {
  private readonly pools = new Map<string, pg.Pool>();
  private readonly downUntil = new Map<string, number>();
  private closed = false;
  /** Calls done on a worker, and calls that found their shard gone from it (for tests and diagnostics). */
  readonly counts = { done: 0, away: 0 };

  constructor(
    private readonly url: string,
    private readonly schema: string,
    private readonly onError: (err: Error) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether calls may go to `home`'s worker now (not closed, not left for a while after a failure). */
  usable(home: ShardHome): boolean {
    return !this.closed && (this.downUntil.get(key(home)) ?? 0) <= this.now();
  }

  /**
   * Claims on `home`'s shard (eventClaim's values, $1-$9; `lock` whether to take the group locks
   * first), as one transaction on its worker whose commit does not wait for the WAL flush (as
   * claims elsewhere: a claim lost in a crash is rescued). Throws ShardAway when the call did not
   * happen and may take the coordinator's route.
   */
  claim<R extends pg.QueryResultRow>(home: ShardHome, values: unknown[], lock: boolean): Promise<R[]> {
    return this.inShardTransaction(home, 'claim', async (client) => {
      if (lock)
        await client.query({
          name: `belfry_direct_lock_${home.citusShard}`,
          text: onShard(DIRECT_SQL.groupLock, home),
          values: [values[0], values[1], values[8]],
        });
      return (
        await client.query<R>({
          name: `belfry_direct_claim_${home.citusShard}`,
          text: onShard(DIRECT_SQL.claim, home),
          values,
        })
      ).rows;
    });
  }

  /** An outcome round on `home`'s shard (eventRecordAttempts' values, $1-$11), as claim(). */
  record(home: ShardHome, values: unknown[]): Promise<{ ord: number }[]> {
    return this.inShardTransaction(
      home,
      'record',
      async (client) =>
        (
          await client.query<{ ord: number }>({
            name: `belfry_direct_record_${home.citusShard}`,
            text: onShard(DIRECT_SQL.record, home),
            values,
          })
        ).rows,
    );
  }

  /**
   * A read on `home`'s shard: `sql`, a statement of the Citus store on one Citus shard (pinned),
   * named `name` for its prepared statement. Its snapshot is the one the worker's check of the
   * placement saw (repeatable read), so it reads the live copy, or throws ShardAway.
   */
  read<R extends pg.QueryResultRow>(
    home: ShardHome,
    name: string,
    sql: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return this.inShardTransaction(home, 'read', (client) =>
      client.query<R>({ name: `belfry_direct_${name}_${home.citusShard}`, text: onShard(sql, home), values }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.end()));
  }

  /**
   * `fn` in a transaction on `home`'s worker, after a check that the worker holds the shard: for a
   * write under Citus' metadata lock on the shard (share mode), so that no move switches over
   * before it commits (a claim's commit does not wait for the WAL flush); for a read in the
   * snapshot of the check. Rethrows as ShardAway what means the call did not happen and may go
   * another way; other errors as they are.
   */
  private async inShardTransaction<T>(
    home: ShardHome,
    mode: keyof typeof BEGIN,
    fn: (client: pg.PoolClient) => Promise<T>,
  ): Promise<T> {
    if (!/^\d+$/.test(home.citusShard)) throw new Error(`citus: bad shard id ${home.citusShard}`);
    let client: pg.PoolClient;
    try {
      client = await this.pool(home).connect();
    } catch (err) {
      this.downUntil.set(key(home), this.now() + WORKER_DOWN_MS);
      throw new ShardAway(`citus: worker ${key(home)} not reachable: ${(err as Error).message}`, { cause: err });
    }
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', onError);
    try {
      const begun = (await client.query(
        `${BEGIN[mode].replace('$ID', home.citusShard)}
        SELECT EXISTS (SELECT 1 FROM pg_dist_placement
          WHERE shardid = ${home.citusShard} AND groupid = (SELECT groupid FROM pg_dist_local_group)) AS here`,
      )) as unknown as pg.QueryResult<{ here: boolean }>[];
      if (begun.at(-1)?.rows[0]?.here !== true)
        throw new ShardAway(`citus: shard ${home.citusShard} is no longer on ${key(home)}`);
      const result = await fn(client);
      await client.query('COMMIT');
      this.counts.done += 1;
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((rollbackErr: Error) => {
        broken = rollbackErr;
      });
      if (err instanceof ShardAway || tablesGone(err)) {
        this.counts.away += 1;
        if (err instanceof ShardAway) throw err;
        throw new ShardAway(`citus: shard ${home.citusShard}: ${(err as Error).message}`, { cause: err });
      }
      try {
        rethrowUnavailable(err);
      } catch (e) {
        // Lost mid-call: the caller retries as after any lost connection, by the coordinator for a while.
        if (e instanceof StoreUnavailableError) this.downUntil.set(key(home), this.now() + WORKER_DOWN_MS);
        throw e;
      }
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  private pool(home: ShardHome): pg.Pool {
    const k = key(home);
    let pool = this.pools.get(k);
    if (!pool) {
      const url = new URL(this.url);
      url.hostname = home.host;
      url.port = String(home.port);
      pool = createPool({
        url: url.toString(),
        schema: this.schema,
        size: WORKER_POOL_SIZE,
        onError: this.onError,
        // The statements are prepared once per connection and shard; a generic plan is planned once.
        settings: ['plan_cache_mode=force_generic_plan'],
      });
      this.pools.set(k, pool);
    }
    return pool;
  }
}

function key(home: ShardHome): string {
  return `${home.host}:${home.port}`;
}
