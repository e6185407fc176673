/**
 * Claims, outcome batches, due lists and pull settles sent by the node straight to the worker that
 * holds their Citus shard, as plain PostgreSQL statements on that shard's own tables.
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
 * and its shard tables' names. Pools per worker (the store URL's user, password and database, the
 * worker's host and port) run plain PostgreSQL's statement (queries.ts, transitions included as a
 * CTE) on the shard's tables, one statement a call, guarded: before it reads a row, it calls
 * HERE_FUNCTION (functions.ts), which takes Citus' own write lock on the shard's metadata (share
 * mode: what Citus' router writes take; a shard move or split takes it in exclusive mode before
 * it switches over) and then checks that the worker still holds the shard, or raises. So a write
 * lands on the shard's one live copy, or does not happen; a due list reads the live copy.
 *
 * When the shard is no longer there (moved, split), the caller forgets the placement and sends the
 * call through the coordinator (functions.ts) instead; when a worker cannot be reached with the
 * store's credentials, the node does the same for WORKER_DOWN_MS before it tries that worker again.
 */
import type pg from 'pg';
import pgUtils from 'pg/lib/utils.js';
import { StoreUnavailableError } from '../../store.ts';
import { atMost, createPool, onEachConnection, rethrowUnavailable } from '../db.ts';
import { SQL } from '../queries.ts';
import { HERE_FUNCTION, NOT_HERE_SQLSTATE } from './functions.ts';
import { CITUS_SQL, pinned } from './queries.ts';

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

/**
 * Connections per worker and kind of call, each kind on its own pool as on plain PostgreSQL (an
 * outcome batch never waits behind claims): a call of the store runs at most 4 Citus shards at
 * once (events.ts SHARDS_IN_FLIGHT), and claims, like plain PostgreSQL's claim pool, may run a
 * few calls at once. Claims' connections commit without waiting for the WAL flush, as claims do
 * elsewhere (a claim lost in a crash is rescued).
 */
export const WORKER_POOL_SIZES = { claim: 5, record: 4, read: 4 } as const;
type CallKind = keyof typeof WORKER_POOL_SIZES;
/** How long a worker that refused or dropped a connection is left to the coordinator's route. */
export const WORKER_DOWN_MS = 10_000;
/**
 * Bound on getting a connection to a worker: past it the call goes through the coordinator. A
 * worker whose packets are dropped (a firewall) would otherwise hold a call for the OS' connect
 * timeout, minutes.
 */
export const WORKER_CONNECT_TIMEOUT_MS = 3_000;
/** Bound on warming the workers' pools (CitusWorkers.warm): past it the node goes on, and what is left is done on first use. */
export const WORKER_WARM_MS_MAX = 15_000;

/** Thrown when the shard is not (or no longer) on the worker: the caller takes the coordinator's route. */
export class ShardAway extends Error {}

/**
 * One Citus shard's part of a claim or an outcome batch (CitusWorkers.claimMany, recordMany): the
 * statement's values before the shards (eventClaim's $1-$9, eventRecordAttempts' $1-$11) and each
 * item's Belfry shard.
 */
export interface ShardPart {
  home: ShardHome;
  values: unknown[];
  itemShards: number[];
}

/**
 * The named statements each connection has prepared (node-postgres prepares a named statement on
 * its first use on a connection and keeps it there): those may be run by name (`EXECUTE`).
 */
const preparedOn = new WeakMap<pg.PoolClient, Set<string>>();

function isPrepared(client: pg.PoolClient, name: string): boolean {
  return preparedOn.get(client)?.has(name) === true;
}

/** Runs a named statement on `client` (preparing it there on first use) and remembers it is prepared. */
async function runNamed<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  config: pg.QueryConfig,
): Promise<pg.QueryResult<R>> {
  const result = await client.query<R>(config);
  let names = preparedOn.get(client);
  if (!names) preparedOn.set(client, (names = new Set()));
  names.add(config.name!);
  return result;
}

/**
 * A value as an SQL literal, for `EXECUTE name(...)`: the text node-postgres would send as the
 * parameter (arrays as array literals, each element quoted and escaped), quoted and escaped; the
 * prepared statement's parameter type reads it as it would read the parameter.
 */
function literal(value: unknown): string {
  const text = pgUtils.prepareValue(value);
  return text === null || text === undefined ? 'NULL' : pgUtils.escapeLiteral(String(text));
}

/**
 * `sql` guarded by HERE_FUNCTION on Citus shard `$n`: its first unnest() (where every row it reads
 * or writes comes from) is empty unless the function answers; it raises instead when the shard is
 * elsewhere. With `lock`, the function also takes the shard's metadata lock first. `$pin`, when
 * given, is named there too (see updatedByTid).
 */
function guarded(sql: string, n: number, lock: boolean, pin?: number): string {
  const typed = pin === undefined ? '' : ` AND $${pin}::int[] IS NOT NULL`;
  const out = sql.replace(
    /unnest\((\$\d+::\w+\[\])/,
    (_m, first: string) => `unnest(CASE WHEN ${HERE_FUNCTION}($${n}::bigint, ${lock})${typed} THEN ${first} END`,
  );
  if (out === sql) throw new Error(`citus: no unnest() to guard in: ${sql.slice(0, 80)}`);
  return out;
}

/**
 * A read `sql` guarded by HERE_FUNCTION on Citus shard `$n` (without the lock), for a statement
 * with no unnest() to guard: the function runs once, before the read (a lateral join from it),
 * and raises when the shard is elsewhere.
 */
function guardedRead(sql: string, n: number): string {
  return `SELECT q.* FROM (SELECT ${HERE_FUNCTION}($${n}::bigint, false) AS here OFFSET 0) g CROSS JOIN LATERAL (\n${sql}\n) q`;
}

/**
 * `sql` (pinned to the shards `$pin`) with each probe of an item's row by its own shard: `$n` (int[],
 * an item's Belfry shard, in the items' order) joins the first unnest() as column `shard`, and the
 * probe `e.shard = ANY($pin) AND e.tenant_id = <alias>.tenant_id` becomes `e.shard = <alias>.shard
 * AND ...`. So the probe is an equality on every column of the primary key (shard, tenant_id, id),
 * which a generic plan uses whatever the statistics say (with `shard = ANY(...)`, on a shard table
 * never analyzed, it took an index on tenant_id and filtered the tenant's rows, for every item).
 */
function probedByShard(sql: string, pin: number, n: number, alias: string): string {
  const out = sql
    .replace(
      /(unnest\([^)]*?)\)( WITH ORDINALITY AS \w+\()([^)]*?), ord\)/,
      (_m, args: string, alias: string, columns: string) => `${args}, $${n}::int[])${alias}${columns}, shard, ord)`,
    )
    // The claim's refs: distinct refs, their shard carried along.
    .replace('tenant_id, id, version, ord\n', 'tenant_id, id, version, shard, ord\n')
    .replace(
      `e.shard = ANY($${pin}::int[]) AND e.tenant_id = ${alias}.tenant_id`,
      `e.shard = ${alias}.shard AND e.tenant_id = ${alias}.tenant_id`,
    );
  if (!out.includes(`$${n}::int[])`) || !out.includes(`e.shard = ${alias}.shard`))
    throw new Error(`citus: no probe to key by shard in: ${sql.slice(0, 80)}`);
  return out;
}

/**
 * `sql` with its UPDATE of the rows it locked by ctid (`e.shard = ANY($pin) AND e.ctid =
 * <alias>.row_id`) by ctid alone: on a shard table the ctid names the row, and a generic plan then
 * fetches each by its TID (with the shard list too, it scanned every row of those shards). `$pin`
 * keeps a reference (the guard's), so that it keeps its type when nothing else names it.
 */
function updatedByTid(sql: string, pin: number, alias: string): string {
  const at = `WHERE e.shard = ANY($${pin}::int[]) AND e.ctid = ${alias}.row_id`;
  if (!sql.includes(at)) throw new Error(`citus: no update by ctid in: ${sql.slice(0, 80)}`);
  return sql.replace(at, `WHERE e.ctid = ${alias}.row_id`);
}

/**
 * The statements a worker runs: plain PostgreSQL's, pinned to the Belfry shards of one Citus
 * shard, their transitions included, guarded by that Citus shard's id.
 */
const DIRECT_SQL = {
  // As SQL.eventGroupLock on the shards $3: in the claim's transaction, before it.
  groupLock: pinned(SQL.eventGroupLock, 3, true),
  // As SQL.eventClaim on the shards $9, each ref's shard $10, guarded by $11.
  claim: guarded(updatedByTid(probedByShard(pinned(SQL.eventClaim, 9, true), 9, 10, 'r'), 9, 'c'), 11, true, 9),
  // As SQL.eventRecordAttempts on the shards $11, each outcome's shard $12, guarded by $13.
  record: guarded(
    updatedByTid(probedByShard(pinned(SQL.eventRecordAttempts, 11, true), 11, 12, 'o'), 11, 't'),
    13,
    true,
    11,
  ),
  // As SQL.pullSettleMany on the shards $10, each settle's shard $11, guarded by $12.
  settle: guarded(
    updatedByTid(probedByShard(pinned(SQL.pullSettleMany, 10, true), 10, 11, 's'), 10, 't'),
    12,
    true,
    10,
  ),
  // As CITUS_SQL.eventListDueGroup (the shards $7), guarded by $8, without the lock (a read).
  due: guarded(CITUS_SQL.eventListDueGroup, 8, false),
  // As CITUS_SQL.eventListDueGroupSkip (the shards $12), guarded by $13, without the lock (a read).
  dueSkip: guarded(CITUS_SQL.eventListDueGroupSkip, 13, false),
  // As SQL.eventListDueQueue on the shards $8, guarded by $9, without the lock (a read).
  queue: guardedRead(pinned(SQL.eventListDueQueue, 8, true), 9),
};

/** `sql` on the shard tables of `home`; throws when a table reference is left. */
function onShard(sql: string, home: ShardHome): string {
  const out = sql
    .replace(/\b(FROM|UPDATE|JOIN) events\b/g, `$1 ${home.events}`)
    .replace(/\bINSERT INTO transitions\b/g, `INSERT INTO ${home.transitions}`)
    .replace(/\bFROM shard_assignments\b/g, `FROM ${home.assignments}`);
  const left = /\b(FROM|UPDATE|JOIN|INTO) (events|transitions|shard_assignments)\b/.exec(out);
  if (left) throw new Error(`citus: ${left[0]} left in a statement for a shard table`);
  return out;
}

/**
 * Whether `err` says the shard is not written on that worker: the guard's answer, its tables gone
 * (undefined_table: a split dropped them), or the server a standby now (read_only_sql_transaction:
 * the address Belfry holds is a former primary after a failover; the map read again names the new one).
 */
function notHere(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === NOT_HERE_SQLSTATE || code === '42P01' || code === '25006';
}

/**
 * `direct` on the worker of `home` when it can be reached there; else (no home, the worker left
 * for a while, the shard no longer there: `placement` then forgets its map, read again at its
 * next use) `viaCoordinator`.
 */
export async function routed<R>(
  workers: CitusWorkers | null,
  placement: { forget(): void },
  home: ShardHome | null,
  direct: (workers: CitusWorkers, home: ShardHome) => Promise<R>,
  viaCoordinator: () => Promise<R>,
): Promise<R> {
  if (home && workers?.usable(home)) {
    try {
      return await direct(workers, home);
    } catch (err) {
      if (!(err instanceof ShardAway)) throw err;
      placement.forget();
    }
  }
  return viaCoordinator();
}

/** The workers' pools, one per host, port and kind of call, opened when first used. */
export class CitusWorkers {
  private readonly pools = new Map<string, pg.Pool>();
  private readonly downUntil = new Map<string, number>();
  private closed = false;
  /** Each statement's text on a shard's tables, made once (bounded by the Citus shards this node has met, times the statements). */
  private readonly texts = new Map<string, string>();
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
   * Claims on `home`'s shard (eventClaim's values, $1-$9; `refShards`, each ref's Belfry shard):
   * one statement, or with `lock` (grouped refs) a transaction that takes the group locks first.
   * Throws ShardAway when the call did not happen and may take the coordinator's route.
   */
  claim<R extends pg.QueryResultRow>(
    home: ShardHome,
    values: unknown[],
    refShards: number[],
    lock: boolean,
  ): Promise<R[]> {
    const claim = this.statement('claim', home, [...values, refShards, home.citusShard]);
    return this.call(home, 'claim', async (client) => {
      if (!lock) return (await runNamed<R>(client, claim)).rows;
      await client.query('BEGIN');
      try {
        await client.query(this.statement('groupLock', home, [values[0], values[1], values[8]]));
        const rows = (await runNamed<R>(client, claim)).rows;
        await client.query('COMMIT');
        return rows;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  /**
   * Claims without group locks on several Citus shards of one worker (every part's home on the
   * same host and port), in one round trip (see executeMany). Answers each part's rows, in the
   * parts' order, or null for a part that did not happen there (its shard is elsewhere: the caller
   * takes the coordinator's route for it); throws ShardAway, as claim(), when none could be tried
   * (no connection).
   */
  claimMany<R extends pg.QueryResultRow>(parts: readonly ShardPart[]): Promise<(R[] | null)[]> {
    return this.executeMany<R>(
      'claim',
      'claim',
      parts.map((p) => this.statement('claim', p.home, [...p.values, p.itemShards, p.home.citusShard])),
      parts[0].home,
    );
  }

  /** Outcome rounds on several Citus shards of one worker (record()'s values and shards per part), as claimMany. */
  recordMany(parts: readonly ShardPart[]): Promise<({ ord: number }[] | null)[]> {
    return this.executeMany<{ ord: number }>(
      'record',
      'record',
      parts.map((p) => this.statement('record', p.home, [...p.values, p.itemShards, p.home.citusShard])),
      parts[0].home,
    );
  }

  /** A due list with skip over Belfry shards of `home`'s shard (CITUS_SQL.eventListDueGroupSkip's values, $1-$12), as due(). */
  dueSkip<R extends pg.QueryResultRow>(home: ShardHome, values: unknown[]): Promise<R[]> {
    const due = this.statement('dueSkip', home, [...values, home.citusShard]);
    return this.call(home, 'read', async (client) => (await runNamed<R>(client, due)).rows);
  }

  /**
   * One queue's due rows on several Citus shards of one worker (SQL.eventListDueQueue's values,
   * $1-$7, and the Belfry shards of each part to read), as claimMany: each part's page in due
   * order, at most its limit.
   */
  queueMany<R extends pg.QueryResultRow>(
    parts: readonly { home: ShardHome; values: unknown[] }[],
  ): Promise<(R[] | null)[]> {
    return this.executeMany<R>(
      'queue',
      'read',
      parts.map((p) => this.statement('queue', p.home, [...p.values, p.home.citusShard])),
      parts[0].home,
    );
  }

  /**
   * Statements on several Citus shards of one worker in one round trip: each by its prepared
   * name (`EXECUTE`), all in one simple query, so in one transaction on the worker (one commit).
   * A statement this connection has not prepared yet runs on its own first, which prepares it
   * (its own transaction). Answers each statement's rows, or null for one that did not happen
   * because its shard is not there (a statement on its own; every statement of the one query when
   * one of them found its shard gone), so that the caller sends only those another way: a part
   * that did happen must not be sent again (a claim sent again claims nothing, and the event it
   * took would wait, claimed, for its lease to end).
   *
   * Why: a claim or an outcome batch of a few events over many Citus shards was a round trip per
   * shard, each costing the node and the worker more than the statement's own work; on a loaded
   * machine each also waits for the CPU twice (the worker woken to answer, then the node). In
   * test/slow/isolation.test.ts on Citus (2 cores, a coordinator and two workers), B's p99 went
   * from 367-532 ms to 105-136 ms with claims sent so.
   */
  private executeMany<R extends pg.QueryResultRow>(
    name: keyof typeof DIRECT_SQL,
    kind: CallKind,
    configs: readonly pg.QueryConfig[],
    home: ShardHome,
  ): Promise<(R[] | null)[]> {
    return this.call(home, kind, async (client) => {
      const out: (R[] | null)[] = new Array(configs.length).fill(null);
      let away = false;
      const byName: number[] = [];
      for (let i = 0; i < configs.length; i++) {
        if (isPrepared(client, configs[i].name!)) {
          byName.push(i);
          continue;
        }
        try {
          out[i] = (await runNamed<R>(client, configs[i])).rows;
        } catch (err) {
          // This part did not happen here (its shard moved); the others still may.
          if (!notHere(err)) throw err;
          away = true;
        }
      }
      if (byName.length > 0) {
        const text = byName
          .map((i) => `EXECUTE ${configs[i].name}(${(configs[i].values ?? []).map(literal).join(', ')})`)
          .join(';\n');
        try {
          const answered = (await client.query<R>(text)) as pg.QueryResult<R> | pg.QueryResult<R>[];
          const results = Array.isArray(answered) ? answered : [answered];
          if (results.length !== byName.length)
            throw new Error(`citus: ${name}: ${results.length} answers to ${byName.length} statements`);
          byName.forEach((i, k) => (out[i] = results[k].rows));
        } catch (err) {
          // One transaction: none of these happened.
          if (!notHere(err)) throw err;
          away = true;
        }
      }
      if (away) this.counts.away += 1;
      return out;
    });
  }

  /** An outcome round on `home`'s shard (eventRecordAttempts' values, $1-$11; each outcome's Belfry shard), as claim(). */
  async record(home: ShardHome, values: unknown[], outcomeShards: number[]): Promise<{ ord: number }[]> {
    const record = this.statement('record', home, [...values, outcomeShards, home.citusShard]);
    return this.call(home, 'record', async (client) => (await runNamed<{ ord: number }>(client, record)).rows);
  }

  /** Pull settles on `home`'s shard (pullSettleMany's values, $1-$10; each settle's Belfry shard), as record(). */
  settle<R extends pg.QueryResultRow>(home: ShardHome, values: unknown[], settleShards: number[]): Promise<R[]> {
    const settle = this.statement('settle', home, [...values, settleShards, home.citusShard]);
    return this.call(home, 'record', async (client) => (await client.query<R>(settle)).rows);
  }

  /** A due list over Belfry shards of `home`'s shard (CITUS_SQL.eventListDueGroup's values, $1-$7), as claim(). */
  due<R extends pg.QueryResultRow>(home: ShardHome, values: unknown[]): Promise<pg.QueryResult<R>> {
    const due = this.statement('due', home, [...values, home.citusShard]);
    return this.call(home, 'read', (client) => runNamed<R>(client, due));
  }

  /**
   * Opens every connection of every pool of the workers holding `homes` and runs each statement
   * once on each, for each of those shards, with nothing to change: what the first claims,
   * outcomes and due lists would otherwise do while events are due (a connection, then a plan for
   * each statement and shard: 3-9 ms each, some 200 per worker). Failures are left to the calls.
   * It answers within WORKER_WARM_MS_MAX; what is left then goes on meanwhile, or on first use.
   */
  async warm(homes: readonly ShardHome[]): Promise<void> {
    await atMost(this.warmAll(homes), WORKER_WARM_MS_MAX);
  }

  private async warmAll(homes: readonly ShardHome[]): Promise<void> {
    const byWorker = new Map<string, ShardHome[]>();
    for (const h of homes) byWorker.set(key(h), [...(byWorker.get(key(h)) ?? []), h]);
    const nothing: Record<CallKind, (h: ShardHome) => pg.QueryConfig[]> = {
      claim: (h) => [this.statement('claim', h, [[], [], [], '', 0, 0, '', false, [], [], h.citusShard])],
      record: (h) => [this.statement('record', h, [[], [], [], [], [], [], [], [], [], 0, [], [], h.citusShard])],
      read: (h) => [
        this.statement('due', h, [0, 0, '', '', 1, 1, [], h.citusShard]),
        this.statement('queue', h, ['', '', 0, 0, '', 1, null, [], h.citusShard]),
        this.statement('dueSkip', h, [0, 0, '', '', 1, 1, [], [], [], [], 1, [], h.citusShard]),
      ],
    };
    const kinds = Object.keys(WORKER_POOL_SIZES) as CallKind[];
    await Promise.all(
      [...byWorker.values()].flatMap((onWorker) =>
        kinds.map(async (kind) => {
          if (!this.usable(onWorker[0])) return;
          await onEachConnection(this.pool(onWorker[0], kind), WORKER_POOL_SIZES[kind], async (client) => {
            for (const h of onWorker) for (const q of nothing[kind](h)) await runNamed(client, q).catch(() => {});
          });
        }),
      ),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.end()));
  }

  /**
   * `fn` on a connection to `home`'s worker. Rethrows as ShardAway what means the call did not
   * happen and may go another way (no connection; the guard found the shard elsewhere); a
   * connection lost meanwhile as StoreUnavailableError (the caller retries, by the coordinator for
   * a while); other errors as they are.
   */
  private async call<T>(home: ShardHome, kind: CallKind, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    const pool = this.pool(home, kind);
    try {
      client = await pool.connect();
    } catch (err) {
      // A full pool whose connections stayed busy past the bound is a busy worker, not a lost one:
      // this call goes through the coordinator, the next ones come here again.
      if (pool.totalCount < WORKER_POOL_SIZES[kind]) this.downUntil.set(key(home), this.now() + WORKER_DOWN_MS);
      throw new ShardAway(`citus: worker ${key(home)} not reachable: ${(err as Error).message}`, { cause: err });
    }
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', onError);
    try {
      const result = await fn(client);
      this.counts.done += 1;
      return result;
    } catch (err) {
      if (notHere(err)) {
        this.counts.away += 1;
        throw new ShardAway(`citus: shard ${home.citusShard}: ${(err as Error).message}`, { cause: err });
      }
      try {
        rethrowUnavailable(err);
      } catch (e) {
        if (e instanceof StoreUnavailableError) {
          broken ??= e;
          this.downUntil.set(key(home), this.now() + WORKER_DOWN_MS);
        }
        throw e;
      }
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  /** Statement `name` on `home`'s shard tables with `values`, named per shard (so prepared once per connection and shard). */
  private statement(name: keyof typeof DIRECT_SQL, home: ShardHome, values: unknown[]): pg.QueryConfig {
    const id = `belfry_direct_${name}_${home.citusShard}`;
    let text = this.texts.get(id);
    if (text === undefined) {
      text = onShard(DIRECT_SQL[name], home);
      this.texts.set(id, text);
    }
    return { name: id, text, values };
  }

  private pool(home: ShardHome, kind: CallKind): pg.Pool {
    const k = `${key(home)} ${kind}`;
    let pool = this.pools.get(k);
    if (!pool) {
      const url = new URL(this.url);
      url.hostname = home.host;
      url.port = String(home.port);
      pool = createPool({
        url: url.toString(),
        schema: this.schema,
        size: WORKER_POOL_SIZES[kind],
        onError: this.onError,
        connectTimeoutMs: WORKER_CONNECT_TIMEOUT_MS,
        asyncCommit: kind === 'claim',
        // The statements are prepared once per connection and shard, and planned once (generic).
        // Each is written for index and TID access; on a shard table whose statistics are missing
        // or old (new, or grown since), a generic plan otherwise may read the whole table (a hash
        // join of its rows with a claim's), and keep doing so on that connection.
        settings: [
          'plan_cache_mode=force_generic_plan',
          'enable_seqscan=off',
          'enable_hashjoin=off',
          'enable_mergejoin=off',
        ],
      });
      this.pools.set(k, pool);
    }
    return pool;
  }
}

function key(home: ShardHome): string {
  return `${home.host}:${home.port}`;
}
