/**
 * The event writes of the PostgreSQL backend. Each state change is ONE statement of queries.ts
 * that updates the event(s) and appends their transitions, so each is atomic without a
 * transaction of its own; only inserts open one, when their tenants' durability is relaxed. A
 * transition's seq is the version its change produced (1 = created, which is not stored: the
 * trace reads it from the event row, queries.ts transitionList).
 */
import type pg from 'pg';
import {
  CANCELABLE_STATES,
  EDITABLE_STATES,
  type EventRecord,
  type EventState,
  REPLAYABLE_STATES,
} from '../../core/event.ts';
import { queueOf } from '../../core/queue.ts';
import * as S from '../store.ts';
import {
  cancelDetail,
  checkAttemptTarget,
  createdRecord,
  eventEdit,
  jsonObject,
  keyOf,
  mutateRefusal,
} from '../core/event-writes.ts';
import { dueRefFromRow, eventFromRow, type DueRefRow, type EventRow } from '../core/rows.ts';
import { atMost, inTransaction, onEachConnection, run, type Queryable } from './db.ts';
import { bulkJobFromRow, operationDetail, type BulkJobRow } from '../core/bulk-rows.ts';
import { runBulk } from './bulk-queries.ts';
import { TX } from './queries.ts';

/** A mutation re-reads and retries when the row changed between its read and its write; bounded. */
const MUTATE_ATTEMPTS_MAX = 5;

/**
 * Inserts the batch in one statement; the first occurrence of a repeated id wins. The events not
 * inserted (stored before, or repeated in the batch) are read back in one more statement.
 */
/**
 * How a layout of the tables inserts events and reads stored ones: one statement each on plain
 * PostgreSQL; on Citus (citus/events.ts) the locator first, in the caller's transaction.
 */
export interface InsertOps {
  /** Inserts the rows whose key is new (the statement's values as eventInsertMany takes them); answers those inserted. */
  insert(
    db: Queryable,
    values: unknown[],
    events: S.NewEvent[],
  ): Promise<{ tenant_id: string; id: string; seq: number }[]>;
  /** The stored rows of these events (any order; those that do not exist are left out). */
  readStored(db: Queryable, events: S.NewEvent[]): Promise<EventRow[]>;
}

const PLAIN_INSERT: InsertOps = {
  insert: async (db, values) =>
    (await run<{ tenant_id: string; id: string; seq: number }>(db, 'eventInsertMany', values)).rows,
  readStored: async (db, events) =>
    (await run<EventRow>(db, 'eventGetMany', [events.map((e) => e.tenantId), events.map((e) => e.id)])).rows,
};

export async function insertMany(
  db: Queryable,
  { events, now }: S.EventInsertManyParams,
  ops: InsertOps = PLAIN_INSERT,
): Promise<S.EventInsertResult[]> {
  const n = events.length;
  const cols = {
    tenantIds: new Array<string>(n),
    ids: new Array<string>(n),
    shards: new Array<number>(n),
    fireAts: new Array<number>(n),
    destinations: new Array<string>(n),
    payloads: new Array<string>(n),
    headers: new Array<string>(n),
    groups: new Array<string | null>(n),
    retries: new Array<string | null>(n),
    expireAts: new Array<number | null>(n),
    tags: new Array<string>(n),
    hashes: new Array<string>(n),
    queues: new Array<string>(n),
    types: new Array<string | null>(n),
  };
  for (let i = 0; i < n; i++) {
    const e = events[i];
    cols.tenantIds[i] = e.tenantId;
    cols.ids[i] = e.id;
    cols.shards[i] = e.shard;
    cols.fireAts[i] = e.fireAt;
    cols.destinations[i] = JSON.stringify(e.destination);
    cols.payloads[i] = e.payload;
    cols.headers[i] = jsonObject(e.headers);
    cols.groups[i] = e.group;
    cols.retries[i] = e.retry === null ? null : JSON.stringify(e.retry);
    cols.expireAts[i] = e.expireAt;
    cols.tags[i] = jsonObject(e.tags);
    cols.hashes[i] = e.requestHash;
    cols.queues[i] = queueOf(e.destination);
    cols.types[i] = e.type ?? null;
  }
  const inserted = await ops.insert(
    db,
    [
      cols.tenantIds,
      cols.ids,
      cols.shards,
      cols.fireAts,
      cols.destinations,
      cols.payloads,
      cols.headers,
      cols.groups,
      cols.retries,
      cols.expireAts,
      cols.tags,
      cols.hashes,
      now,
      cols.queues,
      cols.types,
    ],
    events,
  );
  const seqByKey = new Map<string, number>();
  for (const row of inserted) seqByKey.set(keyOf(row.tenant_id, row.id), row.seq);

  const results: S.EventInsertResult[] = new Array(n);
  const missing: number[] = [];
  for (let i = 0; i < n; i++) {
    const key = keyOf(events[i].tenantId, events[i].id);
    const seq = seqByKey.get(key);
    if (seq === undefined) {
      missing.push(i);
      continue;
    }
    seqByKey.delete(key); // a later repeat of this id in the batch is `existing` or `conflict`
    results[i] = { kind: 'created', event: createdRecord(events[i], seq, now) };
  }
  if (missing.length > 0) await settleExisting(db, events, missing, results, ops);
  return results;
}

/** Fills the results of events that were not inserted with the stored row: existing or conflict. */
async function settleExisting(
  db: Queryable,
  events: S.NewEvent[],
  missing: number[],
  results: S.EventInsertResult[],
  ops: InsertOps,
): Promise<void> {
  const stored = await ops.readStored(
    db,
    missing.map((i) => events[i]),
  );
  const byKey = new Map(stored.map((r): [string, EventRow] => [keyOf(r.tenant_id, r.id), r]));
  for (const i of missing) {
    const e = events[i];
    const row = byKey.get(keyOf(e.tenantId, e.id));
    if (!row) throw new Error(`postgres: event ${e.tenantId}/${e.id} neither inserted nor found`);
    results[i] = { kind: row.request_hash === e.requestHash ? 'existing' : 'conflict', event: eventFromRow(row) };
  }
}

/**
 * A claim of refs none of which is grouped is one statement. When one may be (its group is not
 * null, or not given), the claim runs in a transaction that first takes the advisory locks of the
 * refs' groups (queries.ts IS_GROUP_HEAD: claims of one group run one after another, and each sees
 * the ones committed before it).
 */
export async function claim(pool: pg.Pool, p: S.EventClaimParams): Promise<EventRecord[]> {
  if (!p.refs.some((r) => r.group !== null)) return claimRefs(pool, p);
  return inTransaction(pool, TX.begin, async (client) => {
    await run(client, 'eventGroupLock', [p.refs.map((r) => r.tenantId), p.refs.map((r) => r.id)]);
    return claimRefs(client, p);
  });
}

async function claimRefs(db: Queryable, p: S.EventClaimParams): Promise<EventRecord[]> {
  const res = await run<EventRow>(db, 'eventClaim', [
    p.refs.map((r) => r.tenantId),
    p.refs.map((r) => r.id),
    p.refs.map((r) => r.version),
    p.owner,
    p.leaseUntil,
    p.now,
    JSON.stringify({ owner: p.owner }),
    p.fenceByShardOwner === true,
  ]);
  return res.rows.map(eventFromRow);
}

/** Bound on warmClaimPool: past it the node goes on, and what is left is done on first use. */
export const CLAIM_POOL_WARM_MS_MAX = 5_000;

/**
 * Opens every connection of the claims' pool at once and runs the claim statement on each (with
 * no refs it matches no row and writes nothing), so that each holds its connection and its
 * prepared statement before the first event falls due. A fresh node's first claims each opened a
 * connection and parsed and planned the statement: at 5,000 events/s (npm run bench -- precision
 * --store postgres) its first claim took 11-16 ms, and 3-6 ms with this. Best effort within
 * CLAIM_POOL_WARM_MS_MAX; a connection that fails is opened on first use, as without it.
 */
export async function warmClaimPool(pool: pg.Pool, connections: number): Promise<void> {
  await atMost(
    onEachConnection(pool, connections, (client) => run(client, 'eventClaim', [[], [], [], '', 0, 0, '{}', false])),
    CLAIM_POOL_WARM_MS_MAX,
  );
}

/**
 * Applies outcomes as if one by one, like the SQLite backend: of several outcomes for one event,
 * the first that matches applies and changes the version, so the later ones do not. Each round
 * sends at most one outcome per event in one statement; a second round exists only when the
 * batch repeats an event (then all rounds share one transaction).
 */
export async function recordAttempts(
  pool: pg.Pool,
  { outcomes, now }: S.EventRecordAttemptsParams,
): Promise<boolean[]> {
  for (const o of outcomes) {
    checkAttemptTarget(o.to);
  }
  const rounds = outcomeRounds(
    outcomes,
    outcomes.map((_, i) => i),
  );
  const applied = new Array<boolean>(outcomes.length).fill(false);
  if (rounds.length === 1) {
    await recordRound(pool, outcomes, rounds[0], now, applied);
    return applied;
  }
  return inTransaction(pool, TX.begin, async (client) => {
    await recordInRounds(outcomes, rounds, applied, (pending) => recordRound(client, outcomes, pending, now, applied));
    return applied;
  });
}

/** The outcomes at `indexes` in rounds: round k holds each event's k-th outcome, so no round names an event twice. */
export function outcomeRounds(outcomes: readonly S.AttemptOutcome[], indexes: readonly number[]): number[][] {
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  for (const i of indexes) {
    const key = keyOf(outcomes[i].tenantId, outcomes[i].id);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(i);
  }
  return rounds;
}

/**
 * Records `rounds` in order with `recordRound`, which marks in `applied` the outcomes that
 * applied; an event's later outcomes are left out once one of its outcomes applied.
 */
export async function recordInRounds(
  outcomes: readonly S.AttemptOutcome[],
  rounds: readonly number[][],
  applied: readonly boolean[],
  recordRound: (indexes: number[]) => Promise<void>,
): Promise<void> {
  const done = new Set<string>();
  for (const round of rounds) {
    const pending = round.filter((i) => !done.has(keyOf(outcomes[i].tenantId, outcomes[i].id)));
    await recordRound(pending);
    for (const i of pending) if (applied[i]) done.add(keyOf(outcomes[i].tenantId, outcomes[i].id));
  }
}

/** One statement for `indexes` (distinct events); marks the ones that applied. */
async function recordRound(
  db: Queryable,
  outcomes: S.AttemptOutcome[],
  indexes: number[],
  now: number,
  applied: boolean[],
): Promise<void> {
  if (indexes.length === 0) return;
  const res = await run<{ ord: number }>(db, 'eventRecordAttempts', recordValues(outcomes, indexes, now));
  for (const row of res.rows) applied[indexes[row.ord - 1]] = true;
}

/** eventRecordAttempts' values ($1-$10) for the outcomes at `indexes` (Citus appends its shard). */
export function recordValues(outcomes: S.AttemptOutcome[], indexes: number[], now: number): unknown[] {
  const pick = <T>(f: (o: S.AttemptOutcome) => T) => indexes.map((i) => f(outcomes[i]));
  return [
    pick((o) => o.tenantId),
    pick((o) => o.id),
    pick((o) => o.version),
    pick((o) => o.owner),
    pick((o) => o.to),
    pick((o) => (o.to === 'awaiting_retry' ? (o.retryAt ?? now) : null)),
    pick((o) => o.status ?? null),
    pick((o) => o.error ?? null),
    pick((o) => o.durationMs),
    now,
  ];
}

export async function rescue(db: Queryable, p: S.EventRescueParams): Promise<S.DueRef[]> {
  const res = await run<DueRefRow>(db, 'eventRescue', [
    p.leaseExpiredBefore,
    p.notOwnedBy ?? null,
    p.limit,
    p.now,
    p.heldBy ?? null,
  ]);
  return res.rows.map(dueRefFromRow);
}

/**
 * In one transaction: share-lock the lease row if (leaderId, epoch) holds it unexpired (so no
 * election commits meanwhile), then rescue the dead owners' executing events.
 */
export async function rescueDead(pool: pg.Pool, p: S.EventRescueDeadParams): Promise<S.DueRef[] | null> {
  return inTransaction(pool, TX.begin, async (client) => {
    if ((await run(client, 'leaderCheckForShare', [p.leaderId, p.epoch])).rowCount !== 1) return null;
    const res = await run<DueRefRow>(client, 'eventRescueDead', [p.owners, p.nodeTtlMs, p.limit, p.now]);
    return res.rows.map(dueRefFromRow);
  });
}

/**
 * The shared frame of cancel, replay and update: not_found, then the version (a stale If-Match
 * wins over the state), then the state; `change` is the conditional write at the version read.
 * When another writer changed the row in between, `change` finds nothing and the frame reads
 * again (the outcome is then decided on the newer row), at most MUTATE_ATTEMPTS_MAX times.
 * No row lock is held while deciding, so a claimer's SKIP LOCKED never passes over a row that a
 * no-op mutation was merely looking at.
 */
async function mutate(
  db: Queryable,
  p: S.EventMutateParams,
  allowed: readonly EventState[],
  change: (current: EventRow) => Promise<EventRow | undefined>,
  boundedByChanges = true,
): Promise<S.EventMutateResult> {
  for (let attempt = 0; attempt < MUTATE_ATTEMPTS_MAX; attempt++) {
    const current = (await run<EventRow>(db, 'eventGet', [p.tenantId, p.id])).rows[0];
    if (!current) return { kind: 'not_found' };
    const refusal = mutateRefusal(current, p, allowed, boundedByChanges);
    if (refusal) return refusal;
    const changed = await change(current);
    if (changed) return { kind: 'ok', event: eventFromRow(changed) };
  }
  throw new Error(`postgres: event ${p.tenantId}/${p.id} kept changing; gave up after ${MUTATE_ATTEMPTS_MAX} attempts`);
}

async function first(res: Promise<pg.QueryResult<EventRow>>): Promise<EventRow | undefined> {
  return (await res).rows[0];
}

/** The conditional writes of cancel, replay and update at the version of `cur` (no row when it moved on). */
function cancelAt(db: Queryable, p: S.EventMutateParams, cur: EventRow): Promise<EventRow | undefined> {
  return first(run<EventRow>(db, 'eventCancel', cancelValues(p, cur)));
}

function replayAt(db: Queryable, p: S.EventMutateParams, cur: EventRow): Promise<EventRow | undefined> {
  return first(run<EventRow>(db, 'eventReplay', replayValues(p, cur)));
}

/**
 * The values of eventCancel ($1-$7), eventReplay ($1-$6) and eventEdit ($1-$14) at the version of
 * `cur` (Citus appends the shard); a value's index is its parameter's number less one.
 */
export function cancelValues(p: S.EventMutateParams, cur: EventRow): unknown[] {
  const detail = cancelDetail(p);
  return [...atVersion(p, cur), detail === null ? null : JSON.stringify(detail), p.reason ?? null];
}

export function replayValues(p: S.EventMutateParams, cur: EventRow): unknown[] {
  return [...atVersion(p, cur), JSON.stringify(operationDetail({ attemptsBefore: cur.attempts }, p.operation))];
}

/** $1-$5 of eventCancel and eventReplay: when, which event, and the version and state it was read at. */
function atVersion(p: S.EventMutateParams, cur: EventRow): unknown[] {
  return [p.now, p.tenantId, p.id, cur.version, cur.state];
}

export function editValues(
  p: S.EventMutateParams,
  cur: EventRow,
  e: NonNullable<ReturnType<typeof eventEdit>>,
): unknown[] {
  return [
    e.fireAt,
    e.dueAt,
    e.payload,
    e.headers,
    e.destination,
    e.expireAt,
    e.requestHash,
    p.now,
    p.tenantId,
    p.id,
    cur.version,
    JSON.stringify(operationDetail(e.detail, p.operation)),
    e.queue,
    e.type,
  ];
}

/** A patch that changes nothing (same values, same requestHash) returns `cur` itself: no write. */
async function updateAt(
  db: Queryable,
  p: S.EventMutateParams & { patch: S.EventPatch },
  cur: EventRow,
): Promise<EventRow | undefined> {
  const e = eventEdit(cur, p.patch);
  if (!e) return cur;
  return first(run<EventRow>(db, 'eventEdit', editValues(p, cur, e)));
}

export function cancel(db: Queryable, p: S.EventMutateParams): Promise<S.EventMutateResult> {
  return mutate(db, p, CANCELABLE_STATES, (cur) => cancelAt(db, p, cur), false);
}

export function replay(db: Queryable, p: S.EventMutateParams): Promise<S.EventMutateResult> {
  return mutate(db, p, REPLAYABLE_STATES, (cur) => replayAt(db, p, cur));
}

/**
 * Edits a scheduled event. A patch that changes nothing (same values, same requestHash) returns
 * ok with the event untouched: no new version, no transition.
 */
export function update(db: Queryable, p: S.EventMutateParams & { patch: S.EventPatch }): Promise<S.EventMutateResult> {
  return mutate(db, p, EDITABLE_STATES, (cur) => updateAt(db, p, cur));
}

/**
 * One bulk step (Store.bulkJobStep) in one transaction: the job row locked while `owner` holds
 * its lease, each change by the single-event write at the version read, then the progress.
 */
/** How a layout reads a bulk step's events and makes one change (plain PostgreSQL below; Citus: citus/bulk.ts). */
export interface BulkStepOps {
  /** The stored rows of the tenant's events `ids` (any order; those that do not exist are left out). */
  read(db: Queryable, tenantId: string, ids: string[]): Promise<EventRow[]>;
  /** The conditional write of `change` at the version of `cur`: the row after it, or undefined when it moved on. */
  change(
    db: Queryable,
    change: S.BulkJobStepParams['changes'][number],
    p: S.EventMutateParams,
    cur: EventRow,
  ): Promise<EventRow | undefined>;
}

const PLAIN_BULK_STEP: BulkStepOps = {
  read: async (db, tenantId, ids) => (await run<EventRow>(db, 'eventGetMany', [ids.map(() => tenantId), ids])).rows,
  change: (db, c, p, cur) =>
    c.kind === 'cancel'
      ? cancelAt(db, p, cur)
      : c.kind === 'replay'
        ? replayAt(db, p, cur)
        : updateAt(db, { ...p, patch: c.patch }, cur),
};

export async function bulkStep(
  pool: pg.Pool,
  p: S.BulkJobStepParams,
  ops: BulkStepOps = PLAIN_BULK_STEP,
): Promise<S.BulkJobStepResult | null> {
  return inTransaction(pool, TX.begin, async (client) => {
    if ((await runBulk(client, 'bulkJobLeaseCheck', [p.tenantId, p.id, p.owner, p.now])).rowCount !== 1) return null;
    const operation = { name: p.operation, id: p.id };
    // The page's rows in one read, then each change by its conditional write at the version the
    // job selected: one round trip per event, not two. An event that moved on since (another
    // version or state, or a write that finds nothing) is skipped, as the single call would refuse it.
    const rows = await ops.read(
      client,
      p.tenantId,
      p.changes.map((c) => c.id),
    );
    const current = new Map(rows.map((r) => [r.id, r]));
    const changed: EventRecord[] = [];
    for (const c of p.changes) {
      const cur = current.get(c.id);
      const base = { tenantId: p.tenantId, id: c.id, expectedVersion: c.version, now: p.now, operation };
      const allowed =
        c.kind === 'cancel' ? CANCELABLE_STATES : c.kind === 'replay' ? REPLAYABLE_STATES : EDITABLE_STATES;
      if (!cur || mutateRefusal(cur, base, allowed, c.kind !== 'cancel')) continue;
      const row = await ops.change(client, c, base, cur);
      if (row && row.version !== c.version) changed.push(eventFromRow(row));
    }
    const res = await runBulk<BulkJobRow>(client, 'bulkJobProgress', [
      p.tenantId,
      p.id,
      p.cursor,
      p.matched,
      changed.length,
      p.skipped + (p.changes.length - changed.length),
      p.leaseUntil,
      p.now,
      p.finished,
    ]);
    return { changed, job: bulkJobFromRow(res.rows[0]) };
  });
}

/**
 * A pull claim (Store.eventPullClaim), its page a bounded walk per type: in one transaction, the
 * advisory locks of the groups of the page's members (see claim), then the claim statement.
 */
export async function pullClaim(pool: pg.Pool, p: S.EventPullClaimParams): Promise<EventRecord[]> {
  return inTransaction(pool, TX.begin, (client) => pullClaimIn(client, p));
}

/** A pull claim's statements (its groups' locks, then the claim) inside the caller's transaction. */
async function pullClaimIn(client: Queryable, p: S.EventPullClaimParams): Promise<EventRecord[]> {
  const examine = Math.max(S.PULL_EXAMINE_MIN, p.max * S.PULL_EXAMINE_FACTOR);
  const page = [p.tenantId, p.queue, p.now, examine];
  const bind = [...page, p.max, p.leaseUntil, p.receipt, JSON.stringify({ pull: 'claim', visibleUntil: p.leaseUntil })];
  const types = p.types === null ? null : [...new Set(p.types)];
  let res: pg.QueryResult<EventRow>;
  if (types === null) {
    await run(client, 'pullGroupLockAny', page);
    res = await run<EventRow>(client, 'pullClaimAny', bind);
  } else {
    await run(client, 'pullGroupLockTyped', [...page, types]);
    res = await run<EventRow>(client, 'pullClaimTyped', [...bind, types]);
  }
  return res.rows.map(eventFromRow);
}

/** Store.eventPullSettleThenClaim: the settles' statement, then the claim's, in one transaction. */
export async function pullSettleThenClaim(
  pool: pg.Pool,
  settles: S.EventPullSettleParams[],
  claim: S.EventPullClaimParams,
): Promise<{ settled: (EventRecord | null)[]; events: EventRecord[] }> {
  return inTransaction(pool, TX.begin, async (client) => {
    const settled = await pullSettleMany(client, settles);
    return { settled, events: await pullClaimIn(client, claim) };
  });
}

/** A settle's values beyond its params: when it is due again (awaiting_retry only) and its transition's detail. */
function settleValues(p: S.EventPullSettleParams): { retryAt: number | null; detail: string } {
  checkAttemptTarget(p.to);
  const retryAt = p.to === 'awaiting_retry' ? (p.retryAt ?? p.now) : null;
  return { retryAt, detail: JSON.stringify(retryAt === null ? { pull: p.action } : { pull: p.action, retryAt }) };
}

/** pullSettleMany's values ($1-$9) for `settles` (Citus appends its shard). */
export function settleManyValues(settles: S.EventPullSettleParams[]): unknown[] {
  const values = settles.map(settleValues);
  return [
    settles.map((p) => p.tenantId),
    settles.map((p) => p.id),
    settles.map((p) => p.receipt),
    settles.map((p) => p.attempts),
    settles.map((p) => p.to),
    values.map((v) => v.retryAt),
    settles.map((p) => p.error ?? null),
    settles.map((p) => p.now),
    values.map((v) => v.detail),
  ];
}

/** Many acks, nacks or expiries (Store.eventPullSettleMany): one statement; null where one changed nothing. */
export async function pullSettleMany(
  db: Queryable,
  settles: S.EventPullSettleParams[],
): Promise<(EventRecord | null)[]> {
  const rows = (await run<EventRow & { ord: string }>(db, 'pullSettleMany', settleManyValues(settles))).rows;
  const out: (EventRecord | null)[] = settles.map(() => null);
  for (const row of rows) out[Number(row.ord) - 1] = eventFromRow(row);
  return out;
}

/** Ack, nack or expiry of a pull claim (Store.eventPullSettle): one statement. */
export async function pullSettle(db: Queryable, p: S.EventPullSettleParams): Promise<EventRecord | null> {
  const { retryAt, detail } = settleValues(p);
  const row = (
    await run<EventRow>(db, 'pullSettle', [
      p.tenantId,
      p.id,
      p.receipt,
      p.attempts,
      p.to,
      retryAt,
      p.error ?? null,
      p.now,
      detail,
    ])
  ).rows[0];
  return row ? eventFromRow(row) : null;
}
