/**
 * eventListDue on PostgreSQL: a k-way merge of per-shard index range scans.
 *
 * The due index is per shard (shard, due_at, tenant_id, id), so a node reads exactly its own
 * shards. The exact first `limit` rows over S shards would need up to `limit` rows from EACH
 * shard (S x limit index entries: 256,000 for 128 shards and pages of 2,000, on every page of a
 * backlog sweep). Instead each round reads only k ≈ 2·limit/S + 8 rows per shard and keeps the
 * rows up to the smallest "last row" of the shards that filled their k (those are certainly the
 * first ones overall; see DUE_MERGE in queries.ts). With shards hashed evenly one round almost
 * always fills the page; otherwise the next round continues after the last row kept. The last
 * allowed round uses k = what is still missing, which is exact, so a page is short only when
 * nothing else is due — the caller's "short page means done" stays true.
 *
 *   Measured on 100k events, 128 of 256 shards, everything due, pages of 2,000:
 *   k = 2,000 read 28,468 index entries in 70 ms; k = 40 reads ≈ 5,100 (see docs/postgres.md).
 */
import { SHARD_COUNT_DEFAULT } from '../../core/shard.ts';
import type { DueRef, EventListDueParams } from '../store.ts';
import { run, type Queryable } from './db.ts';
import { dueRefFromRow, type DueRefRow } from '../core/rows.ts';
import type pg from 'pg';

/** Rounds of small per-shard reads before the exact last round. */
export const DUE_ROUNDS_MAX = 4;
/** With skip, a shard's scan examines at most this many times its share of the page's rows. */
export const SKIP_SCAN_FACTOR = 8;
/** Extra rows per shard beyond the even share, against the variance of an even hash. */
const PER_SHARD_SLACK = 8;

/** Rows per shard for a round that wants `wanted` rows from `shardCount` shards. */
export function perShardLimit(wanted: number, shardCount: number): number {
  return Math.min(wanted, Math.ceil((2 * wanted) / Math.max(1, shardCount)) + PER_SHARD_SLACK);
}

/** Runs eventListDueShards' statement (bind values as it takes them): the plain one, or Citus' pinned to one Citus shard. */
export type DueShardsStatement = (
  db: Queryable,
  bind: unknown[],
) => Promise<pg.QueryResult<DueRefRow & { bounded: boolean }>>;

const PLAIN_DUE_SHARDS: DueShardsStatement = (db, bind) => run(db, 'eventListDueShards', bind);

export async function listDue(
  db: Queryable,
  params: EventListDueParams,
  dueShards: DueShardsStatement = PLAIN_DUE_SHARDS,
): Promise<DueRef[]> {
  const shards = params.shards === null ? null : [...new Set(params.shards)];
  if (params.queue) {
    const { tenantId, queue, from } = params.queue;
    const bind = [
      tenantId,
      queue,
      params.untilMs,
      from?.dueAt ?? Number.MIN_SAFE_INTEGER,
      from?.id ?? '',
      params.limit,
      shards,
    ];
    return (await run<DueRefRow>(db, 'eventListDueQueue', bind)).rows.map(dueRefFromRow);
  }
  const shardCount = shards?.length ?? SHARD_COUNT_DEFAULT;
  if (params.skip?.length) {
    // One query: each shard's scan examines at most SKIP_SCAN_FACTOR times its share of rows and
    // sends only the page's rows and where it stopped (dueSkip in queries.ts).
    const k = perShardLimit(params.limit, shardCount);
    const m = params.skip;
    const bind = [
      params.untilMs,
      params.after?.dueAt ?? Number.MIN_SAFE_INTEGER,
      params.after?.tenantId ?? '',
      params.after?.id ?? '',
      params.limit,
      k,
      m.map((x) => x.tenantId),
      m.map((x) => x.queue),
      m.map((x) => x.from.dueAt),
      m.map((x) => x.from.id),
      k * SKIP_SCAN_FACTOR,
    ];
    const res =
      shards === null
        ? await run<DueRefRow>(db, 'eventListDueAllSkip', bind)
        : await run<DueRefRow>(db, 'eventListDueShardsSkip', [...bind, shards]);
    return res.rows.map(dueRefFromRow);
  }
  const out: DueRef[] = [];
  let after = params.after ?? { dueAt: Number.MIN_SAFE_INTEGER, tenantId: '', id: '' };
  for (let round = 0; round < DUE_ROUNDS_MAX; round++) {
    const wanted = params.limit - out.length;
    const k = round === DUE_ROUNDS_MAX - 1 ? wanted : perShardLimit(wanted, shardCount);
    const bind = [params.untilMs, after.dueAt, after.tenantId, after.id, wanted, k];
    const res =
      shards === null
        ? await run<DueRefRow & { bounded: boolean }>(db, 'eventListDueAll', bind)
        : await dueShards(db, [...bind, shards]);
    for (const row of res.rows) out.push(dueRefFromRow(row));
    const last = out[out.length - 1];
    if (res.rows.length === 0 || !res.rows[0].bounded || out.length >= params.limit) return out;
    after = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
  }
  return out;
}
