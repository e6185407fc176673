/**
 * The SQLite backend of Store: one file in the data dir, one connection, one process (a lock
 * file), WAL with synchronous=FULL so that a resolved write is on disk; the scheduler's own
 * bookkeeping (claims, outcomes, leases, rescues) commits without an fsync of its own (see
 * writeRelaxed: at least once still holds across a power loss).
 *
 * Its clock (timeNow, leases, heartbeats) is this process's Date.now(): one process owns the file,
 * so there is no other clock to agree with.
 *
 * better-sqlite3 is synchronous: every method does its whole work, in one transaction, before
 * it returns; the methods are async only to satisfy the Store interface. Batches keep each call
 * short (a 1000-event insert holds the event loop for a few milliseconds), and every read is
 * bounded (lists walk at most a page's worth of an index, store/event-list-plan.ts). The counts,
 * whose cost grows with the table, run on a reader thread with a connection of their own
 * (reader-thread.ts).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Checkpointer } from './checkpointer.ts';
import { EVENT_STATES, type EventRecord, type EventState, type TransitionRecord } from '../../core/event.ts';
import type * as S from '../store.ts';
import { BULK_ERRORS_KEPT, BULK_FINISHED_KEPT } from '../store.ts';
import { checkDeleteTerminal, checkForecast, checkLimit, checkListDue, checkPullClaim } from '../core/bounds.ts';
import { listPage, listPlan } from '../event-list-plan.ts';
import { checkLeaseMs, checkShardAssignments } from '../shard-map.ts';
import {
  apiKeyFromRow,
  dueRefFromRow,
  eventFromRow,
  leaderLeaseFromRow,
  shardAssignmentFromRow,
  transitionFromRow,
} from '../core/rows.ts';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.ts';
import { checkIntegrity, DamagedDatabaseError, isDamageCode, type IntegrityCheck } from './integrity-check.ts';
import { createPrivateFile, makePrivateDir } from '../../node/data-dir.ts';
import * as writes from './event-writes.ts';
import { migrate } from './migrate.ts';
import { PRAGMAS, prepareQueries, READER_SQL, type Queries } from './queries.ts';
import { prepareBulkQueries, type BulkQueries } from './bulk-queries.ts';
import { bulkJobFromRow, checkClaimRunning } from '../core/bulk-rows.ts';
import { ReaderThread } from './reader-thread.ts';
import { SqliteSchedules } from './schedule-store.ts';
import { SqliteSources } from './source-store.ts';
import { delegateToSubStores, type SubStoreMethods } from '../core/sub-stores.ts';
import { destinationFromRow, nodeFromRow, tenantFromRow, tenantSecretsFromColumn } from './rows.ts';

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
 * dir is created 0700 and the files 0600 (node/data-dir.ts).
 */
export async function openSqliteStore(opts: SqliteStoreOptions): Promise<SqliteStore> {
  makePrivateDir(opts.dataDir);
  const lock = acquireDataDirLock(opts.dataDir);
  let db: Database.Database | undefined;
  const filePath = join(opts.dataDir, opts.fileName ?? SQLITE_FILE_NAME_DEFAULT);
  try {
    const integrity = opts.integrityCheckMsMax ? await checkIntegrity(filePath, opts.integrityCheckMsMax) : null;
    createPrivateFile(filePath);
    db = new Database(filePath);
    for (const pragma of PRAGMAS) db.pragma(pragma);
    const mode = db.pragma('journal_mode', { simple: true });
    if (mode !== 'wal') throw new Error(`sqlite: ${filePath} refused WAL mode (journal_mode=${String(mode)})`);
    migrate(db, Date.now());
    const store = new SqliteStore(db, lock, filePath);
    store.integrity = integrity;
    return store;
  } catch (err) {
    db?.close();
    lock.release();
    // Damage the check did not run long enough to find, or found by the open itself.
    if (isDamageCode((err as { code?: unknown }).code)) throw new DamagedDatabaseError(filePath, [`${(err as { code: string }).code}: ${(err as Error).message}`]);
    throw err;
  }
}

export class SqliteStore implements S.Store {
  readonly capabilities: S.StoreCapabilities = { skipLocked: false, multiNode: false, dueWakeups: false };
  private readonly q: Queries;
  private readonly bq: BulkQueries;
  /** Runs a function in one IMMEDIATE transaction (the write lock is taken up front, never upgraded). */
  private readonly tx: Database.Transaction<(fn: () => unknown) => unknown>;
  /** Counts over every event run here, off the event loop. */
  private readonly reader: ReaderThread;
  /** WAL checkpoints, off the writer (checkpointer.ts). */
  readonly checkpointer: Checkpointer;
  /** The schedule methods (schedule-store.ts), in this store's transactions. */
  private readonly schedules: SqliteSchedules;
  /** The source methods (source-store.ts), in this store's transactions. */
  private readonly sources: SqliteSources;
  private closed = false;
  /** What the check at open found (openSqliteStore's integrityCheckMsMax), null when not asked. */
  integrity: IntegrityCheck | null = null;

  constructor(
    private readonly db: Database.Database,
    private readonly lock: DataDirLock,
    /** The database file. */
    readonly filePath: string,
  ) {
    this.q = prepareQueries(db);
    this.bq = prepareBulkQueries(db);
    this.tx = db.transaction((fn: () => unknown) => fn());
    this.reader = new ReaderThread(filePath, READER_SQL);
    this.q.walAutocheckpoint.get();
    this.checkpointer = new Checkpointer(filePath);
    this.schedules = new SqliteSchedules(db, (fn) => this.write(fn), (params) => writes.insertMany(this.q, params));
    this.sources = new SqliteSources(db, (fn) => this.write(fn));
  }

  private write<T>(fn: () => T): T {
    return this.tx.immediate(fn) as T;
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
  private writeRelaxed<T>(fn: () => T): T {
    this.q.synchronousNormal.run();
    try {
      return this.tx.immediate(fn) as T;
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

  async apiKeyCreate(key: S.ApiKeyRecord): Promise<void> {
    this.q.apiKeyInsert.run(key);
  }

  async apiKeyFindByHash(params: { hash: string }): Promise<S.ApiKeyRecord | null> {
    const row = this.q.apiKeyByHash.get({ hash: params.hash });
    return row ? apiKeyFromRow(row) : null;
  }

  async apiKeyList(params: { tenantId: string }): Promise<S.ApiKeyRecord[]> {
    return this.q.apiKeyList.all({ tenantId: params.tenantId }).map(apiKeyFromRow);
  }

  async apiKeyRevoke(params: { tenantId: string; id: string; now: number; at?: number }): Promise<boolean> {
    const { tenantId, id, now } = params;
    return this.q.apiKeyRevoke.run({ tenantId, id, now, at: params.at ?? now }).changes === 1;
  }

  async bulkJobClaim(params: { owner: string; now: number; leaseUntil: number; takeOver?: boolean; running?: S.BulkJobKey[] }): Promise<S.BulkJobRecord | null> {
    const running = JSON.stringify(checkClaimRunning(params.running).map((k) => [k.tenantId, k.id]));
    const { owner, now, leaseUntil } = params;
    const row = this.write(() => this.bq.bulkJobClaim.get({ owner, now, leaseUntil, takeOver: params.takeOver ? 1 : 0, running }));
    return row ? bulkJobFromRow(row) : null;
  }

  async bulkJobCreate(params: { job: S.BulkJobRecord; runningMax: number }): Promise<boolean> {
    const j = params.job;
    return this.write(() => {
      if (this.bq.bulkJobRunningCount.get({ tenantId: j.tenantId })!.n >= params.runningMax) return false;
      this.bq.bulkJobPrune.run({ tenantId: j.tenantId, kept: BULK_FINISHED_KEPT });
      this.bq.bulkJobInsert.run({
        tenantId: j.tenantId, id: j.id, state: j.state, filter: JSON.stringify(j.filter), action: JSON.stringify(j.action), cursor: j.cursor, createdAt: j.createdAt,
      });
      return true;
    });
  }

  async bulkJobFail(params: { tenantId: string; id: string; owner: string; now: number; error: string }): Promise<boolean> {
    return this.write(() => {
      const row = this.bq.bulkJobGet.get({ tenantId: params.tenantId, id: params.id });
      if (!row) return false;
      const errors = [...bulkJobFromRow(row).errors, params.error].slice(-BULK_ERRORS_KEPT);
      return this.bq.bulkJobFail.run({ tenantId: params.tenantId, id: params.id, owner: params.owner, now: params.now, errors: JSON.stringify(errors) }).changes === 1;
    });
  }

  async bulkJobGet(params: { tenantId: string; id: string }): Promise<S.BulkJobRecord | null> {
    const row = this.bq.bulkJobGet.get(params);
    return row ? bulkJobFromRow(row) : null;
  }

  /** One IMMEDIATE transaction: the lease check, the batch's event writes, the progress. */
  async bulkJobStep(params: S.BulkJobStepParams): Promise<S.BulkJobStepResult | null> {
    checkLimit(Math.max(1, params.changes.length), 'bulkJobStep');
    return this.write(() => writes.bulkStep(this.q, this.bq, params));
  }

  async destinationDelete(params: { tenantId: string; name: string }): Promise<boolean> {
    return this.q.destinationDelete.run(params).changes === 1;
  }

  async destinationGet(params: { tenantId: string; name: string }): Promise<S.DestinationRecord | null> {
    const row = this.q.destinationGet.get(params);
    return row ? destinationFromRow(row) : null;
  }

  async destinationList(params: { tenantId: string }): Promise<S.DestinationRecord[]> {
    return this.q.destinationList.all(params).map(destinationFromRow);
  }

  async destinationPut(params: { destination: S.DestinationRecord }): Promise<{ created: boolean; destination: S.DestinationRecord }> {
    const d = params.destination;
    return this.write(() => {
      const created = this.q.destinationGet.get({ tenantId: d.tenantId, name: d.name }) === undefined;
      const row = this.q.destinationUpsert.get({
        tenantId: d.tenantId,
        name: d.name,
        config: JSON.stringify(d.config),
        secrets: JSON.stringify(d.secrets),
        createdAt: d.createdAt,
        updatedAt: d.updatedAt,
      });
      if (!row) throw new Error(`sqlite: destination ${d.tenantId}/${d.name} upsert returned nothing`);
      return { created, destination: destinationFromRow(row) };
    });
  }

  async eventCancel(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return this.write(() => writes.cancel(this.q, params));
  }

  async eventClaim(params: S.EventClaimParams): Promise<EventRecord[]> {
    if (params.refs.length === 0) return [];
    return this.writeRelaxed(() => writes.claim(this.q, params));
  }

  /** On the reader thread. */
  async eventCountByState(): Promise<Record<EventState, number>> {
    const counts = Object.fromEntries(EVENT_STATES.map((s) => [s, 0])) as Record<EventState, number>;
    for (const row of await this.reader.all<{ state: EventState; n: number }>('eventCountByState')) counts[row.state] = row.n;
    return counts;
  }

  /** On the reader thread. */
  async eventCountByTenantState(): Promise<S.TenantStateCount[]> {
    const rows = await this.reader.all<{ tenant_id: string; state: EventState; n: number }>('eventCountByTenantState');
    return rows.map((r) => ({ tenantId: r.tenant_id, state: r.state, n: r.n }));
  }

  /** On the reader thread. */
  async eventCountPending(params: { tenantId: string }): Promise<number> {
    return (await this.reader.all<{ n: number }>('eventCountPending', { tenantId: params.tenantId }))[0].n;
  }

  /**
   * One relaxed transaction (no fsync of its own: a power loss may undo the newest deletions,
   * which the next pass repeats). It holds the event loop while it runs, so callers keep
   * `limit` small (the cleaner: a few hundred).
   */
  async eventDeleteTerminal(params: S.EventDeleteTerminalParams): Promise<S.EventDeleteTerminalResult> {
    checkDeleteTerminal(params);
    const { tenantId, state, finishedBefore, limit } = params;
    return this.writeRelaxed(() => {
      const gone = this.q.eventDeleteTerminal.all({ tenantId, state, finishedBefore, limit });
      let transitions = 0;
      for (const row of gone) transitions += this.q.transitionDeleteEvent.run(tenantId, row.id).changes;
      return { events: gone.length, transitions };
    });
  }

  /** On the reader thread. */
  async eventForecast(params: S.EventForecastParams): Promise<S.ForecastCount[]> {
    const { tenantId, fromMs, toMs, bucketMs, by } = checkForecast(params);
    const rows = tenantId === null
      ? await this.reader.all<S.ForecastCount>('eventForecastAll', { fromMs, toMs, bucketMs, by })
      : await this.reader.all<S.ForecastCount>('eventForecastTenant', { tenantId, fromMs, toMs, bucketMs, by });
    return rows;
  }

  async eventGet(params: { tenantId: string; id: string }): Promise<EventRecord | null> {
    const row = this.q.eventGet.get(params.tenantId, params.id);
    return row ? eventFromRow(row) : null;
  }

  async eventGroupHead(params: S.EventGroupHeadParams): Promise<S.DueRef | null> {
    const row = this.q.eventGroupFirst.get({ tenantId: params.tenantId, group: params.group });
    // A pull head is claimed by consumers, never fired by the scheduler.
    if (!row || row.state === 'executing' || row.pull === 1) return null;
    return dueRefFromRow(row);
  }

  async eventPullClaim(params: S.EventPullClaimParams): Promise<EventRecord[]> {
    checkPullClaim(params);
    return this.writeRelaxed(() => writes.pullClaim(this.q, params));
  }

  async eventPullExpired(params: { now: number; limit: number }): Promise<{ event: EventRecord; receipt: string }[]> {
    checkLimit(params.limit, 'eventPullExpired');
    return this.q.pullExpired.all(params).map((row) => ({ event: eventFromRow(row), receipt: row.receipt }));
  }

  async eventPullExtend(params: S.EventPullExtendParams): Promise<EventRecord | null> {
    return this.writeRelaxed(() => writes.pullExtend(this.q, params));
  }

  async eventPullNextDue(params: { tenantId: string; queue: string }): Promise<number | null> {
    return this.q.pullNextDue.get(params)?.due_at ?? null;
  }

  /** Relaxed, as a push outcome is: an ack a power loss undoes makes the event come back (at least once). */
  async eventPullSettle(params: S.EventPullSettleParams): Promise<EventRecord | null> {
    return this.writeRelaxed(() => writes.pullSettle(this.q, params));
  }

  async eventInsertMany(params: S.EventInsertManyParams): Promise<S.EventInsertResult[]> {
    if (params.events.length === 0) return [];
    return this.write(() => writes.insertMany(this.q, params));
  }

  /**
   * eventInsertMany for the store thread (thread-store.ts): the events come encoded by
   * encodeInsertRows and the answer is insertRows' own, so neither crosses the thread as records.
   */
  async eventInsertRows(rows: (string | number | null)[], now: number): Promise<writes.InsertRowsResult> {
    if (rows.length === 0) return { seqs: [], others: [] };
    return this.write(() => writes.insertRows(this.q, rows, now));
  }

  /** One bounded walk of an index (event-list-plan.ts); a second, index-only walk finds where a cut walk ended. */
  async eventList(params: S.EventListParams): Promise<S.EventListPage> {
    checkLimit(params.limit, 'eventList');
    const plan = listPlan(params);
    const filters = {
      tenantId: params.tenantId,
      beforeSeq: plan.beforeSeq,
      state: params.state ?? null,
      destination: params.destination ?? null,
      group: params.group ?? null,
      type: params.type ?? null,
      examine: plan.examine,
    };
    const rows = this.q.eventListBy[plan.key].all({ ...filters, fromMs: params.fromMs ?? null, toMs: params.toMs ?? null, limit: params.limit + 1 });
    let walkEndSeq: number | null = null;
    if (plan.residual && rows.length <= params.limit) {
      const walk = this.q.eventListWalk[plan.key].get(filters)!;
      if (walk.examined >= plan.examine) walkEndSeq = walk.last_seq;
    }
    return listPage(rows, params.limit, walkEndSeq);
  }

  async eventListDue(params: S.EventListDueParams): Promise<S.DueRef[]> {
    checkListDue(params);
    if (params.shards !== null && params.shards.length === 0) return [];
    if (params.queue) {
      const { tenantId, queue, from } = params.queue;
      const rows = this.q.eventListDueQueue.all({
        tenantId,
        queue,
        untilMs: params.untilMs,
        fromDueAt: from?.dueAt ?? Number.MIN_SAFE_INTEGER,
        fromId: from?.id ?? '',
        shards: params.shards === null ? null : JSON.stringify(params.shards),
        limit: params.limit,
      });
      return rows.map(dueRefFromRow);
    }
    const bind = {
      untilMs: params.untilMs,
      afterDueAt: params.after?.dueAt ?? Number.MIN_SAFE_INTEGER,
      afterTenantId: params.after?.tenantId ?? '',
      afterId: params.after?.id ?? '',
      limit: params.limit,
    };
    if (params.skip?.length) {
      const skip = JSON.stringify(params.skip.map((m) => [m.tenantId, m.queue, m.from.dueAt, m.from.id]));
      const rows =
        params.shards === null
          ? this.q.eventListDueAllSkip.all({ ...bind, skip })
          : this.q.eventListDueShardsSkip.all({ ...bind, shards: JSON.stringify(params.shards), skip });
      return rows.map(dueRefFromRow);
    }
    const rows =
      params.shards === null
        ? this.q.eventListDueAll.all(bind)
        : this.q.eventListDueShards.all({ ...bind, shards: JSON.stringify(params.shards) });
    return rows.map(dueRefFromRow);
  }

  async eventRecordAttempts(params: S.EventRecordAttemptsParams): Promise<boolean[]> {
    if (params.outcomes.length === 0) return [];
    return this.writeRelaxed(() => writes.recordAttempts(this.q, params));
  }

  async eventReplay(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return this.write(() => writes.replay(this.q, params));
  }

  async claimLeaseRenew(params: { owner: string; leaseUntil: number }): Promise<void> {
    this.writeRelaxed(() => {
      this.q.claimLeasePrune.run(params);
      this.q.claimLeaseRenew.run(params);
    });
  }

  async eventRescue(params: S.EventRescueParams): Promise<S.DueRef[]> {
    checkLimit(params.limit, 'eventRescue');
    return this.writeRelaxed(() => writes.rescue(this.q, params));
  }

  async eventRescueDead(params: S.EventRescueDeadParams): Promise<S.DueRef[] | null> {
    checkLimit(params.limit, 'eventRescueDead');
    return this.writeRelaxed(() => {
      const now = Date.now();
      if (!this.q.leaderCheck.get({ leaderId: params.leaderId, epoch: params.epoch, now })) return null;
      return writes.rescueDead(this.q, params, now);
    });
  }

  async eventUpdate(params: S.EventMutateParams & { patch: S.EventPatch }): Promise<S.EventMutateResult> {
    return this.write(() => writes.update(this.q, params));
  }

  async leaderAttemptElect(params: { nodeId: string; leaseMs: number }): Promise<S.LeaderLease | null> {
    checkLeaseMs(params.leaseMs);
    const now = Date.now();
    const row = this.q.leaderElect.get({ nodeId: params.nodeId, now, expiresAt: now + params.leaseMs });
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderGet(): Promise<S.LeaderLease | null> {
    const row = this.q.leaderGet.get();
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderResign(params: { nodeId: string; epoch: number }): Promise<void> {
    this.q.leaderResign.run({ nodeId: params.nodeId, epoch: params.epoch, now: Date.now() });
  }

  async nodeDelete(params: { nodeId: string }): Promise<void> {
    this.q.nodeDelete.run({ id: params.nodeId });
  }

  async nodeHeartbeat(params: { nodeId: string; meta: Record<string, unknown> }): Promise<{ nowMs: number }> {
    const nowMs = Date.now();
    this.q.nodeUpsert.run({ id: params.nodeId, now: nowMs, meta: JSON.stringify(params.meta) });
    return { nowMs };
  }

  async nodeList(): Promise<S.NodeRecord[]> {
    const nowMs = Date.now();
    return this.q.nodeList.all().map((row) => nodeFromRow(row, nowMs));
  }

  async shardAssign(params: { leaderId: string; epoch: number; assignments: { shard: number; nodeId: string }[] }): Promise<boolean> {
    checkShardAssignments(params.assignments);
    return this.write(() => {
      if (!this.q.leaderCheck.get({ leaderId: params.leaderId, epoch: params.epoch, now: Date.now() })) return false;
      this.q.shardClear.run();
      for (const a of params.assignments) this.q.shardInsert.run(a.shard, a.nodeId, params.epoch);
      return true;
    });
  }

  async shardList(): Promise<S.ShardAssignment[]> {
    return this.q.shardList.all().map(shardAssignmentFromRow);
  }

  async tenantCreate(tenant: S.NewTenantRecord): Promise<void> {
    const { id, name, createdAt } = tenant;
    this.q.tenantInsert.run({ id, name, settings: JSON.stringify(tenant.settings), createdAt, signingSecrets: JSON.stringify(tenant.signingSecrets ?? []) });
  }

  async tenantUpdate(params: { id: string; settings: Record<string, unknown> }): Promise<S.TenantRecord | null> {
    const row = this.q.tenantUpdate.get({ id: params.id, settings: JSON.stringify(params.settings) });
    return row ? tenantFromRow(row) : null;
  }

  async tenantGet(params: { id: string }): Promise<S.TenantRecord | null> {
    const row = this.q.tenantGet.get(params);
    return row ? tenantFromRow(row) : null;
  }

  async tenantList(): Promise<S.TenantRecord[]> {
    return this.q.tenantList.all().map(tenantFromRow);
  }

  async tenantSecretsGet(params: { id: string }): Promise<S.DestinationSecret[] | null> {
    const row = this.q.tenantSecretsGet.get(params);
    return row ? tenantSecretsFromColumn(row.signing_secrets) : null;
  }

  async tenantSecretsSwap(params: { id: string; expected: S.DestinationSecret[]; secrets: S.DestinationSecret[] }): Promise<boolean> {
    const { id, expected, secrets } = params;
    return this.q.tenantSecretsSwap.run({ id, expected: JSON.stringify(expected), secrets: JSON.stringify(secrets) }).changes === 1;
  }

  async shardLag(params: { now: number; limit: number }): Promise<{ shard: number; dueEvents: number; oldestDueAt: number }[]> {
    checkLimit(params.limit, 'shardLag');
    return this.q.shardLag.all({ now: params.now, limit: params.limit }).map((r) => ({ shard: r.shard, dueEvents: r.due_events, oldestDueAt: r.oldest_due_at }));
  }

  async timeNow(): Promise<number> {
    return Date.now();
  }

  async transitionList(params: S.TransitionListParams): Promise<TransitionRecord[]> {
    checkLimit(params.limit, 'transitionList');
    return this.q.transitionList
      .all({ tenantId: params.tenantId, eventId: params.eventId, afterSeq: params.afterSeq ?? 0, limit: params.limit })
      .map(transitionFromRow);
  }
}

// The schedule and source methods: handed to this.schedules and this.sources (core/sub-stores.ts).
export interface SqliteStore extends SubStoreMethods {}
delegateToSubStores(SqliteStore);
