/**
 * The event methods of the PostgreSQL store on Citus (distribute.ts). What differs from plain
 * PostgreSQL (../event-store.ts), and why:
 *
 * - Every state change runs on one shard, in one transaction that commits on one worker: the
 *   pinned statement (queries.ts here) and its transitions, inserted by a second statement on the
 *   same shard (transitionsInsert). Claims and outcomes, which every fired event runs, are split
 *   by Citus shard (placement.ts), each part one call of a distributed function that its worker
 *   runs (functions.ts).
 * - An event found by (tenant, id) is located first (event_locator: the shard the id alone names
 *   holds the event's own shard), then read or changed on its shard.
 * - An insert writes the locator rows first, in the same transaction as the events: the locator's
 *   key (shard of the id, tenant, id) is what keeps an id unique within its tenant here, since
 *   every unique key of events carries the event's shard.
 * - A due list runs plain PostgreSQL's once per Citus shard and merges the pages here.
 *
 * Methods not overridden run the plain statements, which Citus runs across shards (counts, lists,
 * forecasts, retention) or which touch reference tables only.
 */
import { CANCELABLE_STATES, EDITABLE_STATES, type EventRecord, REPLAYABLE_STATES } from '../../../core/event.ts';
import type { EventState, TransitionRecord } from '../../../core/event.ts';
import { SHARD_COUNT_DEFAULT, shardOf } from '../../../core/shard.ts';
import { SQL_STATE_LISTS } from '../../core/state-lists.ts';
import { checkDeleteTerminal, checkLimit, checkListDue } from '../../core/bounds.ts';
import { checkAttemptTarget, eventEdit, keyOf, mutateRefusal } from '../../core/event-writes.ts';
import {
  dueRefFromRow,
  eventFromRow,
  transitionFromRow,
  type DueRefRow,
  type EventRow,
  type TransitionRow,
} from '../../core/rows.ts';
import type * as S from '../../store.ts';
import { inTransaction, rethrowUnavailable, type Queryable } from '../db.ts';
import type { PostgresDatabase } from '../database.ts';
import { PostgresEvents } from '../event-store.ts';
import {
  cancelValues,
  editValues,
  insertMany,
  type InsertOps,
  outcomeRounds,
  recordInRounds,
  recordValues,
  replayValues,
} from '../event-writes.ts';
import { DUE_ROUNDS_MAX, type DueShardsStatement, listDue, perShardLimit, SKIP_SCAN_FACTOR } from '../due-list.ts';
import { TX } from '../queries.ts';
import { CITUS_SQL, type CitusQueryName } from './queries.ts';
import { type CitusWorkers, routed, ShardAway, type ShardHome } from './direct.ts';
import { Placement } from './placement.ts';
import { CLAIM_FUNCTION, RECORD_FUNCTION } from './functions.ts';
import type pg from 'pg';

/**
 * Connections of the pool that batch inserts use on Citus, and the connections to each worker each
 * of them keeps between transactions. An insert batch spans every shard: Citus writes it through
 * up to 16 connections per worker, and opening those anew for each batch (Citus keeps one per
 * worker by default) cost about 1 s per 1,000 events where keeping them costs 0.2 s. The budget
 * per node is CITUS_INSERT_POOL_SIZE × CITUS_INSERT_CACHED_CONNECTIONS connections on each worker
 * (docs/citus.md, Connections).
 */
export const CITUS_INSERT_POOL_SIZE = 2;
export const CITUS_INSERT_CACHED_CONNECTIONS = 16;

/** A mutation re-reads and retries when the row changed between its read and its write; bounded (as event-writes.ts). */
const MUTATE_ATTEMPTS_MAX = 5;
/** Shards worked on at once by one batch (each holds a connection of the pool for its transaction). */
const SHARDS_IN_FLIGHT = 4;

/** Runs Citus statement `name` (a named prepared statement, as db.ts run()). */
export function runCitus<R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Queryable,
  name: CitusQueryName,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return db.query<R>({ name: `belfry_citus_${name}`, text: CITUS_SQL[name], values }).catch(rethrowUnavailable);
}

/**
 * The locator's shard of (tenant, id): the shard the id alone names, whatever the store's shard
 * count (an event without a group lives there too when the count is the default).
 */
export function locatorShard(tenantId: string, id: string): number {
  return shardOf(tenantId, id, SHARD_COUNT_DEFAULT);
}

/** A transition as transitionsInsert writes it. */
export interface TransitionInsert {
  shard: number;
  tenantId: string;
  eventId: string;
  seq: number;
  at: number;
  kind: string;
  fromState: string | null;
  toState: string;
  attempt: number;
  status?: number | null;
  error?: string | null;
  durationMs?: number | null;
  latenessMs?: number | null;
  detail?: string | null;
}

/** The types of transitionsInsert's columns, in order (a NULL parameter has no type of its own). */
const TRANSITION_TYPES = [
  'int',
  'text',
  'text',
  'int',
  'bigint',
  'text',
  'text',
  'text',
  'int',
  'int',
  'text',
  'bigint',
  'bigint',
  'text',
];

/** Appends `rows` (all of one Citus shard) in one multi-row INSERT, which Citus sends to that shard alone. */
export async function transitionsInsert(db: Queryable, rows: TransitionInsert[]): Promise<void> {
  if (rows.length === 0) return;
  const values: unknown[] = [];
  const tuples = rows.map((t) => {
    const at = values.length;
    values.push(
      t.shard,
      t.tenantId,
      t.eventId,
      t.seq,
      t.at,
      t.kind,
      t.fromState,
      t.toState,
      t.attempt,
      t.status ?? null,
      t.error ?? null,
      t.durationMs ?? null,
      t.latenessMs ?? null,
      t.detail ?? null,
    );
    return `(${TRANSITION_TYPES.map((type, k) => `$${at + k + 1}::${type}`).join(', ')})`;
  });
  await db
    .query(
      `INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, status, error,
         duration_ms, lateness_ms, detail) VALUES ${tuples.join(', ')}`,
      values,
    )
    .catch(rethrowUnavailable);
}

/** The indexes of `shards` by shard, those that are null (no such event) left out. */
export function groupByShard(shards: readonly (number | null)[]): Map<number, number[]> {
  const out = new Map<number, number[]>();
  shards.forEach((shard, i) => {
    if (shard === null) return;
    const list = out.get(shard);
    if (list) list.push(i);
    else out.set(shard, [i]);
  });
  return out;
}

/**
 * `parts` split for one round trip per worker (CitusWorkers.claimMany, recordMany, queueMany):
 * those that `together` accepts and whose home can be used now, by worker, where a worker holds
 * at least `least` of them; the rest `apart`, in their order.
 */
function byWorker<P extends { home: ShardHome | null }>(
  parts: readonly P[],
  usable: (home: ShardHome) => boolean,
  together: (part: P) => boolean,
  least: number,
): { onWorkers: (P & { home: ShardHome })[][]; apart: P[] } {
  const workers = new Map<string, (P & { home: ShardHome })[]>();
  const apart: P[] = [];
  for (const part of parts) {
    const home = part.home;
    if (home === null || !usable(home) || !together(part)) apart.push(part);
    else {
      const k = `${home.host}:${home.port}`;
      workers.set(k, [...(workers.get(k) ?? []), { ...part, home }]);
    }
  }
  const onWorkers: (P & { home: ShardHome })[][] = [];
  for (const onOne of workers.values()) {
    if (onOne.length >= least) onWorkers.push(onOne);
    else apart.push(...onOne);
  }
  return { onWorkers, apart };
}

/** Runs `work` for every item, at most SHARDS_IN_FLIGHT at once; answers the results in the items' order. */
async function inParallel<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const k = next++;
      out[k] = await work(items[k]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SHARDS_IN_FLIGHT, items.length) }, worker));
  return out;
}

/** Runs `work` for every entry of `groups` (shard → indexes), at most SHARDS_IN_FLIGHT at once. */
function eachShard<R>(
  groups: Map<number, number[]>,
  work: (shard: number, indexes: number[]) => Promise<R>,
): Promise<R[]> {
  return inParallel([...groups], ([shard, indexes]) => work(shard, indexes));
}

/** The shard of event (tenant, id), or null when no such event exists. */
export async function locate(db: Queryable, tenantId: string, id: string): Promise<number | null> {
  const res = await runCitus<{ event_shard: number }>(db, 'locatorGet', [locatorShard(tenantId, id), tenantId, id]);
  return res.rows[0]?.event_shard ?? null;
}

/** The shards of the events `keys` that exist, by keyOf(tenant, id). */
export async function locateMany(
  db: Queryable,
  keys: readonly { tenantId: string; id: string }[],
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (keys.length === 0) return out;
  const res = await runCitus<{ tenant_id: string; id: string; event_shard: number }>(db, 'locatorGetMany', [
    [...new Set(keys.map((k) => locatorShard(k.tenantId, k.id)))],
    [...new Set(keys.map((k) => k.tenantId))],
    [...new Set(keys.map((k) => k.id))],
  ]);
  const wanted = new Set(keys.map((k) => keyOf(k.tenantId, k.id)));
  for (const r of res.rows) {
    const key = keyOf(r.tenant_id, r.id);
    if (wanted.has(key)) out.set(key, r.event_shard);
  }
  return out;
}

/** The stored rows of the events `keys` that exist (any order): located, then read shard by shard. */
export async function readMany(db: Queryable, keys: readonly { tenantId: string; id: string }[]): Promise<EventRow[]> {
  const located = await locateMany(db, keys);
  const found = keys.filter((k) => located.has(keyOf(k.tenantId, k.id)));
  const wanted = new Set(found.map((k) => keyOf(k.tenantId, k.id)));
  const groups = groupByShard(found.map((k) => located.get(keyOf(k.tenantId, k.id))!));
  const pages = await eachShard(groups, async (shard, indexes) => {
    const res = await runCitus<EventRow>(db, 'eventGetMany', [
      [shard],
      [...new Set(indexes.map((i) => found[i].tenantId))],
      [...new Set(indexes.map((i) => found[i].id))],
    ]);
    return res.rows.filter((r) => wanted.has(keyOf(r.tenant_id, r.id)));
  });
  return pages.flat();
}

/** Inserts on Citus: the locator rows of the batch's first occurrences, then the events whose locator row is new. */
export const CITUS_INSERT: InsertOps = {
  async insert(db, values, events) {
    const first = new Map<string, number>();
    events.forEach((e, i) => {
      const key = keyOf(e.tenantId, e.id);
      if (!first.has(key)) first.set(key, i);
    });
    const firsts = [...first.values()];
    const located = await runCitus<{ tenant_id: string; id: string }>(db, 'locatorInsert', [
      firsts.map((i) => locatorShard(events[i].tenantId, events[i].id)),
      firsts.map((i) => events[i].tenantId),
      firsts.map((i) => events[i].id),
      firsts.map((i) => events[i].shard),
    ]);
    if (located.rows.length === 0) return [];
    const fresh = new Set(located.rows.map((r) => keyOf(r.tenant_id, r.id)));
    const take = firsts.filter((i) => fresh.has(keyOf(events[i].tenantId, events[i].id)));
    // The statement's values are parallel arrays (one element per event) and `now` ($13): keep the taken elements.
    const picked = values.map((v, k) => (k === 12 ? v : take.map((i) => (v as unknown[])[i])));
    const named = take.map((i) => {
      const d = events[i].destination;
      return 'name' in d ? d.name : null;
    });
    const pulls = await runCitus<{ tenant_id: string; name: string }>(db, 'pullDestinations', [
      [...new Set(take.map((i) => events[i].tenantId))],
      [...new Set(named.filter((n): n is string => n !== null))],
    ]);
    const pull = new Set(pulls.rows.map((r) => keyOf(r.tenant_id, r.name)));
    picked.push(take.map((i, k) => named[k] !== null && pull.has(keyOf(events[i].tenantId, named[k]!))));
    return (await runCitus<{ tenant_id: string; id: string; seq: number }>(db, 'eventInsertMany', picked)).rows;
  },
  readStored: (db, events) => readMany(db, events),
};

/** The calls of the functions of functions.ts: each answers its rows as json. */
const FUNCTION_CALLS = {
  claim: `SELECT ${CLAIM_FUNCTION}($1::text[], $2::text[], $3::int[], $4::text, $5::bigint, $6::bigint, $7::text,
    $8::boolean, $9::int[], $10::int, $11::boolean) AS r`,
  record: `SELECT ${RECORD_FUNCTION}($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::bigint[],
    $7::int[], $8::text[], $9::bigint[], $10::bigint, $11::int[], $12::int) AS r`,
};

/**
 * Calls function `name` outside a transaction block (so that Citus delegates it to the worker of
 * its p_shard) and answers its rows.
 */
async function callFunction<R>(pool: pg.Pool, name: keyof typeof FUNCTION_CALLS, values: unknown[]): Promise<R[]> {
  const res = await pool
    .query<{ r: R }>({ name: `belfry_citus_call_${name}`, text: FUNCTION_CALLS[name], values })
    .catch(rethrowUnavailable);
  return res.rows.map((row) => row.r);
}

/** The statement of a due list over the Belfry shards of one Citus shard (due-list.ts). */
const dueInGroup: DueShardsStatement = (db, bind) => runCitus(db, 'eventListDueGroup', bind);

/** Due order: (dueAt, tenantId, id). */
function byDue(a: S.DueRef, b: S.DueRef): number {
  if (a.dueAt !== b.dueAt) return a.dueAt - b.dueAt;
  if (a.tenantId !== b.tenantId) return a.tenantId < b.tenantId ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** A row rescued by eventRescue / eventRescueDead on Citus, with the reason its transition names. */
export type RescuedRow = DueRefRow & {
  attempts: number;
  expired?: boolean;
  old_owner: string | null;
  old_lease_until: number;
  reason: string;
};

/**
 * Runs `rescueIn` on each of `shards` (those that may hold an event to rescue: none, as a rule),
 * one transaction per shard, with the rescued rows' transitions, until `limit` rows are rescued;
 * answers them in old-lease order.
 */
export async function rescueByShard(
  pool: pg.Pool,
  shards: readonly number[],
  limit: number,
  now: number,
  rescueIn: (client: Queryable, shard: number, limit: number) => Promise<RescuedRow[]>,
): Promise<S.DueRef[]> {
  const out: RescuedRow[] = [];
  for (const shard of shards) {
    if (out.length >= limit) break;
    const rows = await inTransaction(pool, TX.begin, async (client) => {
      const rescued = await rescueIn(client, shard, limit - out.length);
      await transitionsInsert(
        client,
        rescued.map((r) => ({
          shard,
          tenantId: r.tenant_id,
          eventId: r.id,
          seq: r.version,
          at: now,
          kind: 'state',
          fromState: 'executing',
          toState: 'awaiting_retry',
          attempt: r.attempts,
          detail: JSON.stringify({ reason: r.reason, owner: r.old_owner }),
        })),
      );
      return rescued;
    });
    out.push(...rows);
  }
  out.sort((a, b) =>
    a.old_lease_until !== b.old_lease_until
      ? a.old_lease_until - b.old_lease_until
      : a.tenant_id !== b.tenant_id
        ? a.tenant_id < b.tenant_id
          ? -1
          : 1
        : a.id < b.id
          ? -1
          : 1,
  );
  return out.map(dueRefFromRow);
}

/** A conditional change of one event: the row after it (no change: undefined) and its transition (none: null). */
export type Change =
  | {
      row: EventRow;
      transition: { kind: string; fromState: string; toState: string; detail: string | null; attempt?: number } | null;
    }
  | undefined;

/** Appends `change`'s transition (in the caller's transaction, on the event's shard); answers its row. */
export async function traced(
  client: Queryable,
  shard: number,
  p: { tenantId: string; id: string; now: number },
  change: Change,
): Promise<EventRow | undefined> {
  if (change?.transition)
    await transitionsInsert(client, [
      {
        shard,
        tenantId: p.tenantId,
        eventId: p.id,
        seq: change.row.version,
        at: p.now,
        attempt: change.transition.attempt ?? change.row.attempts,
        ...change.transition,
      },
    ]);
  return change?.row;
}

/** The conditional writes of cancel, replay and update at the version of `cur`, on `shard` (as event-writes.ts). */
export async function cancelAt(
  client: Queryable,
  shard: number,
  p: S.EventMutateParams,
  cur: EventRow,
): Promise<Change> {
  const values = cancelValues(p, cur);
  const row = (await runCitus<EventRow>(client, 'eventCancel', [...values, shard])).rows[0];
  // The transition's detail is the statement's $6.
  const detail = values[5] as string | null;
  return row && { row, transition: { kind: 'state', fromState: cur.state, toState: 'canceled', detail } };
}

export async function replayAt(
  client: Queryable,
  shard: number,
  p: S.EventMutateParams,
  cur: EventRow,
): Promise<Change> {
  const values = replayValues(p, cur);
  const row = (await runCitus<EventRow>(client, 'eventReplay', [...values, shard])).rows[0];
  const detail = values[5] as string; // $6
  return (
    row && { row, transition: { kind: 'replayed', fromState: cur.state, toState: 'scheduled', detail, attempt: 0 } }
  );
}

/** A patch that changes nothing answers `cur` itself, with no transition. */
export async function updateAt(
  client: Queryable,
  shard: number,
  p: S.EventMutateParams & { patch: S.EventPatch },
  cur: EventRow,
): Promise<Change> {
  const e = eventEdit(cur, p.patch);
  if (!e) return { row: cur, transition: null };
  const values = editValues(p, cur, e);
  const row = (await runCitus<EventRow>(client, 'eventEdit', [...values, shard])).rows[0];
  const detail = values[11] as string; // $12
  return row && { row, transition: { kind: 'updated', fromState: 'scheduled', toState: 'scheduled', detail } };
}

type ClaimedRow = EventRow & { from_state: EventState; ord: number };

export class CitusEvents extends PostgresEvents {
  private readonly placement = new Placement(this.pool);
  private readonly workers: CitusWorkers | null;

  constructor(database: PostgresDatabase) {
    super(database);
    this.workers = database.citusWorkers;
  }

  /**
   * Reads where each of the store's `shardCount` shards lives and warms the workers' pools for
   * them (direct.ts CitusWorkers.warm): before a node says it is ready, not while events are due.
   * Without the direct route, claims go through the coordinator: its claims' pool is warmed.
   */
  override async warmUp(shardCount: number): Promise<void> {
    if (!this.workers) return super.warmUp(shardCount);
    const groups = await this.placement.group(Array.from({ length: shardCount }, (_, s) => s));
    await this.workers.warm(groups.map((g) => g.home).filter((h): h is ShardHome => h !== null));
  }

  override async eventInsertMany(params: S.EventInsertManyParams): Promise<S.EventInsertResult[]> {
    if (params.events.length === 0) return [];
    const relaxed = await this.durability.allRelaxed(
      this.pool,
      params.events.map((e) => e.tenantId),
    );
    return inTransaction(this.insertPool, relaxed ? TX.beginRelaxed : TX.begin, (client) =>
      insertMany(client, params, CITUS_INSERT),
    );
  }

  override async eventGet(params: { tenantId: string; id: string }): Promise<EventRecord | null> {
    const shard = await locate(this.pool, params.tenantId, params.id);
    if (shard === null) return null;
    const row = (await runCitus<EventRow>(this.pool, 'eventGet', [params.tenantId, params.id, shard])).rows[0];
    return row ? eventFromRow(row) : null;
  }

  /**
   * The refs of each Citus shard in one transaction on its worker: the group locks, the claim, its
   * transitions. Sent to the worker itself (direct.ts), else through the coordinator as one call
   * of the claim function (functions.ts).
   */
  override async eventClaim(p: S.EventClaimParams): Promise<EventRecord[]> {
    if (p.refs.length === 0) return [];
    const shardOfRef = await this.refShards(p.refs);
    const groups = await this.placement.group(shardOfRef);
    const detail = JSON.stringify({ owner: p.owner });
    const partOf = ({ shards, indexes, home }: (typeof groups)[number]) => {
      const refs = indexes.map((i) => p.refs[i]);
      const values = [
        refs.map((r) => r.tenantId),
        refs.map((r) => r.id),
        refs.map((r) => r.version),
        p.owner,
        p.leaseUntil,
        p.now,
        detail,
        p.fenceByShardOwner === true,
        shards,
      ];
      return { shards, indexes, home, values, lock: refs.some((r) => r.group !== null) };
    };
    type Part = ReturnType<typeof partOf>;
    const viaCoordinator = (part: Part) =>
      callFunction<ClaimedRow>(this.claimPool, 'claim', [...part.values, part.shards[0], part.lock]);
    const claimOne = (part: Part) =>
      this.onWorker(
        part.home,
        (workers, at) =>
          workers.claim<ClaimedRow>(
            at,
            part.values,
            part.indexes.map((i) => shardOfRef[i]!),
            part.lock,
          ),
        () => viaCoordinator(part),
      );
    // The parts without group locks on one worker go there in one round trip (claimMany); the
    // others one by one, as before.
    const { onWorkers: together, apart: single } = byWorker(
      groups.map(partOf),
      (home) => this.workers?.usable(home) === true,
      (part) => !part.lock,
      2,
    );
    const answered: { part: Part; rows: ClaimedRow[] }[] = [];
    const onWorkers = together.map(async (onOne) => {
      const rows = await this.onWorkerOrElse(
        onOne,
        (parts) =>
          this.workers!.claimMany<ClaimedRow>(
            parts.map((part) => ({
              home: part.home,
              values: part.values,
              itemShards: part.indexes.map((i) => shardOfRef[i]!),
            })),
          ),
        viaCoordinator,
      );
      onOne.forEach((part, k) => answered.push({ part, rows: rows[k] }));
    });
    const singles = inParallel(single, async (part) => answered.push({ part, rows: await claimOne(part) }));
    await Promise.all([...onWorkers, singles]);
    return answered
      .flatMap(({ part, rows }) => rows.map((r) => ({ at: part.indexes[Number(r.ord) - 1], event: eventFromRow(r) })))
      .sort((a, b) => a.at - b.at)
      .map((x) => x.event);
  }

  override async eventRecordAttempts({ outcomes, now }: S.EventRecordAttemptsParams): Promise<boolean[]> {
    if (outcomes.length === 0) return [];
    for (const o of outcomes) checkAttemptTarget(o.to);
    const applied = new Array<boolean>(outcomes.length).fill(false);
    const shardOf = await this.refShards(outcomes);
    const groups = await this.placement.group(shardOf);
    // As on plain PostgreSQL: of several outcomes for one event the first that matches applies;
    // each round (one call of the outcome function, functions.ts: a transaction on the worker)
    // names an event once. A Citus shard whose outcomes are one round (each event named once: the
    // usual case) goes with the others of its worker in one round trip (recordMany).
    const { onWorkers, apart: inRounds } = byWorker(
      groups,
      (home) => this.workers?.usable(home) === true,
      (g) => outcomeRounds(outcomes, g.indexes).length === 1,
      2,
    );
    const mark = (indexes: number[], rows: { ord: number }[]) => {
      for (const r of rows) applied[indexes[Number(r.ord) - 1]] = true;
    };
    const together = onWorkers.map(async (onOne) => {
      const values = new Map(onOne.map((g) => [g, [...recordValues(outcomes, g.indexes, now), g.shards]]));
      const rows = await this.onWorkerOrElse(
        onOne,
        (parts) =>
          this.workers!.recordMany(
            parts.map((g) => ({ home: g.home, values: values.get(g)!, itemShards: g.indexes.map((i) => shardOf[i]!) })),
          ),
        (g) => callFunction<{ ord: number }>(this.pool, 'record', [...values.get(g)!, g.shards[0]]),
      );
      onOne.forEach((g, k) => mark(g.indexes, rows[k]));
    });
    const separately = inParallel(inRounds, ({ shards, indexes, home }) =>
      recordInRounds(outcomes, outcomeRounds(outcomes, indexes), applied, (round) =>
        this.recordRound(outcomes, round, now, { shards, home, shardOf }, applied),
      ),
    );
    await Promise.all([...together, separately]);
    return applied;
  }

  private async recordRound(
    outcomes: S.AttemptOutcome[],
    indexes: number[],
    now: number,
    /** The Belfry shards of the round's Citus shard, where it is, and each outcome's Belfry shard (by index in `outcomes`). */
    group: { shards: number[]; home: ShardHome | null; shardOf: (number | null)[] },
    applied: boolean[],
  ): Promise<void> {
    if (indexes.length === 0) return;
    const { shards, home, shardOf } = group;
    const values = [...recordValues(outcomes, indexes, now), shards];
    const rows = await this.onWorker(
      home,
      (workers, at) =>
        workers.record(
          at,
          values,
          indexes.map((i) => shardOf[i]!),
        ),
      () => callFunction<{ ord: number }>(this.pool, 'record', [...values, shards[0]]),
    );
    for (const r of rows) applied[indexes[Number(r.ord) - 1]] = true;
  }

  /**
   * The parts of one worker (`onOne`) through `many`, in one round trip there; those it did not do
   * there (null in its answer, or every part when it could not try: ShardAway) through
   * `elsewhere`, after the map is forgotten. A part that did happen is never sent again (a claim
   * sent again claims nothing, and its event would wait, claimed, for its lease to end). Answers
   * each part's result, in `onOne`'s order.
   */
  private async onWorkerOrElse<P, R>(
    onOne: readonly P[],
    many: (parts: readonly P[]) => Promise<(R | null)[]>,
    elsewhere: (part: P) => Promise<R>,
  ): Promise<R[]> {
    let answers: (R | null)[];
    try {
      answers = await many(onOne);
    } catch (err) {
      if (!(err instanceof ShardAway)) throw err;
      answers = onOne.map(() => null);
    }
    const away = onOne.filter((_, k) => answers[k] === null);
    if (away.length > 0) this.placement.forget();
    const again = await inParallel(away, elsewhere);
    return onOne.map((part, k) => answers[k] ?? again[away.indexOf(part)]);
  }

  /** As routed() (direct.ts), with this part's workers and map. */
  private onWorker<R>(
    home: ShardHome | null,
    direct: (workers: CitusWorkers, home: ShardHome) => Promise<R>,
    viaCoordinator: () => Promise<R>,
  ): Promise<R> {
    return routed(this.workers, this.placement, home, direct, viaCoordinator);
  }

  /** The shard of each ref: its own when it carries one, else located (null: no such event). */
  private async refShards(
    refs: readonly { tenantId: string; id: string; shard?: number }[],
  ): Promise<(number | null)[]> {
    const unknown = refs.filter((r) => r.shard === undefined);
    const located = await locateMany(this.pool, unknown);
    return refs.map((r) => r.shard ?? located.get(keyOf(r.tenantId, r.id)) ?? null);
  }

  override eventCancel(p: S.EventMutateParams): Promise<S.EventMutateResult> {
    return this.mutate(p, CANCELABLE_STATES, (client, shard, cur) => cancelAt(client, shard, p, cur), false);
  }

  override eventReplay(p: S.EventMutateParams): Promise<S.EventMutateResult> {
    return this.mutate(p, REPLAYABLE_STATES, (client, shard, cur) => replayAt(client, shard, p, cur));
  }

  override eventUpdate(p: S.EventMutateParams & { patch: S.EventPatch }): Promise<S.EventMutateResult> {
    return this.mutate(p, EDITABLE_STATES, (client, shard, cur) => updateAt(client, shard, p, cur));
  }

  /**
   * The frame of cancel, replay and update (as event-writes.ts mutate): located once, then read,
   * refused or changed at the version read, re-read when another writer moved the row on. Each
   * change and its transition are one transaction on the event's shard.
   */
  private async mutate(
    p: S.EventMutateParams,
    allowed: readonly EventState[],
    change: (client: Queryable, shard: number, cur: EventRow) => Promise<Change>,
    boundedByChanges = true,
  ): Promise<S.EventMutateResult> {
    const shard = await locate(this.pool, p.tenantId, p.id);
    if (shard === null) return { kind: 'not_found' };
    for (let attempt = 0; attempt < MUTATE_ATTEMPTS_MAX; attempt++) {
      const current = (await runCitus<EventRow>(this.pool, 'eventGet', [p.tenantId, p.id, shard])).rows[0];
      if (!current) return { kind: 'not_found' };
      const refusal = mutateRefusal(current, p, allowed, boundedByChanges);
      if (refusal) return refusal;
      const changed = await inTransaction(this.pool, TX.begin, async (client) =>
        traced(client, shard, p, await change(client, shard, current)),
      );
      if (changed) return { kind: 'ok', event: eventFromRow(changed) };
    }
    throw new Error(
      `postgres: event ${p.tenantId}/${p.id} kept changing; gave up after ${MUTATE_ATTEMPTS_MAX} attempts`,
    );
  }

  /** On the group's shard when the caller names it (a member's), else over every shard (the plain statement). */
  override async eventGroupHead(params: S.EventGroupHeadParams): Promise<S.DueRef | null> {
    if (params.shard === undefined) return super.eventGroupHead(params);
    const row = (
      await runCitus<DueRefRow & { state: EventState; pull: boolean }>(this.pool, 'eventGroupFirst', [
        params.tenantId,
        params.group,
        params.shard,
      ])
    ).rows[0];
    // A pull head is claimed by consumers, never fired by the scheduler.
    if (!row || row.state === 'executing' || row.pull) return null;
    return dueRefFromRow(row);
  }

  /**
   * Shard by shard, over the shards with an executing event, each one transaction (the rescue and
   * its transitions), until `limit` events are rescued; the answer is in old-lease order.
   */
  override async eventRescue(p: S.EventRescueParams): Promise<S.DueRef[]> {
    checkLimit(p.limit, 'eventRescue');
    const shards = await runCitus<{ shard: number }>(this.pool, 'shardsToRescue', [
      p.leaseExpiredBefore,
      p.notOwnedBy ?? null,
      p.heldBy ?? null,
    ]);
    const toRescue = shards.rows.map((r) => r.shard);
    return rescueByShard(this.pool, toRescue, p.limit, p.now, async (client, shard, limit) =>
      (
        await runCitus<RescuedRow>(client, 'eventRescue', [
          p.leaseExpiredBefore,
          p.notOwnedBy ?? null,
          limit,
          p.now,
          p.heldBy ?? null,
          shard,
        ])
      ).rows.map((r) => ({ ...r, reason: r.expired ? 'lease expired' : 'owner gone' })),
    );
  }

  /**
   * The $limit oldest candidates are found over every shard (a read, no lock), then each of their
   * shards deletes its own (the same statement as plain PostgreSQL, on that shard) with the
   * locator rows of what it deleted.
   */
  override async eventDeleteTerminal(params: S.EventDeleteTerminalParams): Promise<S.EventDeleteTerminalResult> {
    checkDeleteTerminal(params);
    const candidates = await runCitus<{ shard: number }>(this.pool, 'deleteTerminalShards', [
      params.tenantId,
      params.state,
      params.finishedBefore,
      params.limit,
    ]);
    const perShard = new Map<number, number>();
    for (const r of candidates.rows) perShard.set(r.shard, (perShard.get(r.shard) ?? 0) + 1);
    let events = 0;
    let transitions = 0;
    for (const [shard, limit] of perShard) {
      await inTransaction(this.pool, TX.begin, async (client) => {
        const res = await runCitus<{ events: number; transitions: number; ids: string[] }>(
          client,
          'eventDeleteTerminal',
          [params.tenantId, params.state, params.finishedBefore, limit, shard],
        );
        const { ids } = res.rows[0];
        events += res.rows[0].events;
        transitions += res.rows[0].transitions;
        if (ids.length > 0)
          await runCitus(client, 'locatorDelete', [
            [...new Set(ids.map((id) => locatorShard(params.tenantId, id)))],
            params.tenantId,
            ids,
          ]);
      });
    }
    return { events, transitions };
  }

  override async transitionList(params: S.TransitionListParams): Promise<TransitionRecord[]> {
    checkLimit(params.limit, 'transitionList');
    const shard = await locate(this.pool, params.tenantId, params.eventId);
    if (shard === null) return [];
    const res = await runCitus<TransitionRow>(this.pool, 'transitionList', [
      params.tenantId,
      params.eventId,
      params.afterSeq ?? 0,
      params.limit,
      shard,
    ]);
    return res.rows.map(transitionFromRow);
  }

  /**
   * Each shard's page on its own (one pinned scan), merged here: the first `limit` rows overall
   * after the cursor. Without a shard list, the shards that hold a fireable row (one query over
   * every shard). With skip, and for one queue, as below.
   */
  override async eventListDue(params: S.EventListDueParams): Promise<S.DueRef[]> {
    checkListDue(params);
    if (params.queue) return this.listDueQueue(params, params.queue);
    const shards =
      params.shards === null
        ? (
            await this.pool.query<{ shard: number }>(
              `SELECT DISTINCT shard FROM events WHERE state IN ${SQL_STATE_LISTS.FIREABLE} AND NOT pull`,
            )
          ).rows.map((r) => r.shard)
        : [...new Set(params.shards)];
    if (shards.length === 0) return [];
    if (!params.skip?.length) return this.listDueGroups(params, shards);
    return this.listDueGroupsSkip(params, params.skip, shards);
  }

  /**
   * A due list with skip: for each Citus shard, plain PostgreSQL's one-statement due list with
   * skip over the Belfry shards it holds (its statement pinned to them), asked for its share k of
   * the page. A group is known up to its last row when it was bounded or gave k rows, else
   * entirely; the page is the rows not skipped up to the smallest such row, then that row itself
   * when the page is not full (so the caller continues after it, past the skipped rows), as on
   * plain PostgreSQL.
   */
  private async listDueGroupsSkip(
    params: S.EventListDueParams,
    skip: NonNullable<S.EventListDueParams['skip']>,
    shards: number[],
  ): Promise<S.DueRef[]> {
    const groups = await this.placement.group(shards);
    const k = perShardLimit(params.limit, groups.length);
    const pages = await inParallel(groups, async (g) => {
      const perShard = perShardLimit(k, g.shards.length);
      const values = [
        params.untilMs,
        params.after?.dueAt ?? Number.MIN_SAFE_INTEGER,
        params.after?.tenantId ?? '',
        params.after?.id ?? '',
        k,
        perShard,
        skip.map((m) => m.tenantId),
        skip.map((m) => m.queue),
        skip.map((m) => m.from.dueAt),
        skip.map((m) => m.from.id),
        perShard * SKIP_SCAN_FACTOR,
        g.shards,
      ];
      type Row = DueRefRow & { bounded: boolean };
      const rows = await this.onWorker(
        g.home,
        (workers, home) => workers.dueSkip<Row>(home, values),
        async () => (await runCitus<Row>(this.pool, 'eventListDueGroupSkip', values)).rows,
      );
      const known = rows.length > 0 && (rows[0].bounded || rows.length >= k);
      return { refs: rows.map(dueRefFromRow), known };
    });
    const skipped = (r: S.DueRef) =>
      skip.some(
        (m) =>
          m.tenantId === r.tenantId &&
          m.queue === r.queue &&
          (r.dueAt > m.from.dueAt || (r.dueAt === m.from.dueAt && r.id >= m.from.id)),
      );
    let bound: S.DueRef | null = null;
    for (const { refs, known } of pages) {
      const last = refs[refs.length - 1];
      if (known && (bound === null || byDue(last, bound) < 0)) bound = last;
    }
    const b = bound;
    const page = pages
      .flatMap((p) => p.refs)
      .filter((r) => !skipped(r) && (b === null || byDue(r, b) <= 0))
      .sort(byDue)
      .slice(0, params.limit);
    if (b !== null && page.length < params.limit && !page.some((r) => byDue(r, b) === 0)) page.push(b);
    return page;
  }

  /**
   * A due list without skip: for each Citus shard, the plain due list over the Belfry shards it
   * holds (due-list.ts, its statement pinned to them: one router query a round), asked for its share
   * k of the page; merged here as that list merges shards. A group that gave k rows may hold more
   * after its last one, so the page is the rows up to the smallest such last row; a round short of
   * the page goes on after it, and the last round asks each group for all that is missing, which
   * is exact.
   */
  private async listDueGroups(params: S.EventListDueParams, shards: number[]): Promise<S.DueRef[]> {
    const groups = await this.placement.group(shards);
    const out: S.DueRef[] = [];
    let after = params.after;
    for (let round = 0; round < DUE_ROUNDS_MAX; round++) {
      const wanted = params.limit - out.length;
      const k = round === DUE_ROUNDS_MAX - 1 ? wanted : perShardLimit(wanted, groups.length);
      const pages = await inParallel(groups, (g) =>
        listDue(this.pool, { ...params, after, limit: k, shards: g.shards }, (db, bind) =>
          this.onWorker(
            g.home,
            (workers, home) => workers.due(home, bind),
            () => dueInGroup(db, bind),
          ),
        ),
      );
      let bound: S.DueRef | null = null;
      for (const page of pages) {
        const last = page[page.length - 1];
        if (page.length === k && (bound === null || byDue(last, bound) < 0)) bound = last;
      }
      const b = bound;
      const rows = pages
        .flat()
        .filter((r) => b === null || byDue(r, b) <= 0)
        .sort(byDue)
        .slice(0, wanted);
      out.push(...rows);
      if (b === null || rows.length === 0 || out.length >= params.limit) return out;
      const last = out[out.length - 1];
      after = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
    }
    return out;
  }

  /**
   * One queue's rows (params.queue): for each Citus shard, plain PostgreSQL's queue read over the
   * Belfry shards it holds (of those asked for, or, when none are named, of those holding a row of
   * the queue: one read over every shard), its page in due order; the pages of one worker in one
   * round trip there (CitusWorkers.queueMany), else each Belfry shard through the coordinator;
   * merged by (dueAt, id). A Citus shard's page holds every row of its shards up to its last one,
   * so the merged first `limit` rows are exact.
   */
  private async listDueQueue(
    params: S.EventListDueParams,
    queue: NonNullable<S.EventListDueParams['queue']>,
  ): Promise<S.DueRef[]> {
    const shards =
      params.shards !== null
        ? [...new Set(params.shards)]
        : (
            await runCitus<{ shard: number }>(this.pool, 'queueShards', [queue.tenantId, queue.queue, params.untilMs])
          ).rows.map((r) => r.shard);
    if (shards.length === 0) return [];
    const values = [
      queue.tenantId,
      queue.queue,
      params.untilMs,
      queue.from?.dueAt ?? Number.MIN_SAFE_INTEGER,
      queue.from?.id ?? '',
      params.limit,
      null,
    ];
    const viaCoordinator = (group: { shards: number[] }) =>
      inParallel(
        group.shards,
        async (shard) => (await runCitus<DueRefRow>(this.pool, 'eventListDueQueue', [...values, shard])).rows,
      );
    const groups = await this.placement.group(shards);
    const { onWorkers, apart: elsewhere } = byWorker(
      groups,
      (home) => this.workers?.usable(home) === true,
      () => true,
      1,
    );
    const pages = await Promise.all([
      ...onWorkers.map(async (onOne) =>
        (
          await this.onWorkerOrElse(
            onOne,
            (parts) =>
              this.workers!.queueMany<DueRefRow>(parts.map((g) => ({ home: g.home, values: [...values, g.shards] }))),
            async (g) => (await viaCoordinator(g)).flat(),
          )
        ).flat(),
      ),
      ...elsewhere.map(async (g) => (await viaCoordinator(g)).flat()),
    ]);
    return pages
      .flat(2)
      .map(dueRefFromRow)
      .sort((a, b) => (a.dueAt !== b.dueAt ? a.dueAt - b.dueAt : a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, params.limit);
  }
}
