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
/** Pins every events/transitions reference of `sql` to Belfry shard parameter $p (one Citus shard). */
function pin(sql: string, p: number): string {
  const P = `$${p}::int`;
  const s = sql
    .replaceAll('WHERE e.tenant_id', () => `WHERE e.shard = ${P} AND e.tenant_id`)
    .replaceAll('WHERE o.tenant_id', () => `WHERE o.shard = ${P} AND o.tenant_id`)
    .replace(/WHERE e\.ctid = (\w+)\.row_id/g, (_m, a) => `WHERE e.shard = ${P} AND e.ctid = ${a}.row_id`)
    .replace(/WHERE tenant_id = \$(\d+)/g, (_m, n) => `WHERE shard = ${P} AND tenant_id = $${n}`)
    .replace(
      /INSERT INTO transitions \(([^)]*)\)\s*SELECT /g,
      (_m, cols) => `INSERT INTO transitions (shard, ${cols}) SELECT ${P}, `,
    )
    .replaceAll('WHERE events.tenant_id', () => `WHERE events.shard = ${P} AND events.tenant_id`);
  if (s === sql) throw new Error('pin: nothing pinned');
  return s;
}
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
const refs1 = sameRefs.length ? sameRefs : [ev];
add('PIN eventGet', pin(SQL.eventGet, 3), [ev.tenant_id, ev.id, ev.shard]);
add('eventGet shard=ANY(3 Belfry shards, 1 Citus shard)', SQL.eventGet + ' AND shard = ANY($3::int[])', [
  ev.tenant_id,
  ev.id,
  sameC,
]);
add('eventGet shard=ANY(3 Belfry shards, 3 Citus shards)', SQL.eventGet + ' AND shard = ANY($3::int[])', [
  ev.tenant_id,
  ev.id,
  diffC,
]);
add('eventGet shard IN (lit,lit same Citus shard)', SQL.eventGet + ` AND shard IN (${sameC.join(',')})`, [
  ev.tenant_id,
  ev.id,
]);
add('PIN eventGetMany', pin(SQL.eventGetMany, 3), [[ev.tenant_id], [ev.id], ev.shard]);
add('PIN eventGetMany no LIMIT', pin(SQL.eventGetMany, 3).replace(' LIMIT 1) e', ') e'), [
  exe.map((r) => r.tenant_id),
  exe.map((r) => r.id),
  exe[0].shard,
]);
add('PIN eventClaim (refs of 1 shard)', pin(SQL.eventClaim, 9), [...claimP(refs1), ev.shard]);
add('PIN eventClaim grouped', pin(SQL.eventClaim, 9), [...claimP([evg]), evg.shard]);
add('PIN eventClaim no fence', pin(SQL.eventClaim, 9), [...claimP(refs1, false), ev.shard]);
add(
  'PIN eventGroupLock',
  SQL.eventGroupLock.replace('JOIN events e ON e.tenant_id', 'JOIN events e ON e.shard = $3::int AND e.tenant_id'),
  [[evg.tenant_id], [evg.id], evg.shard],
);
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
add('PIN eventRecordAttempts(1)', pin(SQL.eventRecordAttempts, 11), [...recP(exe.slice(0, 1)), exe[0].shard]);
const dueP = (shards: number[]) => [now, 0, '', '', 1000, 250, shards];
const dueOne = pin(
  SQL.eventListDueShards
    .replace(
      'FROM unnest($7::int[]) AS s(shard) CROSS JOIN LATERAL',
      'FROM (SELECT $7::int AS shard) AS s CROSS JOIN LATERAL',
    )
    .replace('WHERE e.shard = s.shard', 'WHERE e.shard = $7::int'),
  7,
);
add('PIN eventListDueShards (one shard $7 scalar)', dueOne, [...dueP([]).slice(0, 6), ev.shard]);
const dueOneNoLateral = pin(
  `SELECT e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue FROM events e
    WHERE e.tenant_id IS NOT NULL AND e.state IN ('scheduled', 'awaiting_retry') AND NOT e.pull AND e.due_at <= $1
      AND (e.due_at, e.tenant_id, e.id) > ($2, $3, $4)
    ORDER BY e.due_at, e.tenant_id, e.id LIMIT $6`,
  7,
).replace('LIMIT $6', 'LIMIT $6 OFFSET 0*$5::int');
add('PIN due scan of one shard, no lateral, no group head', dueOneNoLateral, [...dueP([]).slice(0, 6), ev.shard]);
add(
  'due scan shard=ANY($7) 3 Citus shards (no lateral)',
  dueOneNoLateral.replace('e.shard = $7::int', 'e.shard = ANY($7::int[])'),
  [...dueP([]).slice(0, 6), diffC],
);
add(
  'PIN eventRescue (one shard)',
  pin(SQL.eventRescue.replace('WHERE e.state =', 'WHERE e.shard = $6::int AND e.state ='), 6),
  [now, null, 100, now, null, exe[0].shard],
);
add('PIN eventCancel', pin(SQL.eventCancel, 8), [
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
add('PIN eventEdit', pin(SQL.eventEdit, 15), [...editP, ev.shard]);
add('PIN eventReplay', pin(SQL.eventReplay, 7), [
  now,
  done[0].tenant_id,
  done[0].id,
  done[0].version,
  'succeeded',
  '{}',
  done[0].shard,
]);
const insP = (n: number) => {
  const ids = Array.from({ length: n }, (_, i) => `new${i}`);
  return [
    ids.map(() => 't1'),
    ids,
    ids.map(() => ev.shard),
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
    ev.shard,
  ];
};
const insPinned = SQL.eventInsertMany
  .replace('ON CONFLICT (tenant_id, id)', 'ON CONFLICT (shard, tenant_id, id)')
  .replace('SELECT seq, tenant_id, id, shard,', 'SELECT seq, tenant_id, id, $16::int,');
add('PIN eventInsertMany (100, shard $16 scalar)', insPinned, insP(100));
add(
  'eventInsertMany VALUES-free: INSERT..SELECT unnest, ON CONFLICT(shard..) no CTE',
  `INSERT INTO events (tenant_id, id, shard, state, version, fire_at, due_at, destination, payload, headers, tags, request_hash, created_at, updated_at, queue)
  SELECT t, i, $3::int, 'scheduled', 1, 0, 0, '{}', '{}', '{}', '{}', 'h', 0, 0, 'q' FROM unnest($1::text[], $2::text[]) AS x(t, i)
  ON CONFLICT (shard, tenant_id, id) DO NOTHING RETURNING tenant_id, id, seq`,
  [['t1', 't1'], ['nx1', 'nx2'], ev.shard],
);
const pullP = [ev.tenant_id, 'name:inbox', now, 100, 10, now + 30000, 'rcpt-new', '{}'];
add(
  'PIN pullClaimAny (one shard)',
  pin(
    SQL.pullClaimAny.replace(
      'WHERE tenant_id = $1 AND queue = $2',
      'WHERE shard = $9::int AND tenant_id = $1 AND queue = $2',
    ),
    9,
  ),
  [...pullP, ev.shard],
);
const p0 = pexe[0];
add('PIN pullSettle', pin(SQL.pullSettle, 10), [
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
add('PIN pullSettleMany(1)', pin(SQL.pullSettleMany, 10), [...smP(pexe.slice(0, 1)), p0.shard]);
add('PIN pullExtend', pin(SQL.pullExtend, 6), [p0.tenant_id, p0.id, p0.receipt, now + 60000, now, p0.shard]);
add('PIN eventDeleteTerminal', pin(SQL.eventDeleteTerminal, 5), [ev.tenant_id, 'succeeded', now, 100, ev.shard]);
const noTrace = (sql: string) => {
  const r = sql.replace(/, traced AS \(\s*INSERT INTO transitions[\s\S]*?\n {4}\)\n/, '\n');
  if (r === sql) throw new Error('noTrace: no match');
  return r;
};
add(
  'PIN eventClaim minus transitions CTE',
  noTrace(pin(SQL.eventClaim, 9)).replace(
    'SELECT * FROM claimed ORDER BY ord',
    'SELECT * FROM claimed WHERE $7::text IS NOT NULL ORDER BY ord',
  ),
  [...claimP(refs1), ev.shard],
);
add(
  'PIN eventClaim grouped minus transitions CTE',
  noTrace(pin(SQL.eventClaim, 9)).replace(
    'SELECT * FROM claimed ORDER BY ord',
    'SELECT * FROM claimed WHERE $7::text IS NOT NULL ORDER BY ord',
  ),
  [...claimP([evg]), evg.shard],
);
add('PIN eventRecordAttempts minus transitions CTE', noTrace(pin(SQL.eventRecordAttempts, 11)), [
  ...recP(exe.slice(0, 1)),
  exe[0].shard,
]);
add(
  'PIN pullClaimAny minus transitions CTE',
  noTrace(
    pin(
      SQL.pullClaimAny.replace(
        'WHERE tenant_id = $1 AND queue = $2',
        'WHERE shard = $9::int AND tenant_id = $1 AND queue = $2',
      ),
      9,
    ),
  ).replace(
    'SELECT * FROM claimed ORDER BY due_at, id',
    'SELECT * FROM claimed WHERE $8::text IS NOT NULL ORDER BY due_at, id',
  ),
  [...pullP, ev.shard],
);
add('PIN pullSettleMany minus transitions CTE', noTrace(pin(SQL.pullSettleMany, 10)), [
  ...smP(pexe.slice(0, 1)),
  p0.shard,
]);
add(
  'PIN eventRescue minus transitions CTE',
  noTrace(pin(SQL.eventRescue.replace('WHERE e.state =', 'WHERE e.shard = $6::int AND e.state ='), 6)),
  [now, null, 100, now, null, exe[0].shard],
);
add(
  'PIN eventCancel minus transitions CTE',
  noTrace(pin(SQL.eventCancel, 8)).replace(
    'SELECT * FROM changed',
    'SELECT * FROM changed WHERE $5::text IS NOT NULL OR $6::text IS NULL',
  ),
  [now, ev.tenant_id, ev.id, ev.version, 'scheduled', null, null, ev.shard],
);
add('PIN eventDeleteTerminal', pin(SQL.eventDeleteTerminal, 5), [ev.tenant_id, 'succeeded', now, 100, ev.shard]);
add(
  'FOR UPDATE SKIP LOCKED simple router',
  `SELECT id FROM events WHERE shard = $1 AND state = 'scheduled' ORDER BY due_at LIMIT 5 FOR UPDATE SKIP LOCKED`,
  [ev.shard],
);
add(
  'UPDATE ... WHERE ctid IN (router subselect)',
  `UPDATE events SET version = version + 1 WHERE shard = $1 AND ctid IN (SELECT ctid FROM events WHERE shard = $1 AND id = $2)`,
  [ev.shard, ev.id],
);
add('leaderElect', SQL.leaderElect, ['node-a', 10000]);
add('leaderElect literal $2', SQL.leaderElect.replaceAll('$2::bigint', '10000::bigint'), ['node-a']);
add('leaderCheckForShare', SQL.leaderCheckForShare, ['node-a', 1]);
const scheduleGetForUpdate = `SELECT * FROM schedules WHERE tenant_id = $1 AND id = $2 FOR UPDATE`;
add('PIN scheduleGetForUpdate', scheduleGetForUpdate.replace('WHERE tenant_id', 'WHERE shard = $3 AND tenant_id'), [
  sch.tenant_id,
  sch.id,
  sch.shard,
]);
add('scheduleTenantLock (reference FOR NO KEY UPDATE)', `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, [
  't1',
]);
add(
  'scheduleCountWritesPrune (reference, SKIP LOCKED)',
  `DELETE FROM schedule_count_writes WHERE write_id IN
    (SELECT write_id FROM schedule_count_writes WHERE written_at < $1 ORDER BY written_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  [now, 10],
);
add('destinationUpsert (reference, xmax)', SQL.destinationUpsert, ['t1', 'd9', '{}', '[]', 0, 0]);

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
    for (const s of c.tx ?? []) await db.query(s, []);
    const plan = (await db.query('EXPLAIN ' + c.sql, c.params)).rows.map((r) => r['QUERY PLAN']).join('\n');
    line += `EXPLAIN ok: ${summarize(plan)}`;
    if (verbose) console.log(plan);
  } catch (err) {
    line += `EXPLAIN ERROR: ${(err as Error).message}${(err as { detail?: string }).detail ? ' DETAIL: ' + (err as { detail?: string }).detail : ''}`;
  }
  await db.query('ROLLBACK');
  try {
    await db.query('BEGIN');
    for (const s of c.tx ?? []) await db.query(s, []);
    const res = await db.query(c.sql, c.params);
    line += ` | RUN ok rows=${res.rowCount}`;
  } catch (err) {
    line += ` | RUN ERROR: ${(err as Error).message}${(err as { detail?: string }).detail ? ' DETAIL: ' + (err as { detail?: string }).detail : ''}`;
  }
  await db.query('ROLLBACK');
  console.log(line);
}
await db.end();
