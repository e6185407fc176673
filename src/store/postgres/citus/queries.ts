/**
 * The statements of the PostgreSQL store on Citus (distribute.ts), made from those of queries.ts so
 * that each has one source. Citus runs a statement on one shard (a router query: all of
 * PostgreSQL's semantics, SKIP LOCKED and ctid included) only when every reference to a
 * distributed table in it compares `shard` with one constant or parameter, CTEs included; and a
 * data-modifying CTE that inserts into another table (the `traced` transitions of a state change)
 * makes any statement a multi-step one, or refuses it. So each state change here is:
 *
 *   pinned(...)    every events / transitions reference also says `shard = $n` (one Belfry shard),
 *                  or `shard = ANY($n)` (the Belfry shards of one Citus shard: placement.ts),
 *   untraced(...)  without its `traced` CTE: the transitions follow in a second statement of the
 *                  same transaction (transitionsInsert), on the same shard, so the transaction
 *                  commits on one worker.
 *
 * Both rewrite the statement text and throw at load when they find nothing to rewrite, so a
 * change to a statement of queries.ts that breaks the rewrite fails every test, not a Citus run.
 */
import { SQL_STATE_LISTS } from '../../core/state-lists.ts';
import { EVENT_COLUMNS, SQL, TRANSITION_COLUMNS } from '../queries.ts';

/**
 * `sql` with every events / transitions reference of queries.ts' spellings also compared with shard
 * `$n` (an int), or with `many`, with the shards of `$n` (an int[] whose shards one Citus shard holds).
 */
export function pinned(sql: string, n: number, many = false): string {
  const p = many ? `ANY($${n}::int[])` : `$${n}::int`;
  const out = sql
    .replaceAll('WHERE e.tenant_id', `WHERE e.shard = ${p} AND e.tenant_id`)
    .replaceAll('WHERE o.tenant_id', `WHERE o.shard = ${p} AND o.tenant_id`)
    .replace(/WHERE e\.ctid = (\w+)\.row_id/g, (_m, a) => `WHERE e.shard = ${p} AND e.ctid = ${a}.row_id`)
    .replace(/WHERE tenant_id = \$(\d+)/g, (_m, k) => `WHERE shard = ${p} AND tenant_id = $${k}`)
    .replaceAll('WHERE events.tenant_id', `WHERE events.shard = ${p} AND events.tenant_id`)
    .replaceAll('JOIN events e ON e.tenant_id', `JOIN events e ON e.shard = ${p} AND e.tenant_id`)
    .replaceAll('WHERE e.shard = s.shard', `WHERE e.shard = s.shard AND e.shard = ${p}`);
  if (out === sql) throw new Error(`citus: nothing to pin in: ${sql.slice(0, 80)}`);
  return out;
}

/**
 * `sql` without its `traced AS (INSERT INTO transitions ...)` CTE. The parameters only it used
 * keep their places (the caller's values stay as for the plain statement) in a CTE nothing reads,
 * which gives each its type (text, or the type it was cast to).
 */
export function untraced(sql: string): string {
  const traced = /\), traced AS \(\n\s*INSERT INTO transitions[\s\S]*?\n {4}\)\n/.exec(sql);
  if (!traced) throw new Error(`citus: no traced CTE in: ${sql.slice(0, 80)}`);
  const rest = sql.slice(0, traced.index) + sql.slice(traced.index + traced[0].length);
  const orphans = new Map<string, string>();
  for (const m of traced[0].matchAll(/\$(\d+)(?:::(\w+))?/g))
    if (!new RegExp(`\\$${m[1]}(?!\\d)`).test(rest)) orphans.set(m[1], m[2] ?? orphans.get(m[1]) ?? 'text');
  const keep = [...orphans].map(([n, type]) => `$${n}::${type} AS p${n}`).join(', ');
  return `${sql.slice(0, traced.index)})${keep ? `, unused AS (SELECT ${keep})` : ''}\n${sql.slice(traced.index + traced[0].length)}`;
}

/** The columns of a transition row as transitionsInsert writes them, in order. */
export const TRANSITION_INSERT_COLUMNS = `shard, ${TRANSITION_COLUMNS}`.split(',').map((c) => c.trim());

export const CITUS_SQL = {
  // ($1 tenantId, $2 id, $3 shard) → EventRow | no row.
  eventGet: pinned(SQL.eventGet, 3),
  // ($1 shards int[] (of one Citus shard), $2 tenantIds, $3 ids) → EventRow[]: the events of those
  // shards whose tenant is one of $2 and id one of $3 (a superset of the pairs asked; the caller
  // keeps the pairs).
  eventGetMany: `SELECT ${EVENT_COLUMNS} FROM events WHERE shard = ANY($1::int[]) AND tenant_id = ANY($2::text[]) AND id = ANY($3::text[])`,
  // As SQL.eventInsertMany, plus $16 pulls boolean[] (whether each event's destination is a pull
  // one: read by the caller, since a per-row look into a reference table from an INSERT ... SELECT
  // that Citus runs through the coordinator costs a round trip per row); its conflict target is the
  // primary key here (shard, tenant_id, id).
  eventInsertMany: (() => {
    const out = SQL.eventInsertMany
      .replace('ON CONFLICT (tenant_id, id) DO NOTHING', 'ON CONFLICT DO NOTHING')
      .replace('$14::text[], $15::text[])', '$14::text[], $15::text[], $16::boolean[])')
      .replace('request_hash, queue, type, ord)', 'request_hash, queue, type, pull, ord)')
      .replace(/EXISTS \(SELECT 1 FROM destinations d[\s\S]*?= 'pull'\)/, 'input.pull');
    if (
      !out.includes('ON CONFLICT DO NOTHING') ||
      !out.includes('$16::boolean[]') ||
      !out.includes('type, pull, ord)') ||
      out.includes('FROM destinations')
    )
      throw new Error('citus: eventInsertMany not rewritten');
    return out;
  })(),
  // ($1 tenantIds, $2 names) → { tenant_id, name }[]: which of these destinations are pull ones.
  pullDestinations: `SELECT tenant_id, name FROM destinations
    WHERE tenant_id = ANY($1::text[]) AND name = ANY($2::text[]) AND config ->> 'kind' = 'pull'`,
  // ($1 shards int[] (the locator's: shardOf(tenant, id)), $2 tenantIds, $3 ids, $4 eventShards)
  // → { tenant_id, id }[] of the pairs not located before (the first of repeats wins).
  locatorInsert: `INSERT INTO event_locator (shard, tenant_id, id, event_shard)
    SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::int[])
    ON CONFLICT DO NOTHING RETURNING tenant_id, id`,
  // ($1 shard, $2 tenantId, $3 id) → { event_shard } | no row.
  locatorGet: `SELECT event_shard FROM event_locator WHERE shard = $1::int AND tenant_id = $2 AND id = $3`,
  // ($1 shards int[], $2 tenantIds, $3 ids) → { tenant_id, id, event_shard }[] (a superset, as eventGetMany).
  locatorGetMany: `SELECT tenant_id, id, event_shard FROM event_locator
    WHERE shard = ANY($1::int[]) AND tenant_id = ANY($2::text[]) AND id = ANY($3::text[])`,
  // As SQL.eventClaim, on the shards $9 (of one Citus shard), without its transitions.
  eventClaim: untraced(pinned(SQL.eventClaim, 9, true)),
  // As SQL.eventGroupLock, on the shards $3 (of one Citus shard): the locks are taken on that
  // shard's worker, as every claim of a group on Citus takes them.
  eventGroupLock: pinned(SQL.eventGroupLock, 3, true),
  // As SQL.eventGroupFirst, on shard $3.
  eventGroupFirst: pinned(SQL.eventGroupFirst, 3),
  // As SQL.eventRecordAttempts, on the shards $11 (of one Citus shard), without its transitions
  // (its rows whole: their transitions follow).
  eventRecordAttempts: (() => {
    const out = untraced(pinned(SQL.eventRecordAttempts, 11, true)).replace(
      'SELECT ord FROM done',
      'SELECT * FROM done',
    );
    if (!out.endsWith('SELECT * FROM done')) throw new Error('citus: eventRecordAttempts answers no rows');
    return out;
  })(),
  // As SQL.eventCancel / eventReplay on shard $8, SQL.eventEdit on shard $15, without their transitions.
  eventCancel: untraced(pinned(SQL.eventCancel, 8)),
  eventReplay: untraced(pinned(SQL.eventReplay, 7)),
  eventEdit: untraced(pinned(SQL.eventEdit, 15)),
  // As SQL.transitionList, on shard $5.
  transitionList: pinned(SQL.transitionList, 5),
  // As SQL.eventListDueShards, over the shards $7 (of one Citus shard): each one's scan, merged.
  eventListDueGroup: pinned(SQL.eventListDueShards, 7, true),
  // As SQL.eventListDueShardsSkip, over the shards $12 (of one Citus shard).
  eventListDueGroupSkip: pinned(SQL.eventListDueShardsSkip, 12, true),
  // As SQL.eventListDueQueue, on shard $8.
  eventListDueQueue: pinned(SQL.eventListDueQueue, 8),
  // ($1 tenantId, $2 queue, $3 untilMs) → { shard }[]: the shards holding a fireable row of that
  // queue due by $3 (a read of every shard's events_queue_due range of the queue).
  queueShards: `SELECT DISTINCT shard FROM events
    WHERE tenant_id = $1 AND queue = $2 AND state IN ${SQL_STATE_LISTS.FIREABLE} AND NOT pull AND due_at <= $3`,
  // Pull delivery. ($1 tenantId, $2 queue, $3 now, $4 examine, $5 types text[] | null) → { shard,
  // due_at, id }[]: the first $4 fireable pull rows of the queue due by $3 (of those types), in due
  // order: a read of every shard's part of the queue, which tells the claim where to go.
  pullCandidates: `SELECT shard, due_at, id FROM events
    WHERE tenant_id = $1 AND queue = $2 AND state IN ${SQL_STATE_LISTS.FIREABLE} AND pull AND due_at <= $3
      AND ($5::text[] IS NULL OR type = ANY($5::text[]))
    ORDER BY due_at, id LIMIT $4`,
  // As SQL.pullClaimAny and pullGroupLockAny, on shard $9 / $5; with types $10 / $6 (null: any): the
  // page one scan filtered by type (a LATERAL per type over unnest() is not a query Citus takes).
  pullClaim: untraced(pinned(typed(SQL.pullClaimAny, 10), 9)),
  pullGroupLock: pinned(typed(SQL.pullGroupLockAny, 6), 5),
  // As SQL.pullSettleMany on shard $10 (a single settle too), pullExtend on shard $6, without their transitions.
  pullSettleMany: untraced(pinned(SQL.pullSettleMany, 10)),
  pullExtend: untraced(pinned(SQL.pullExtend, 6)),
  // As SQL.eventRescue / eventRescueDead, on shard $6 / $5, without their transitions, answering
  // the rows whole (the transitions follow; the caller merges the shards by old lease).
  eventRescue: sweep(SQL.eventRescue, 6, 'FROM events e CROSS JOIN bound b\n      WHERE e.state'),
  eventRescueDead: sweep(
    SQL.eventRescueDead,
    5,
    'SELECT e.ctid AS row_id, e.lease_owner, e.lease_until FROM events e\n      WHERE e.state',
  ),
  // ($1 leaseExpiredBefore, $2 notOwnedBy | null, $3 heldBy | null) → { shard }[]: the shards
  // holding an executing event, not pull, that eventRescue with these values may rescue (a
  // superset: the database clock and the owners' claim leases are the rescue's to check). A read
  // of every shard's events_executing: the deliveries in flight.
  shardsToRescue: `SELECT DISTINCT shard FROM events WHERE state = 'executing' AND NOT pull
    AND (lease_until < $1::bigint OR ($2::text IS NOT NULL AND lease_owner IS DISTINCT FROM $2::text)
      OR ($3::text IS NOT NULL AND lease_owner = $3::text))`,
  // ($1 owners text[]) → { shard }[]: the shards holding an executing event, not pull, of one of
  // these owners (a read of every shard's events_executing, as shardsToRescue).
  shardsOfOwners: `SELECT DISTINCT shard FROM events WHERE state = 'executing' AND NOT pull AND lease_owner = ANY($1::text[])`,
  // ($1 tenantId, $2 state, $3 finishedBefore, $4 limit) → { shard }[]: the shard of each of the
  // $4 oldest candidates of eventDeleteTerminal (a read of every shard's events_terminal range).
  deleteTerminalShards: `SELECT shard FROM events
    WHERE tenant_id = $1 AND state = $2::text AND state IN ${SQL_STATE_LISTS.TERMINAL} AND updated_at < $3::bigint
    ORDER BY updated_at LIMIT $4`,
  // As SQL.eventDeleteTerminal, on shard $5, also answering the ids deleted (for their locator rows).
  eventDeleteTerminal: (() => {
    const out = pinned(SQL.eventDeleteTerminal, 5)
      .replace('WHERE t.tenant_id = $1', 'WHERE t.shard = $5::int AND t.tenant_id = $1')
      .replace(
        '(SELECT count(*) FROM trace)::int AS transitions',
        '(SELECT count(*) FROM trace)::int AS transitions, ARRAY(SELECT id FROM gone) AS ids',
      );
    if (!out.includes('t.shard = $5') || !out.includes('AS ids'))
      throw new Error('citus: eventDeleteTerminal not rewritten');
    return out;
  })(),
  // ($1 shards int[] (the locator's), $2 tenantId, $3 ids) → nothing: the locator rows of deleted events.
  locatorDelete: `DELETE FROM event_locator WHERE shard = ANY($1::int[]) AND tenant_id = $2 AND id = ANY($3::text[])`,
} as const;

/** A pull page (`WHERE tenant_id = $1 AND queue = $2` of PULL_PAGE_ANY) also filtered by the types in $n, when not null. */
function typed(sql: string, n: number): string {
  const at = 'WHERE tenant_id = $1 AND queue = $2 AND';
  if (!sql.includes(at)) throw new Error(`citus: no pull page in: ${sql.slice(0, 80)}`);
  return sql.replace(at, `${at} ($${n}::text[] IS NULL OR type = ANY($${n}::text[])) AND`);
}

/** A sweep statement (rescue) on one shard $n: pinned where `at` starts its scan, untraced, its rescued rows whole. */
function sweep(sql: string, n: number, at: string): string {
  if (!sql.includes(at)) throw new Error(`citus: no scan to pin in: ${sql.slice(0, 80)}`);
  const out = untraced(
    sql
      .replace(at, at.replace('WHERE e.state', `WHERE e.shard = $${n}::int AND e.state`))
      .replace(/WHERE e\.ctid = (\w+)\.row_id/, (_m, a) => `WHERE e.shard = $${n}::int AND e.ctid = ${a}.row_id`),
  ).replace(
    /SELECT tenant_id, id, version, due_at, shard, grp, queue FROM rescued ORDER BY/,
    'SELECT * FROM rescued ORDER BY',
  );
  if (!out.includes('SELECT * FROM rescued')) throw new Error('citus: a rescue answers no whole rows');
  return out;
}

export type CitusQueryName = keyof typeof CITUS_SQL;
