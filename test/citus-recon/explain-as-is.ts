// EXPLAIN (and execute, rolled back) Belfry's hot statements on a Citus schema; prints one summary line per case.
import pg from 'pg';
import { SQL } from '../../src/store/postgres/queries.ts';

const url = process.argv[2];
const schema = process.argv[3];
const filter = process.argv[4] ? new RegExp(process.argv[4]) : null;
const verbose = process.env.V === '1';
const db = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
await db.connect();
interface Ev {
  tenant_id: string;
  id: string;
  shard: number;
  version: number;
  grp?: string;
  lease_owner?: string;
  receipt?: string;
  attempts?: number;
  next_at?: number;
}
const one = async (q: string, v: unknown[] = []) => (await db.query(q, v)).rows as Ev[];

function sub(s: string, from: string | RegExp, to: string): string {
  const r = s.replace(from, to);
  if (r === s) throw new Error(`variant: no match for ${from}`);
  return r;
}

// realistic values from the data
const now = 1700000000000 + 30000 * 100;
const [ev] = await one(
  `SELECT tenant_id, id, shard, version FROM events WHERE state='scheduled' AND grp IS NULL AND NOT pull ORDER BY seq LIMIT 1`,
);
const [evg] = await one(
  `SELECT tenant_id, id, shard, version, grp FROM events WHERE state='scheduled' AND grp IS NOT NULL AND NOT pull ORDER BY seq LIMIT 1`,
);
const exe = await one(
  `SELECT tenant_id, id, shard, version, lease_owner FROM events WHERE state='executing' AND NOT pull ORDER BY seq LIMIT 3`,
);
const pexe = await one(
  `SELECT tenant_id, id, shard, version, receipt, attempts FROM events WHERE state='executing' AND pull ORDER BY seq LIMIT 3`,
);
const done = await one(`SELECT tenant_id, id, shard, version FROM events WHERE state='succeeded' ORDER BY seq LIMIT 1`);
const sched = await one(
  `SELECT tenant_id, id, shard, version FROM events WHERE state='scheduled' AND grp IS NULL AND NOT pull ORDER BY seq LIMIT 40`,
);
const citusShard = async (s: number) =>
  Number((await one(`SELECT get_shard_id_for_distribution_column('${schema}.events', $1::int) AS id`, [s]))[0].id);
// Belfry shards that fall in the same Citus shard as ev.shard, and ones that do not
const sameC: number[] = [ev.shard];
const diffC: number[] = [ev.shard];
const c0 = await citusShard(ev.shard);
for (let s = 0; s < 256 && (sameC.length < 3 || diffC.length < 3); s++) {
  if (s === ev.shard) continue;
  const c = await citusShard(s);
  if (c === c0 && sameC.length < 3) sameC.push(s);
  if (c !== c0 && diffC.length < 3 && !(await Promise.all(diffC.map(citusShard))).includes(c)) diffC.push(s);
}
const sameRefs = sched.filter((r) => r.shard === ev.shard);
const [sch] = await one(`SELECT tenant_id, id, shard, version, next_at FROM schedules ORDER BY id LIMIT 1`);
console.log(`# ev=${JSON.stringify(ev)} sameCitusShard=${sameC} differentCitusShards=${diffC}`);

type Case = { name: string; sql: string; params: unknown[]; tx?: string[] };
const cases: Case[] = [];
const add = (name: string, sql: string, params: unknown[], tx?: string[]) => cases.push({ name, sql, params, tx });

// --- events by key
add('eventGet', SQL.eventGet, [ev.tenant_id, ev.id]);
add('eventGet+shard', SQL.eventGet + ' AND shard = $3', [ev.tenant_id, ev.id, ev.shard]);
add('eventGetMany(3)', SQL.eventGetMany, [exe.map((r) => r.tenant_id), exe.map((r) => r.id)]);
const getManyShard = sub(
  sub(
    SQL.eventGetMany,
    'unnest($1::text[], $2::text[]) AS k(tenant_id, id)',
    'unnest($1::text[], $2::text[], $3::int[]) AS k(tenant_id, id, shard)',
  ),
  'WHERE events.tenant_id',
  'WHERE events.shard = k.shard AND events.tenant_id',
);
add('eventGetMany+k.shard', getManyShard, [exe.map((r) => r.tenant_id), exe.map((r) => r.id), exe.map((r) => r.shard)]);
add(
  'eventGetMany+shard=$3(one)',
  sub(SQL.eventGetMany, 'WHERE events.tenant_id', 'WHERE events.shard = $3 AND events.tenant_id'),
  [[ev.tenant_id], [ev.id], ev.shard],
);
add(
  'eventGetMany+shard=ANY($3)',
  sub(SQL.eventGetMany, 'WHERE events.tenant_id', 'WHERE events.shard = ANY($3::int[]) AND events.tenant_id'),
  [exe.map((r) => r.tenant_id), exe.map((r) => r.id), exe.map((r) => r.shard)],
);

// --- claims (the claim pool runs eventClaim alone; grouped batches run eventGroupLock first in a tx)
const claimP = (refs: Ev[], fence = true) => [
  refs.map((r) => r.tenant_id),
  refs.map((r) => r.id),
  refs.map((r) => r.version),
  'node-a',
  now + 15000,
  now,
  '{}',
  fence,
];
add('eventClaim(1 ref)', SQL.eventClaim, claimP([ev]));
add('eventClaim(40 refs)', SQL.eventClaim, claimP(sched));
add('eventClaim(1 grouped ref)', SQL.eventClaim, claimP([evg]));
const claimShardArr = sub(
  sub(
    sub(
      SQL.eventClaim,
      'unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS r(tenant_id, id, version, ord)',
      'unnest($1::text[], $2::text[], $3::int[], $9::int[]) WITH ORDINALITY AS r(tenant_id, id, version, shard, ord)',
    ),
    'SELECT DISTINCT ON (tenant_id, id, version) tenant_id, id, version, ord',
    'SELECT DISTINCT ON (tenant_id, id, version) tenant_id, id, version, shard, ord',
  ),
  'WHERE e.tenant_id = r.tenant_id',
  'WHERE e.shard = r.shard AND e.tenant_id = r.tenant_id',
);
add('eventClaim+r.shard(40)', claimShardArr, [...claimP(sched), sched.map((r) => r.shard)]);
const claimOneShard = sub(
  SQL.eventClaim,
  'WHERE e.tenant_id = r.tenant_id',
  'WHERE e.shard = $9 AND e.tenant_id = r.tenant_id',
);
add('eventClaim+shard=$9(refs of 1 shard)', claimOneShard, [...claimP(sameRefs.length ? sameRefs : [ev]), ev.shard]);
const claimOneShardAll = sub(claimOneShard, 'WHERE e.ctid = c.row_id', 'WHERE e.shard = $9 AND e.ctid = c.row_id');
add('eventClaim+shard=$9 also in UPDATE', claimOneShardAll, [...claimP(sameRefs.length ? sameRefs : [ev]), ev.shard]);
const claimOneShardGH = claimOneShardAll.replaceAll(
  'WHERE o.tenant_id = e.tenant_id',
  'WHERE o.shard = e.shard AND o.tenant_id = e.tenant_id',
);
add('eventClaim+shard=$9 everywhere(+group probes)', claimOneShardGH, [
  ...claimP(sameRefs.length ? sameRefs : [ev]),
  ev.shard,
]);
add(
  'eventClaim+shard=ANY($9) in UPDATE (2 Citus shards)',
  sub(
    sub(
      SQL.eventClaim,
      'WHERE e.tenant_id = r.tenant_id',
      'WHERE e.shard = ANY($9::int[]) AND e.tenant_id = r.tenant_id',
    ),
    'WHERE e.ctid = c.row_id',
    'WHERE e.shard = ANY($9::int[]) AND e.ctid = c.row_id',
  ),
  [...claimP(sched.slice(0, 2)), sched.slice(0, 2).map((r) => r.shard)],
);
add('eventGroupLock', SQL.eventGroupLock, [[evg.tenant_id], [evg.id]]);
add(
  'eventGroupLock+shard=$3',
  sub(
    SQL.eventGroupLock,
    'JOIN events e ON e.tenant_id = r.tenant_id',
    'JOIN events e ON e.shard = $3 AND e.tenant_id = r.tenant_id',
  ),
  [[evg.tenant_id], [evg.id], evg.shard],
);
add('eventGroupFirst', SQL.eventGroupFirst, [evg.tenant_id, evg.grp]);
add(
  'eventGroupFirst+shard=$3',
  SQL.eventGroupFirst.replaceAll('WHERE tenant_id = $1', 'WHERE shard = $3 AND tenant_id = $1'),
  [evg.tenant_id, evg.grp, evg.shard],
);

// --- outcomes
const recP = (rows: Ev[]) => [
  rows.map((r) => r.tenant_id),
  rows.map((r) => r.id),
  rows.map((r) => r.version),
  rows.map((r) => r.lease_owner),
  rows.map(() => 'succeeded'),
  rows.map(() => null),
  rows.map(() => 200),
  rows.map(() => null),
  rows.map(() => 5),
  now,
];
add('eventRecordAttempts(3)', SQL.eventRecordAttempts, recP(exe));
add(
  'eventRecordAttempts+shard=$11(1)',
  sub(
    sub(
      SQL.eventRecordAttempts,
      'WHERE e.tenant_id = o.tenant_id',
      'WHERE e.shard = $11 AND e.tenant_id = o.tenant_id',
    ),
    'WHERE e.ctid = t.row_id',
    'WHERE e.shard = $11 AND e.ctid = t.row_id',
  ),
  [...recP(exe.slice(0, 1)), exe[0].shard],
);

// --- due lists
const dueP = (shards: number[]) => [now, 0, '', '', 1000, 250, shards];
add('eventListDueShards([1])', SQL.eventListDueShards, dueP([ev.shard]));
add('eventListDueShards(3 same Citus shard)', SQL.eventListDueShards, dueP(sameC));
add('eventListDueShards(3 Citus shards)', SQL.eventListDueShards, dueP(diffC));
add('eventListDueShards(128)', SQL.eventListDueShards, dueP(Array.from({ length: 128 }, (_, i) => 2 * i)));
const dueShardsAny = sub(
  SQL.eventListDueShards,
  'WHERE e.shard = s.shard AND',
  'WHERE e.shard = s.shard AND e.shard = ANY($7::int[]) AND',
);
add('eventListDueShards+e.shard=ANY($7) ([1])', dueShardsAny, dueP([ev.shard]));
add('eventListDueShards+e.shard=ANY($7) (3 same C)', dueShardsAny, dueP(sameC));
add('eventListDueAll', SQL.eventListDueAll, [now, 0, '', '', 1000, 250]);
add('eventListDueQueue(all shards)', SQL.eventListDueQueue, [ev.tenant_id, 'name:hook', now, 0, '', 1000, null]);

// --- rescue
add('eventRescue', SQL.eventRescue, [now, null, 100, now, null]);
add('eventRescueDead', SQL.eventRescueDead, [['node-a'], 10000, 100, now]);

// --- single-event writes
add('eventCancel', SQL.eventCancel, [now, ev.tenant_id, ev.id, ev.version, 'scheduled', null, null]);
add('eventCancel+shard=$8', SQL.eventCancel.replace('WHERE tenant_id = $2', 'WHERE shard = $8 AND tenant_id = $2'), [
  now,
  ev.tenant_id,
  ev.id,
  ev.version,
  'scheduled',
  null,
  null,
  ev.shard,
]);
const editP = [
  now,
  now,
  'p',
  '{}',
  '{"name":"hook"}',
  null,
  'h',
  now,
  ev.tenant_id,
  ev.id,
  ev.version,
  '{}',
  'name:hook',
  null,
];
add('eventEdit', SQL.eventEdit, editP);
add('eventEdit+shard=$15', SQL.eventEdit.replace('WHERE tenant_id = $9', 'WHERE shard = $15 AND tenant_id = $9'), [
  ...editP,
  ev.shard,
]);
add('eventReplay', SQL.eventReplay, [now, done[0].tenant_id, done[0].id, done[0].version, 'succeeded', '{}']);
add('eventReplay+shard=$7', SQL.eventReplay.replace('WHERE tenant_id = $2', 'WHERE shard = $7 AND tenant_id = $2'), [
  now,
  done[0].tenant_id,
  done[0].id,
  done[0].version,
  'succeeded',
  '{}',
  done[0].shard,
]);

// --- inserts
const insP = (n: number, shardOf: (i: number) => number) => {
  const ids = Array.from({ length: n }, (_, i) => `new${i}`);
  return [
    ids.map(() => 't1'),
    ids,
    ids.map((_, i) => shardOf(i)),
    ids.map(() => now + 1000),
    ids.map(() => '{"name":"hook"}'),
    ids.map(() => '{}'),
    ids.map(() => '{}'),
    ids.map(() => null),
    ids.map(() => null),
    ids.map(() => null),
    ids.map(() => '{}'),
    ids.map(() => 'h'),
    now,
    ids.map(() => 'name:hook'),
    ids.map(() => null),
  ];
};
add(
  'eventInsertMany(1)',
  SQL.eventInsertMany,
  insP(1, () => ev.shard),
);
const insNew = SQL.eventInsertMany.replace('ON CONFLICT (tenant_id, id)', 'ON CONFLICT (shard, tenant_id, id)');
add(
  'eventInsertMany ON CONFLICT(shard,tenant_id,id) (1)',
  insNew,
  insP(1, () => ev.shard),
);
add(
  'eventInsertMany ON CONFLICT(shard,..) (100, 1 shard)',
  insNew,
  insP(100, () => ev.shard),
);
add(
  'eventInsertMany ON CONFLICT(shard,..) (100, many shards)',
  insNew,
  insP(100, (i) => (i * 7) % 256),
);

// --- pull
const pullP = [ev.tenant_id, 'name:inbox', now, 100, 10, now + 30000, 'rcpt-new', '{}'];
add('pullClaimAny', SQL.pullClaimAny, pullP);
add('pullClaimTyped', SQL.pullClaimTyped, [...pullP, ['a', 'b']]);
add('pullGroupLockAny', SQL.pullGroupLockAny, pullP.slice(0, 4));
const p0 = pexe[0];
add('pullSettle', SQL.pullSettle, [p0.tenant_id, p0.id, p0.receipt, p0.attempts, 'succeeded', null, null, now, '{}']);
add('pullSettle+shard=$10', SQL.pullSettle.replace('WHERE tenant_id = $1', 'WHERE shard = $10 AND tenant_id = $1'), [
  p0.tenant_id,
  p0.id,
  p0.receipt,
  p0.attempts,
  'succeeded',
  null,
  null,
  now,
  '{}',
  p0.shard,
]);
const smP = (rows: Ev[]) => [
  rows.map((r) => r.tenant_id),
  rows.map((r) => r.id),
  rows.map((r) => r.receipt),
  rows.map((r) => r.attempts),
  rows.map(() => 'succeeded'),
  rows.map(() => null),
  rows.map(() => null),
  rows.map(() => now),
  rows.map(() => '{}'),
];
add('pullSettleMany(3)', SQL.pullSettleMany, smP(pexe));
add(
  'pullSettleMany+shard=$10(1)',
  sub(
    sub(SQL.pullSettleMany, 'WHERE e.tenant_id = s.tenant_id', 'WHERE e.shard = $10 AND e.tenant_id = s.tenant_id'),
    'WHERE e.ctid = t.row_id',
    'WHERE e.shard = $10 AND e.ctid = t.row_id',
  ),
  [...smP(pexe.slice(0, 1)), p0.shard],
);
add('pullExtend', SQL.pullExtend, [p0.tenant_id, p0.id, p0.receipt, now + 60000, now]);
add('pullExtend+shard=$6', SQL.pullExtend.replace('WHERE tenant_id = $1', 'WHERE shard = $6 AND tenant_id = $1'), [
  p0.tenant_id,
  p0.id,
  p0.receipt,
  now + 60000,
  now,
  p0.shard,
]);
add('pullExpired', SQL.pullExpired, [now, 100]);
add('pullNextDue', SQL.pullNextDue, [ev.tenant_id, 'name:inbox']);

// --- misc hot
add('eventDeleteTerminal', SQL.eventDeleteTerminal, [ev.tenant_id, 'succeeded', now, 100]);
add('transitionList', SQL.transitionList, [ev.tenant_id, ev.id, 0, 100]);
add('eventListByTenant', SQL.eventListByTenant, [ev.tenant_id, 1e12, null, null, null, null, null, 1000, 100, null]);
add('shardLag', SQL.shardLag, [now, 10]);
add('leaderElect', SQL.leaderElect, ['node-a', 10000]);
add('nodeHeartbeat', SQL.nodeHeartbeat, ['node-a', '{}']);
add('claimLeaseRenew', SQL.claimLeaseRenew, ['node-a', now]);

// --- schedules (schedule-store.ts, copied)
const scheduleAdvance = `UPDATE schedules SET next_at = $5, fired_count = fired_count + $6,
    missed_count = missed_count + $7, last_occurrence_at = coalesce($8, last_occurrence_at), updated_at = $9,
    last_missed = coalesce($10::text, last_missed)
    WHERE tenant_id = $1 AND id = $2 AND version = $3 AND next_at = $4 AND NOT paused RETURNING 1 AS ok`;
const advP = [sch.tenant_id, sch.id, 1, sch.next_at, (sch.next_at ?? 0) + 1000, 1, 0, now, now, null];
add('scheduleAdvance', scheduleAdvance, advP);
add(
  'scheduleAdvance+shard=$11',
  scheduleAdvance.replace('WHERE tenant_id = $1', 'WHERE shard = $11 AND tenant_id = $1'),
  [...advP, sch.shard],
);
const scheduleListDue = `SELECT tenant_id, id FROM schedules
    WHERE NOT paused AND next_at IS NOT NULL AND next_at <= $1 AND next_at >= $4 AND ($3::int[] IS NULL OR shard = ANY ($3::int[]))
    ORDER BY next_at LIMIT $2`;
add('scheduleListDue(shards [1])', scheduleListDue, [now, 100, [sch.shard], 0]);
add('scheduleGetForUpdate', `SELECT * FROM schedules WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, [
  sch.tenant_id,
  sch.id,
]);
add(
  'scheduleCountsAdd',
  `UPDATE schedules s SET fired_count = s.fired_count + d.fired, missed_count = s.missed_count + d.missed,
      last_missed = coalesce(d.last_missed, s.last_missed)
    FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[]) AS d(tenant_id, id, fired, missed, last_missed)
    WHERE s.tenant_id = d.tenant_id AND s.id = d.id`,
  [[sch.tenant_id], [sch.id], [1], [0], [null]],
);
// a whole advance transaction: CAS on the schedule, insert its occurrence
add(
  'TX scheduleAdvance+shard then eventInsertMany(ON CONFLICT shard..)',
  insNew,
  insP(1, () => sch.shard),
  [scheduleAdvance.replace('WHERE tenant_id = $1', `WHERE shard = ${sch.shard} AND tenant_id = $1`)],
);

function summarize(plan: string): string {
  const scans = [...plan.matchAll(/Custom Scan \(Citus ([^)]*)\)/g)].map((m) => m[1]);
  const tasks = [...plan.matchAll(/Task Count: (\d+)/g)].map((m) => m[1]);
  const subplans = (plan.match(/Distributed Subplan/g) ?? []).length;
  const method = [...plan.matchAll(/INSERT\/SELECT method: ([^\n]+)/g)].map((m) => m[1]);
  const other: string[] = [];
  if (/Seq Scan on (?!pg_)\w+/.test(plan) && scans.length === 0) other.push('no Citus node: plain PostgreSQL plan');
  return `scans=[${scans.join(', ')}] tasks=[${tasks.join(',')}] subplans=${subplans}${method.length ? ` insert-select=[${method.join('; ')}]` : ''}${other.length ? ' ' + other.join(' ') : ''}`;
}

for (const c of cases) {
  if (filter && !filter.test(c.name)) continue;
  let line = `${c.name} | `;
  try {
    await db.query('BEGIN');
    for (const s of c.tx ?? []) await db.query(s, s.includes('$1') ? advP : []);
    const plan = (await db.query('EXPLAIN ' + c.sql, c.params)).rows.map((r) => r['QUERY PLAN']).join('\n');
    line += `EXPLAIN ok: ${summarize(plan)}`;
    if (verbose) console.log(plan);
  } catch (err) {
    line += `EXPLAIN ERROR: ${(err as Error).message}${(err as { detail?: string }).detail ? ' DETAIL: ' + (err as { detail?: string }).detail : ''}`;
  }
  await db.query('ROLLBACK');
  try {
    await db.query('BEGIN');
    for (const s of c.tx ?? []) await db.query(s, s.includes('$1') ? advP : []);
    const res = await db.query(c.sql, c.params);
    line += ` | RUN ok rows=${res.rowCount}`;
  } catch (err) {
    line += ` | RUN ERROR: ${(err as Error).message}${(err as { detail?: string }).detail ? ' DETAIL: ' + (err as { detail?: string }).detail : ''}`;
  }
  await db.query('ROLLBACK');
  console.log(line);
}
await db.end();
