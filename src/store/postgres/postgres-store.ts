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
 */
import type pg from 'pg';
import { BelfryError } from '../../core/errors.ts';
import { EVENT_STATES, type EventRecord, type EventState, type TransitionRecord } from '../../core/event.ts';
import { listPage, listPlan, type ListKey } from '../event-list-plan.ts';
import { checkLeaseMs, checkShardAssignments } from '../shard-map.ts';
import type * as S from '../store.ts';
import { BULK_ERRORS_KEPT, BULK_FINISHED_KEPT } from '../store.ts';
import { checkDeleteTerminal, checkForecast, checkLimit, checkListDue, checkPullClaim } from '../core/bounds.ts';
import {
  apiKeyFromRow,
  dueRefFromRow,
  eventFromRow,
  leaderLeaseFromRow,
  shardAssignmentFromRow,
  transitionFromRow,
  type ApiKeyRow,
  type DueRefRow,
  type EventRow,
  type LeaderLeaseRow,
  type ListWalkRow,
  type ShardAssignmentRow,
  type TransitionRow,
} from '../core/rows.ts';
import { createPool, inTransaction, run } from './db.ts';
import { listDue } from './due-list.ts';
import * as writes from './event-writes.ts';
import { PostgresDueWakeups } from './wakeups.ts';
import { migrate } from './migrate.ts';
import { TX, type QueryName } from './queries.ts';
import { destinationFromRow, nodeFromRow, tenantFromRow, tenantSecretsFromColumn, type DestinationRow, type NodeRow, type TenantRow } from './rows.ts';
import { TenantDurability } from './tenant-durability.ts';
import { PostgresSchedules } from './schedule-store.ts';
import { PostgresSources } from './source-store.ts';
import { delegateToSubStores, type SubStoreMethods } from '../core/sub-stores.ts';
import { runBulk } from './bulk-queries.ts';
import { bulkJobFromRow, checkClaimRunning, type BulkJobRow } from '../core/bulk-rows.ts';

export const POSTGRES_SCHEMA_DEFAULT = 'belfry';
/**
 * Connections per node. A node's hot paths (insert batches, claim batches, outcome batches, the
 * read-ahead) run a handful of statements at a time; more connections than that only add
 * server processes. See docs/postgres.md for sizing against max_connections.
 */
export const POSTGRES_POOL_SIZE_DEFAULT = 10;
/**
 * Connections of the claim pool (synchronous_commit = off), besides poolSize: the scheduler's
 * claims in flight at once (CLAIMS_IN_FLIGHT_MAX) plus its spare one.
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
/**
 * Bound on one statement of the read pool. A forecast over 10,000,000 events took 2.1 s; past
 * this one answers 503 and gives its connection back, so slow forecasts cannot hold the read
 * pool for the main pool's 30 s. The background counts set their own (TX.beginLongRead).
 */
export const POSTGRES_READ_STATEMENT_TIMEOUT_MS = 10_000;
/** PostgreSQL's SQLSTATE for a statement canceled by statement_timeout. */
const QUERY_CANCELED = '57014';
/** eventCountByState counts exactly up to this many rows (a scan of ~100 ms), and estimates above. */
export const EXACT_COUNT_ROWS_MAX = 250_000;

export interface PostgresStoreOptions {
  /** A libpq-style URL: `postgres://user:password@host:5432/database`. */
  url: string;
  /** Lower-case identifier; created by migrate() when missing. Default `belfry`. */
  schema?: string;
  /** Default POSTGRES_POOL_SIZE_DEFAULT. */
  poolSize?: number;
  /** Errors of idle pooled connections (the server restarted, the network dropped); ignored by default. */
  onPoolError?: (err: Error) => void;
}

/** Opens a pool on `url`, then creates or upgrades the schema. */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = opts.schema ?? POSTGRES_SCHEMA_DEFAULT;
  const size = opts.poolSize ?? POSTGRES_POOL_SIZE_DEFAULT;
  if (!Number.isInteger(size) || size < 1 || size > 1_000) throw new RangeError(`postgres: poolSize must be 1..1000, got ${size}`);
  const onError = opts.onPoolError ?? (() => {});
  const pool = createPool({ url: opts.url, schema, size, onError });
  const claimPool = createPool({ url: opts.url, schema, size: POSTGRES_CLAIM_POOL_SIZE, onError, asyncCommit: true });
  const readPool = createPool({ url: opts.url, schema, size: POSTGRES_READ_POOL_SIZE, onError, statementTimeoutMs: POSTGRES_READ_STATEMENT_TIMEOUT_MS });
  const store = new PostgresStore(pool, schema, opts.url, claimPool, readPool);
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

/** The statement of each eventList walk. */
const LIST_QUERIES: Record<ListKey, QueryName> = {
  tenant: 'eventListByTenant',
  state: 'eventListByState',
  destination: 'eventListByDestination',
  group: 'eventListByGroup',
  type: 'eventListByType',
};

export class PostgresStore implements S.Store {
  readonly capabilities: S.StoreCapabilities = { skipLocked: true, multiNode: true, dueWakeups: true };
  private readonly durability = new TenantDurability();
  private closed = false;

  readonly dueWakeups: PostgresDueWakeups;

  constructor(
    /** The pool (its connections use `schema`); for diagnostics and tests. */
    readonly pool: pg.Pool,
    readonly schema: string,
    /** The server's URL, for the wake-up listener's own connection. */
    url: string,
    /** Claims' pool: commits that do not wait for the WAL flush (see the header); for tests. */
    readonly claimPool: pg.Pool = pool,
    /** Long reads' pool (POSTGRES_READ_POOL_SIZE); for tests. */
    readonly readPool: pg.Pool = pool,
  ) {
    this.dueWakeups = new PostgresDueWakeups(pool, url, schema);
    this.schedules = new PostgresSchedules(pool);
    this.sources = new PostgresSources(pool);
  }

  /** The schedule methods (schedule-store.ts). */
  private readonly schedules: PostgresSchedules;
  /** The source methods (source-store.ts). */
  private readonly sources: PostgresSources;

  async migrate(): Promise<void> {
    await migrate(this.pool, this.schema);
  }

  async ping(): Promise<void> {
    if ((await run<{ ok: number }>(this.pool, 'ping')).rows[0]?.ok !== 1) throw new Error('postgres: ping failed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.pool.end(), ...[this.claimPool, this.readPool].filter((p) => p !== this.pool).map((p) => p.end())]);
  }

  async apiKeyCreate(key: S.ApiKeyRecord): Promise<void> {
    await run(this.pool, 'apiKeyInsert', [key.id, key.tenantId, key.hash, key.prefix, key.createdAt, key.revokedAt]);
  }

  async apiKeyFindByHash(params: { hash: string }): Promise<S.ApiKeyRecord | null> {
    const row = (await run<ApiKeyRow>(this.pool, 'apiKeyByHash', [params.hash])).rows[0];
    return row ? apiKeyFromRow(row) : null;
  }

  async apiKeyList(params: { tenantId: string }): Promise<S.ApiKeyRecord[]> {
    return (await run<ApiKeyRow>(this.pool, 'apiKeyList', [params.tenantId])).rows.map(apiKeyFromRow);
  }

  async apiKeyRevoke(params: { tenantId: string; id: string; now: number; at?: number }): Promise<boolean> {
    return (await run(this.pool, 'apiKeyRevoke', [params.tenantId, params.id, params.now, params.at ?? params.now])).rowCount === 1;
  }

  async destinationDelete(params: { tenantId: string; name: string }): Promise<boolean> {
    return (await run(this.pool, 'destinationDelete', [params.tenantId, params.name])).rowCount === 1;
  }

  async destinationGet(params: { tenantId: string; name: string }): Promise<S.DestinationRecord | null> {
    const row = (await run<DestinationRow>(this.pool, 'destinationGet', [params.tenantId, params.name])).rows[0];
    return row ? destinationFromRow(row) : null;
  }

  async destinationList(params: { tenantId: string }): Promise<S.DestinationRecord[]> {
    return (await run<DestinationRow>(this.pool, 'destinationList', [params.tenantId])).rows.map(destinationFromRow);
  }

  async destinationPut(params: { destination: S.DestinationRecord }): Promise<{ created: boolean; destination: S.DestinationRecord }> {
    const d = params.destination;
    const row = (
      await run<DestinationRow & { created: boolean }>(this.pool, 'destinationUpsert', [
        d.tenantId, d.name, JSON.stringify(d.config), JSON.stringify(d.secrets), d.createdAt, d.updatedAt,
      ])
    ).rows[0];
    if (!row) throw new Error(`postgres: destination ${d.tenantId}/${d.name} upsert returned nothing`);
    return { created: row.created, destination: destinationFromRow(row) };
  }

  async eventCancel(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return writes.cancel(this.pool, params);
  }

  async eventClaim(params: S.EventClaimParams): Promise<EventRecord[]> {
    if (params.refs.length === 0) return [];
    return writes.claim(this.claimPool, params);
  }

  async eventCountByTenantState(): Promise<S.TenantStateCount[]> {
    const res = await inTransaction(this.readPool, TX.beginLongRead, (client) =>
      run<{ tenant_id: string; state: EventState; n: number }>(client, 'eventCountByTenantState'),
    );
    return res.rows.map((r) => ({ tenantId: r.tenant_id, state: r.state, n: r.n }));
  }

  async eventCountPending(params: { tenantId: string }): Promise<number> {
    return (await run<{ n: number }>(this.pool, 'eventCountPending', [params.tenantId])).rows[0].n;
  }

  /**
   * Exact below EXACT_COUNT_ROWS_MAX rows. Above, a metrics scrape must not scan the table (10M
   * rows take seconds of a core), so: executing exactly (its partial index holds only the
   * deliveries in flight), every other state estimated from the statistics of the last ANALYZE
   * (row estimate x the state's share), which autovacuum refreshes as the table changes.
   */
  async eventCountByState(): Promise<Record<EventState, number>> {
    const counts = Object.fromEntries(EVENT_STATES.map((s) => [s, 0])) as Record<EventState, number>;
    const estimate = (await run<{ n: number }>(this.pool, 'eventRowEstimate')).rows[0]?.n ?? -1;
    const frequencies = estimate < EXACT_COUNT_ROWS_MAX ? [] : (await run<{ state: EventState; freq: number }>(this.pool, 'eventStateFrequencies')).rows;
    if (frequencies.length === 0) {
      for (const row of (await run<{ state: EventState; n: number }>(this.pool, 'eventCountByState')).rows) counts[row.state] = row.n;
      return counts;
    }
    for (const row of frequencies) if (row.state in counts) counts[row.state] = Math.round(estimate * row.freq);
    counts.executing = (await run<{ n: number }>(this.pool, 'eventCountExecuting')).rows[0].n;
    return counts;
  }

  async eventDeleteTerminal(params: S.EventDeleteTerminalParams): Promise<S.EventDeleteTerminalResult> {
    checkDeleteTerminal(params);
    const res = await run<{ events: number; transitions: number }>(this.pool, 'eventDeleteTerminal', [
      params.tenantId, params.state, params.finishedBefore, params.limit,
    ]);
    return { events: res.rows[0].events, transitions: res.rows[0].transitions };
  }

  async eventGet(params: { tenantId: string; id: string }): Promise<EventRecord | null> {
    const row = (await run<EventRow>(this.pool, 'eventGet', [params.tenantId, params.id])).rows[0];
    return row ? eventFromRow(row) : null;
  }

  async eventGroupHead(params: S.EventGroupHeadParams): Promise<S.DueRef | null> {
    const row = (await run<DueRefRow & { state: EventState; pull: boolean }>(this.pool, 'eventGroupFirst', [params.tenantId, params.group])).rows[0];
    // A pull head is claimed by consumers, never fired by the scheduler.
    if (!row || row.state === 'executing' || row.pull) return null;
    return dueRefFromRow(row);
  }

  /**
   * One statement for the whole batch. When every tenant of the batch is relaxed, it runs in a
   * transaction with synchronous_commit = off: the commit answers before its WAL is flushed.
   */
  async eventPullClaim(params: S.EventPullClaimParams): Promise<EventRecord[]> {
    checkPullClaim(params);
    return writes.pullClaim(this.pool, params);
  }

  async eventPullExpired(params: { now: number; limit: number }): Promise<{ event: EventRecord; receipt: string }[]> {
    checkLimit(params.limit, 'eventPullExpired');
    const res = await run<EventRow & { receipt: string }>(this.pool, 'pullExpired', [params.now, params.limit]);
    return res.rows.map((row) => ({ event: eventFromRow(row), receipt: row.receipt }));
  }

  async eventPullExtend(params: S.EventPullExtendParams): Promise<EventRecord | null> {
    const row = (await run<EventRow>(this.pool, 'pullExtend', [params.tenantId, params.id, params.receipt, params.leaseUntil, params.now])).rows[0];
    return row ? eventFromRow(row) : null;
  }

  async eventPullNextDue(params: { tenantId: string; queue: string }): Promise<number | null> {
    const row = (await run<{ due_at: number }>(this.pool, 'pullNextDue', [params.tenantId, params.queue])).rows[0];
    return row ? Number(row.due_at) : null;
  }

  async eventPullSettle(params: S.EventPullSettleParams): Promise<EventRecord | null> {
    return writes.pullSettle(this.pool, params);
  }

  async eventInsertMany(params: S.EventInsertManyParams): Promise<S.EventInsertResult[]> {
    if (params.events.length === 0) return [];
    const relaxed = await this.durability.allRelaxed(this.pool, params.events.map((e) => e.tenantId));
    if (!relaxed) return writes.insertMany(this.pool, params);
    return inTransaction(this.pool, TX.beginRelaxed, (client) => writes.insertMany(client, params));
  }

  /** One bounded walk of an index (event-list-plan.ts), in one statement planned as an ordered walk (TX.beginOrderedWalk). */
  async bulkJobClaim(params: { owner: string; now: number; leaseUntil: number; takeOver?: boolean; running?: S.BulkJobKey[] }): Promise<S.BulkJobRecord | null> {
    const running = checkClaimRunning(params.running);
    const res = await runBulk<BulkJobRow>(this.pool, 'bulkJobClaim', [
      params.owner, params.now, params.leaseUntil, params.takeOver === true, running.map((k) => k.tenantId), running.map((k) => k.id),
    ]);
    return res.rows[0] ? bulkJobFromRow(res.rows[0]) : null;
  }

  async bulkJobCreate(params: { job: S.BulkJobRecord; runningMax: number }): Promise<boolean> {
    const j = params.job;
    return inTransaction(this.pool, TX.begin, async (client) => {
      await runBulk(client, 'bulkTenantLock', [j.tenantId]);
      await runBulk(client, 'bulkJobPrune', [j.tenantId, BULK_FINISHED_KEPT]);
      const res = await runBulk(client, 'bulkJobInsert', [j.tenantId, j.id, JSON.stringify(j.filter), JSON.stringify(j.action), j.createdAt, params.runningMax]);
      return res.rowCount === 1;
    });
  }

  async bulkJobFail(params: { tenantId: string; id: string; owner: string; now: number; error: string }): Promise<boolean> {
    const res = await runBulk(this.pool, 'bulkJobFail', [params.tenantId, params.id, params.owner, params.now, params.error, BULK_ERRORS_KEPT]);
    return res.rowCount === 1;
  }

  async bulkJobGet(params: { tenantId: string; id: string }): Promise<S.BulkJobRecord | null> {
    const res = await runBulk<BulkJobRow>(this.pool, 'bulkJobGet', [params.tenantId, params.id]);
    return res.rows[0] ? bulkJobFromRow(res.rows[0]) : null;
  }

  async bulkJobStep(params: S.BulkJobStepParams): Promise<S.BulkJobStepResult | null> {
    checkLimit(Math.max(1, params.changes.length), 'bulkJobStep');
    return writes.bulkStep(this.pool, params);
  }

  /** On the read pool: its time follows the events in the window. */
  async eventForecast(params: S.EventForecastParams): Promise<S.ForecastCount[]> {
    const { tenantId, fromMs, toMs, bucketMs, by } = checkForecast(params);
    try {
      const res = tenantId === null
        ? await run<S.ForecastCount>(this.readPool, 'eventForecastAll', [fromMs, toMs, bucketMs, by])
        : await run<S.ForecastCount>(this.readPool, 'eventForecastTenant', [tenantId, fromMs, toMs, bucketMs, by]);
      return res.rows;
    } catch (err) {
      if ((err as { code?: unknown }).code !== QUERY_CANCELED) throw err;
      throw new BelfryError('unavailable', `the forecast took longer than ${POSTGRES_READ_STATEMENT_TIMEOUT_MS} ms and was stopped: ask for a shorter window (its cost follows the events due in it)`, [
        { field: 'to', message: 'the window holds too many events to count in time', timeoutMs: POSTGRES_READ_STATEMENT_TIMEOUT_MS },
      ], { 'retry-after': '10' });
    }
  }

  async eventList(params: S.EventListParams): Promise<S.EventListPage> {
    checkLimit(params.limit, 'eventList');
    const plan = listPlan(params);
    const values = [
      params.tenantId,
      plan.beforeSeq,
      params.state ?? null,
      params.destination ?? null,
      params.group ?? null,
      params.fromMs ?? null,
      params.toMs ?? null,
      plan.examine,
      params.limit + 1,
      params.type ?? null,
    ];
    const res = await inTransaction(this.pool, TX.beginOrderedWalk, (client) => run<EventRow & ListWalkRow>(client, LIST_QUERIES[plan.key], values));
    const walk = res.rows[0];
    const rows = res.rows.filter((r) => r.seq !== null);
    const walkEndSeq = walk && walk.examined >= plan.examine ? walk.last_seq : null;
    return listPage(rows, params.limit, walkEndSeq);
  }

  async eventListDue(params: S.EventListDueParams): Promise<S.DueRef[]> {
    checkListDue(params);
    if (params.shards !== null && params.shards.length === 0) return [];
    return listDue(this.pool, params);
  }

  async eventRecordAttempts(params: S.EventRecordAttemptsParams): Promise<boolean[]> {
    if (params.outcomes.length === 0) return [];
    return writes.recordAttempts(this.pool, params);
  }

  async eventReplay(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return writes.replay(this.pool, params);
  }

  async eventRescue(params: S.EventRescueParams): Promise<S.DueRef[]> {
    checkLimit(params.limit, 'eventRescue');
    return writes.rescue(this.pool, params);
  }

  async eventRescueDead(params: S.EventRescueDeadParams): Promise<S.DueRef[] | null> {
    checkLimit(params.limit, 'eventRescueDead');
    if (params.owners.length === 0) return [];
    return writes.rescueDead(this.pool, params);
  }

  async eventUpdate(params: S.EventMutateParams & { patch: S.EventPatch }): Promise<S.EventMutateResult> {
    return writes.update(this.pool, params);
  }

  async leaderAttemptElect(params: { nodeId: string; leaseMs: number }): Promise<S.LeaderLease | null> {
    checkLeaseMs(params.leaseMs);
    const row = (await run<LeaderLeaseRow>(this.pool, 'leaderElect', [params.nodeId, params.leaseMs])).rows[0];
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderGet(): Promise<S.LeaderLease | null> {
    const row = (await run<LeaderLeaseRow>(this.pool, 'leaderGet')).rows[0];
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderResign(params: { nodeId: string; epoch: number }): Promise<void> {
    await run(this.pool, 'leaderResign', [params.nodeId, params.epoch]);
  }

  async claimLeaseRenew(params: { owner: string; leaseUntil: number }): Promise<void> {
    await run(this.pool, 'claimLeaseRenew', [params.owner, params.leaseUntil]);
  }

  async shardLag(params: { now: number; limit: number }): Promise<{ shard: number; dueEvents: number; oldestDueAt: number }[]> {
    checkLimit(params.limit, 'shardLag');
    const res = await run<{ shard: number; due_events: number; oldest_due_at: string | number }>(this.pool, 'shardLag', [params.now, params.limit]);
    return res.rows.map((r) => ({ shard: r.shard, dueEvents: r.due_events, oldestDueAt: Number(r.oldest_due_at) }));
  }

  async nodeDelete(params: { nodeId: string }): Promise<void> {
    await run(this.pool, 'nodeDelete', [params.nodeId]);
  }

  async nodeHeartbeat(params: { nodeId: string; meta: Record<string, unknown> }): Promise<{ nowMs: number }> {
    const row = (await run<{ heartbeat_at: number }>(this.pool, 'nodeHeartbeat', [params.nodeId, JSON.stringify(params.meta)])).rows[0];
    return { nowMs: row.heartbeat_at };
  }

  async nodeList(): Promise<S.NodeRecord[]> {
    return (await run<NodeRow>(this.pool, 'nodeList')).rows.map((row) => nodeFromRow(row, row.now_ms));
  }

  /**
   * In one transaction: share-lock the lease row if (leaderId, epoch) holds it unexpired (so no
   * election can commit meanwhile), then replace the map.
   */
  async shardAssign(params: { leaderId: string; epoch: number; assignments: { shard: number; nodeId: string }[] }): Promise<boolean> {
    checkShardAssignments(params.assignments);
    return inTransaction(this.pool, TX.begin, async (client) => {
      if ((await run(client, 'leaderCheckForShare', [params.leaderId, params.epoch])).rowCount !== 1) return false;
      await run(client, 'shardClear');
      await run(client, 'shardInsertMany', [
        params.assignments.map((a) => a.shard),
        params.assignments.map((a) => a.nodeId),
        params.epoch,
      ]);
      return true;
    });
  }

  async shardList(): Promise<S.ShardAssignment[]> {
    return (await run<ShardAssignmentRow>(this.pool, 'shardList')).rows.map(shardAssignmentFromRow);
  }

  async tenantCreate(tenant: S.NewTenantRecord): Promise<void> {
    const secrets = JSON.stringify(tenant.signingSecrets ?? []);
    await run(this.pool, 'tenantInsert', [tenant.id, tenant.name, JSON.stringify(tenant.settings), tenant.createdAt, secrets]);
  }

  async tenantGet(params: { id: string }): Promise<S.TenantRecord | null> {
    const row = (await run<TenantRow>(this.pool, 'tenantGet', [params.id])).rows[0];
    return row ? tenantFromRow(row) : null;
  }

  async tenantUpdate(params: { id: string; settings: Record<string, unknown> }): Promise<S.TenantRecord | null> {
    const row = (await run<TenantRow>(this.pool, 'tenantUpdate', [params.id, JSON.stringify(params.settings)])).rows[0];
    // This node sees a durability change at once; the others within TENANT_SETTINGS_TTL_MS.
    this.durability.clear();
    return row ? tenantFromRow(row) : null;
  }

  async tenantList(): Promise<S.TenantRecord[]> {
    return (await run<TenantRow>(this.pool, 'tenantList')).rows.map(tenantFromRow);
  }

  async tenantSecretsGet(params: { id: string }): Promise<S.DestinationSecret[] | null> {
    const row = (await run<{ signing_secrets: unknown }>(this.pool, 'tenantSecretsGet', [params.id])).rows[0];
    return row ? tenantSecretsFromColumn(row.signing_secrets) : null;
  }

  async tenantSecretsSwap(params: { id: string; expected: S.DestinationSecret[]; secrets: S.DestinationSecret[] }): Promise<boolean> {
    const res = await run(this.pool, 'tenantSecretsSwap', [params.id, JSON.stringify(params.expected), JSON.stringify(params.secrets)]);
    return res.rowCount === 1;
  }

  async timeNow(): Promise<number> {
    return (await run<{ now_ms: number }>(this.pool, 'timeNow')).rows[0].now_ms;
  }

  async transitionList(params: S.TransitionListParams): Promise<TransitionRecord[]> {
    checkLimit(params.limit, 'transitionList');
    const res = await run<TransitionRow>(this.pool, 'transitionList', [params.tenantId, params.eventId, params.afterSeq ?? 0, params.limit]);
    return res.rows.map(transitionFromRow);
  }
}

// The schedule and source methods: handed to this.schedules and this.sources (core/sub-stores.ts).
export interface PostgresStore extends SubStoreMethods {}
delegateToSubStores(PostgresStore);
