/**
 * The event writes of the SQLite backend. Each function runs inside one transaction opened by the
 * caller (SqliteStore) and appends exactly one transition per event it changes. The transition's
 * seq is the version the change produced: version 1 is `created`, and every change adds one to
 * both, so a trace is numbered 1, 2, 3, ... without a counter of its own. The `created`
 * transition itself is not stored: the trace reads it from the event row (queries.ts).
 */
import {
  CANCELABLE_STATES,
  EDITABLE_STATES,
  type EventRecord,
  type EventState,
  REPLAYABLE_STATES,
  type TransitionRecord,
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
import { dueRefFromRow, eventFromRow, type EventRow } from '../core/rows.ts';
import { bulkJobFromRow, operationDetail } from '../core/bulk-rows.ts';
import type { BulkQueries } from './bulk-queries.ts';
import { EVENT_INSERT_CHUNKS, type Queries } from './queries.ts';
import { claimedEventFromTuple, type EventTuple, type RescueCandidateRow, settledEventFromTuple } from './rows.ts';

/** Appends one transition row (positional, in the column order of SQL.transitionInsert). */
function appendTransition(
  q: Queries,
  t: Omit<TransitionRecord, 'detail'> & { detail: Record<string, unknown> | null },
): void {
  q.transitionInsert.run(
    t.tenantId,
    t.eventId,
    t.seq,
    t.at,
    t.kind,
    t.fromState,
    t.toState,
    t.attempt,
    t.status,
    t.error,
    t.durationMs,
    t.latenessMs,
    t.detail === null ? null : JSON.stringify(t.detail),
  );
}

/** Values per event in an encoded insert (encodeInsertRows): the insert's bind values, each once. */
export const INSERT_ROW_FIELDS = 15;

/**
 * The events of an insert as one flat array of strings, numbers and nulls, INSERT_ROW_FIELDS per
 * event: every JSON text and derived column computed here, so the thread that holds the write
 * lock only binds them (measured: a third of its time per inserted event went to building these
 * values, structured-cloning nested objects and building records it then dropped).
 */
export function encodeInsertRows(events: readonly S.NewEvent[]): (string | number | null)[] {
  const rows = new Array<string | number | null>(events.length * INSERT_ROW_FIELDS);
  let o = 0;
  for (const e of events) {
    rows[o++] = e.tenantId;
    rows[o++] = e.id;
    rows[o++] = e.shard;
    rows[o++] = e.fireAt;
    rows[o++] = JSON.stringify(e.destination);
    rows[o++] = e.payload;
    rows[o++] = jsonObject(e.headers);
    rows[o++] = e.group;
    rows[o++] = e.retry === null ? null : JSON.stringify(e.retry);
    rows[o++] = e.expireAt;
    rows[o++] = jsonObject(e.tags);
    rows[o++] = e.requestHash;
    rows[o++] = queueOf(e.destination);
    rows[o++] = e.type ?? null;
    rows[o++] = 'name' in e.destination ? e.destination.name : null;
  }
  return rows;
}

/** What insertRows did: the seq of each event it inserted (0 for the others), and what the others are. */
export interface InsertRowsResult {
  seqs: number[];
  others: { index: number; result: Exclude<S.EventInsertResult, { kind: 'created' }> }[];
}

/** The 18 bind values of one VALUES tuple of eventInsertSql for encoded event `i`, appended to `out`. */
function pushInsertBinds(
  out: (string | number | null)[],
  rows: readonly (string | number | null)[],
  i: number,
  now: number,
  pull: number,
): void {
  const o = i * INSERT_ROW_FIELDS;
  out.push(
    rows[o],
    rows[o + 1],
    rows[o + 2],
    rows[o + 3],
    rows[o + 3],
    rows[o + 4],
    rows[o + 5],
    rows[o + 6],
    rows[o + 7],
    rows[o + 8],
    rows[o + 9],
    rows[o + 10],
    rows[o + 11],
    now,
    now,
    rows[o + 12],
    rows[o + 13],
    pull,
  );
}

/**
 * Inserts each encoded event, or reports the stored one (the first of a batch wins a repeated
 * id). The events go in statements of EVENT_INSERT_CHUNKS rows: multi-row while enough are
 * left, then one by one. No transition is written: `created` is read from the row. Runs inside the
 * caller's write transaction: nothing else inserts meanwhile, which the seqs below rely on.
 *
 * A statement answers no rows: one that inserted all its k rows gave them the k seqs up to its
 * `lastInsertRowid`, in VALUES order (the AUTOINCREMENT rowid, one more than the largest yet, row
 * by row). A statement that skipped a row (an id stored already, or repeated in the chunk) reads
 * the chunk's rows back: a row newer than the largest seq before the statement is the one it
 * inserted, for the first occurrence of its id.
 */
export function insertRows(q: Queries, rows: readonly (string | number | null)[], now: number): InsertRowsResult {
  const n = rows.length / INSERT_ROW_FIELDS;
  const seqs = new Array<number>(n).fill(0);
  const others: InsertRowsResult['others'] = [];
  const binds: (string | number | null)[] = [];
  const pullOf = pullLookup(q);
  let seqMax: number | undefined;
  for (let i = 0; i < n; ) {
    const k = EVENT_INSERT_CHUNKS.find((size) => size <= n - i)!;
    binds.length = 0;
    for (let j = i; j < i + k; j++) {
      const o = j * INSERT_ROW_FIELDS;
      pushInsertBinds(binds, rows, j, now, pullOf(rows[o] as string, rows[o + 14] as string | null));
    }
    seqMax ??= q.eventSeqMax.get()!.seq;
    const r = q.eventInsertChunk.get(k)!.run(...binds);
    const last = Number(r.lastInsertRowid);
    if (r.changes === k) {
      for (let j = 0; j < k; j++) seqs[i + j] = last - k + 1 + j;
    } else {
      // Each (tenant, id) of the chunk read back once: its first occurrence was inserted when the
      // row is newer than the statement; every other occurrence answers against the stored row.
      const stored = new Map<string, EventRow>();
      for (let j = i; j < i + k; j++) {
        const o = j * INSERT_ROW_FIELDS;
        const key = keyOf(rows[o] as string, rows[o + 1] as string);
        let row = stored.get(key);
        const first = row === undefined;
        if (row === undefined) {
          row = q.eventGet.get(rows[o], rows[o + 1]);
          if (!row) throw new Error(`sqlite: event ${rows[o]}/${rows[o + 1]} neither inserted nor found`);
          stored.set(key, row);
        }
        if (first && row.seq > seqMax) seqs[j] = row.seq;
        else
          others.push({
            index: j,
            result: { kind: row.request_hash === rows[o + 11] ? 'existing' : 'conflict', event: eventFromRow(row) },
          });
      }
    }
    if (r.changes > 0) seqMax = last;
    i += k;
  }
  return { seqs, others };
}

/** Whether each (tenant, destination name) is a registered pull destination: read once per pair per call. */
function pullLookup(q: Queries): (tenantId: string, name: string | null) => number {
  const known = new Map<string, number>();
  return (tenantId, name) => {
    if (name === null) return 0;
    const key = keyOf(tenantId, name);
    let pull = known.get(key);
    if (pull === undefined) {
      pull = q.destinationIsPull.get(tenantId, name)!.pull;
      known.set(key, pull);
    }
    return pull;
  };
}

/** The results of insertRows as the Store answers them: a created event's record is built from the event sent. */
export function insertResults(
  events: readonly S.NewEvent[],
  { seqs, others }: InsertRowsResult,
  now: number,
): S.EventInsertResult[] {
  const results = new Array<S.EventInsertResult>(events.length);
  for (const { index, result } of others) results[index] = result;
  for (let i = 0; i < events.length; i++)
    if (seqs[i] !== 0) results[i] = { kind: 'created', event: createdRecord(events[i], seqs[i], now) };
  return results;
}

/** insertRows over NewEvents, answered as the Store answers. */
export function insertMany(q: Queries, { events, now }: S.EventInsertManyParams): S.EventInsertResult[] {
  return insertResults(events, insertRows(q, encodeInsertRows(events), now), now);
}

/**
 * Claims each ref still claimable, in order: reads the row (the check), updates it by seq, appends
 * its transition, and returns it as the update left it, without reading it again.
 */
export function claim(
  q: Queries,
  { refs, now, owner, leaseUntil, fenceByShardOwner }: S.EventClaimParams,
): EventRecord[] {
  const detail = JSON.stringify({ owner });
  const out: EventRecord[] = [];
  for (const ref of refs) {
    const before = fenceByShardOwner
      ? q.eventClaimCheckFenced.get(ref.tenantId, ref.id, ref.version, owner)
      : q.eventClaimCheck.get(ref.tenantId, ref.id, ref.version);
    if (!before) continue;
    const [seq, , , , state, version, , dueAt] = before;
    if (q.eventClaim.run(owner, leaseUntil, now, seq, version).changes !== 1) {
      throw new Error(`sqlite: claim of ${ref.tenantId}/${ref.id} v${version} changed nothing after its check`);
    }
    const claimed = claimedEventFromTuple(before, owner, leaseUntil, now);
    q.transitionInsert.run(
      ref.tenantId,
      ref.id,
      claimed.version,
      now,
      'state',
      state,
      'executing',
      claimed.attempts,
      null,
      null,
      null,
      now - dueAt,
      detail,
    );
    out.push(claimed);
  }
  return out;
}

export function recordAttempts(q: Queries, { outcomes, now }: S.EventRecordAttemptsParams): boolean[] {
  const applied: boolean[] = new Array(outcomes.length);
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i];
    checkAttemptTarget(o.to);
    const current = q.eventRecordCheck.get(o.tenantId, o.id, o.version, o.owner);
    applied[i] = current !== undefined;
    if (!current) continue;
    const [seq, attempts] = current;
    const retryAt = o.to === 'awaiting_retry' ? (o.retryAt ?? now) : null;
    const status = o.status ?? null;
    const error = o.error ?? null;
    if (q.eventRecordAttempt.run(o.to, retryAt, status, error, now, seq, o.version).changes !== 1) {
      throw new Error(`sqlite: outcome of ${o.tenantId}/${o.id} v${o.version} changed nothing after its check`);
    }
    q.transitionInsert.run(
      o.tenantId,
      o.id,
      o.version + 1,
      now,
      'state',
      'executing',
      o.to,
      attempts,
      status,
      error,
      o.durationMs,
      null,
      retryAt === null ? null : JSON.stringify({ retryAt }),
    );
  }
  return applied;
}

export function rescue(q: Queries, p: S.EventRescueParams): S.DueRef[] {
  const candidates = q.eventRescueCandidates.all({
    leaseExpiredBefore: p.leaseExpiredBefore,
    notOwnedBy: p.notOwnedBy ?? null,
    heldBy: p.heldBy ?? null,
    limit: p.limit,
  });
  return rescueRows(q, candidates, p.now, (c) => (c.expired ? 'lease expired' : 'owner gone'));
}

/** The executing events of dead owners (see Store.eventRescueDead); the caller checked the lease. */
export function rescueDead(q: Queries, p: S.EventRescueDeadParams): S.DueRef[] {
  const candidates = q.eventRescueDeadCandidates.all({
    owners: JSON.stringify(p.owners),
    heartbeatBefore: p.now - p.nodeTtlMs,
    limit: p.limit,
  });
  return rescueRows(q, candidates, p.now, () => 'owner dead');
}

/** Makes each candidate still executing at its version awaiting_retry, due `now`, with its transition. */
function rescueRows(
  q: Queries,
  candidates: RescueCandidateRow[],
  now: number,
  reason: (c: RescueCandidateRow) => string,
): S.DueRef[] {
  const out: S.DueRef[] = [];
  for (const c of candidates) {
    const row = q.eventRescue.get(now, now, c.tenant_id, c.id, c.version);
    if (!row) continue;
    appendTransition(q, {
      tenantId: c.tenant_id,
      eventId: c.id,
      seq: row.version,
      at: now,
      kind: 'state',
      fromState: 'executing',
      toState: 'awaiting_retry',
      attempt: row.attempts,
      status: null,
      error: null,
      durationMs: null,
      latenessMs: null,
      detail: { reason: reason(c), owner: c.lease_owner },
    });
    out.push(dueRefFromRow(row));
  }
  return out;
}

/**
 * The shared frame of cancel, replay and update: not_found, then the version (a stale If-Match
 * wins over the state), then the state; `change` applies the write and its transition.
 */
function mutate(
  q: Queries,
  p: S.EventMutateParams,
  allowed: readonly EventState[],
  change: (current: EventRow) => EventRow,
  boundedByChanges = true,
): S.EventMutateResult {
  const current = q.eventGet.get(p.tenantId, p.id);
  if (!current) return { kind: 'not_found' };
  return mutateRefusal(current, p, allowed, boundedByChanges) ?? { kind: 'ok', event: eventFromRow(change(current)) };
}

/** The row a conditional UPDATE returned; in one transaction after the checks it cannot be missing. */
function mustChange(row: EventRow | undefined, what: string, current: EventRow): EventRow {
  if (!row)
    throw new Error(`sqlite: ${what} of ${current.tenant_id}/${current.id} v${current.version} changed nothing`);
  return row;
}

export function cancel(q: Queries, p: S.EventMutateParams): S.EventMutateResult {
  return mutate(
    q,
    p,
    CANCELABLE_STATES,
    (cur) => {
      const row = mustChange(
        q.eventCancel.get({
          now: p.now,
          tenantId: p.tenantId,
          id: p.id,
          version: cur.version,
          reason: p.reason ?? null,
        }),
        'cancel',
        cur,
      );
      appendTransition(q, {
        tenantId: p.tenantId,
        eventId: p.id,
        seq: row.version,
        at: p.now,
        kind: 'state',
        fromState: cur.state,
        toState: 'canceled',
        attempt: row.attempts,
        status: null,
        error: null,
        durationMs: null,
        latenessMs: null,
        detail: cancelDetail(p),
      });
      return row;
    },
    false,
  );
}

export function replay(q: Queries, p: S.EventMutateParams): S.EventMutateResult {
  return mutate(q, p, REPLAYABLE_STATES, (cur) => {
    const row = mustChange(
      q.eventReplay.get({ now: p.now, tenantId: p.tenantId, id: p.id, version: cur.version }),
      'replay',
      cur,
    );
    appendTransition(q, {
      tenantId: p.tenantId,
      eventId: p.id,
      seq: row.version,
      at: p.now,
      kind: 'replayed',
      fromState: cur.state,
      toState: 'scheduled',
      attempt: 0,
      status: null,
      error: null,
      durationMs: null,
      latenessMs: null,
      detail: operationDetail({ attemptsBefore: cur.attempts }, p.operation),
    });
    return row;
  });
}

/**
 * Edits a scheduled event. A patch that changes nothing (same values, same requestHash) returns
 * ok with the event untouched: no new version, no transition.
 */
export function update(q: Queries, p: S.EventMutateParams & { patch: S.EventPatch }): S.EventMutateResult {
  return mutate(q, p, EDITABLE_STATES, (cur) => {
    const edit = eventEdit(cur, p.patch);
    if (!edit) return cur;
    const { detail, ...columns } = edit;
    const row = mustChange(
      q.eventEdit.get({ ...columns, now: p.now, tenantId: p.tenantId, id: p.id, version: cur.version }),
      'update',
      cur,
    );
    appendTransition(q, {
      tenantId: p.tenantId,
      eventId: p.id,
      seq: row.version,
      at: p.now,
      kind: 'updated',
      fromState: 'scheduled',
      toState: 'scheduled',
      attempt: row.attempts,
      status: null,
      error: null,
      durationMs: null,
      latenessMs: null,
      detail: operationDetail(detail, p.operation),
    });
    return row;
  });
}

/**
 * One bulk step (Store.bulkJobStep), inside the caller's transaction: the lease check, each
 * change by the single-event write at the version read, then the job's progress. Null (and
 * nothing written) when `owner` does not hold the lease.
 */
export function bulkStep(q: Queries, b: BulkQueries, p: S.BulkJobStepParams): S.BulkJobStepResult | null {
  if (!b.bulkJobLeaseCheck.get({ tenantId: p.tenantId, id: p.id, owner: p.owner, now: p.now })) return null;
  const operation = { name: p.operation, id: p.id };
  const changed: EventRecord[] = [];
  for (const c of p.changes) {
    const base = { tenantId: p.tenantId, id: c.id, expectedVersion: c.version, now: p.now, operation };
    const r =
      c.kind === 'cancel'
        ? cancel(q, base)
        : c.kind === 'replay'
          ? replay(q, base)
          : update(q, { ...base, patch: c.patch });
    if (r.kind === 'ok' && r.event.version !== c.version) changed.push(r.event);
  }
  const row = b.bulkJobProgress.get({
    tenantId: p.tenantId,
    id: p.id,
    cursor: p.cursor,
    matched: p.matched,
    done: changed.length,
    skipped: p.skipped + (p.changes.length - changed.length),
    leaseUntil: p.leaseUntil,
    now: p.now,
    finished: p.finished ? 1 : 0,
  });
  if (!row) throw new Error(`sqlite: bulk job ${p.tenantId}/${p.id} vanished during its step`);
  return { changed, job: bulkJobFromRow(row) };
}

/** Index entries a pull claim of `max` events reads per type. */
export function pullExamine(max: number): number {
  return Math.max(S.PULL_EXAMINE_MIN, max * S.PULL_EXAMINE_FACTOR);
}

/**
 * A pull claim (Store.eventPullClaim), inside the caller's transaction: one bounded page per type
 * (or one for any type), merged in due order, each row claimed by seq at the version read.
 */
export function pullClaim(q: Queries, p: S.EventPullClaimParams): EventRecord[] {
  const page = { tenantId: p.tenantId, queue: p.queue, now: p.now, examine: pullExamine(p.max), max: p.max };
  let rows: EventTuple[];
  if (p.types === null) rows = q.pullClaimPage.all(page);
  else {
    rows = [];
    for (const type of new Set(p.types)) rows.push(...q.pullClaimPageTyped.all({ ...page, type }));
    // Due order (dueAt, then id), as one page would have it.
    rows.sort((a, b) => a[7] - b[7] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
    rows.length = Math.min(rows.length, p.max);
  }
  const detail = JSON.stringify({ pull: 'claim', visibleUntil: p.leaseUntil });
  const out: EventRecord[] = [];
  for (const row of rows) {
    const [seq, , , , state, version, , dueAt] = row;
    if (q.pullClaim.run(p.leaseUntil, p.receipt, p.now, seq, version).changes !== 1) continue;
    const claimed = claimedEventFromTuple(row, S.PULL_LEASE_OWNER, p.leaseUntil, p.now);
    q.transitionInsert.run(
      p.tenantId,
      claimed.id,
      claimed.version,
      p.now,
      'state',
      state,
      'executing',
      claimed.attempts,
      null,
      null,
      null,
      p.now - dueAt,
      detail,
    );
    out.push(claimed);
  }
  return out;
}

/** Ack, nack or expiry of a pull claim (Store.eventPullSettle), inside the caller's transaction. */
export function pullSettle(q: Queries, p: S.EventPullSettleParams): EventRecord | null {
  checkAttemptTarget(p.to);
  const held = q.pullHeldCheck.get(p.tenantId, p.id, p.receipt, p.attempts);
  if (!held) return null;
  const retryAt = p.to === 'awaiting_retry' ? (p.retryAt ?? p.now) : null;
  const error = p.error ?? null;
  if (q.pullSettle.run(p.to, retryAt, error, p.now, held[0], held[5]).changes !== 1)
    throw new Error(`sqlite: pull ${p.action} of ${p.tenantId}/${p.id} changed nothing after its check`);
  const after = settledEventFromTuple(held, p.to, retryAt, error, p.now);
  appendTransition(q, {
    tenantId: p.tenantId,
    eventId: p.id,
    seq: after.version,
    at: p.now,
    kind: 'state',
    fromState: 'executing',
    toState: p.to,
    attempt: after.attempts,
    status: null,
    error,
    durationMs: null,
    latenessMs: null,
    detail: retryAt === null ? { pull: p.action } : { pull: p.action, retryAt },
  });
  return after;
}

/** Extends a pull claim's visibility timeout (Store.eventPullExtend), inside the caller's transaction. */
export function pullExtend(q: Queries, p: S.EventPullExtendParams): EventRecord | null {
  const held = q.pullHeldCheck.get(p.tenantId, p.id, p.receipt, null);
  if (!held) return null;
  const [seq, , , , , version] = held;
  const row = q.pullExtend.get(p.leaseUntil, p.now, seq, version);
  if (!row) throw new Error(`sqlite: pull extend of ${p.tenantId}/${p.id} changed nothing after its check`);
  appendTransition(q, {
    tenantId: p.tenantId,
    eventId: p.id,
    seq: row.version,
    at: p.now,
    kind: 'state',
    fromState: 'executing',
    toState: 'executing',
    attempt: row.attempts,
    status: null,
    error: null,
    durationMs: null,
    latenessMs: null,
    detail: { pull: 'extend', visibleUntil: row.lease_until },
  });
  return eventFromRow(row);
}
