import pg from 'pg';
setTimeout(() => {
  console.log('TIMEOUT: script still waiting after 20 s');
  process.exit(2);
}, 20000).unref();
import { SQL } from '../../src/store/postgres/queries.ts';
const url = process.argv[2];
const port = Number(url.match(/:(\d+)\//)![1]);
const at = (p: number) => url.replace(/:(\d+)\//, `:${p}/`);
const c = new pg.Client({ connectionString: url, options: '-c search_path=scr3' });
await c.connect();
const probe = async (label: string) => {
  const out: string[] = [];
  for (const p of [port, port + 1, port + 2]) {
    const x = new pg.Client({ connectionString: at(p) });
    await x.connect();
    const r = await x.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`);
    out.push(`${p === port ? 'coordinator' : 'worker ' + p}=${r.rows[0].n}`);
    await x.end();
  }
  console.log(label, out.join(' '));
};
const [g] = (
  await c.query(`SELECT tenant_id, id, shard FROM events WHERE grp IS NOT NULL AND state = 'scheduled' LIMIT 1`)
).rows;
await c.query('BEGIN');
await c.query('SELECT pg_advisory_xact_lock(42)');
await c.query(`SELECT id FROM events WHERE shard = $1 AND tenant_id = $2 AND id = $3 FOR UPDATE SKIP LOCKED`, [
  g.shard,
  g.tenant_id,
  g.id,
]);
await probe('plain pg_advisory_xact_lock(42) then a router query:');
await c.query('ROLLBACK');
await c.query('BEGIN');
await c.query(SQL.eventGroupLock, [[g.tenant_id], [g.id]]);
await probe('eventGroupLock as-is (multi-shard join, lock fn on top):');
await c.query('ROLLBACK');
await c.query('BEGIN');
await c.query(
  SQL.eventGroupLock.replace('JOIN events e ON e.tenant_id', 'JOIN events e ON e.shard = $3::int AND e.tenant_id'),
  [[g.tenant_id], [g.id], g.shard],
);
await probe('eventGroupLock pinned to shard (router):');
await c.query('ROLLBACK');
// two coordinator sessions: does the second wait for the first's group lock?
const d = new pg.Client({ connectionString: url, options: '-c search_path=scr3 -c statement_timeout=1000' });
await d.connect();
const pinned = SQL.eventGroupLock.replace(
  'JOIN events e ON e.tenant_id',
  'JOIN events e ON e.shard = $3::int AND e.tenant_id',
);
await c.query('BEGIN');
await c.query(pinned, [[g.tenant_id], [g.id], g.shard]);
await d.query('BEGIN');
const t0 = Date.now();
const r2 = await d.query(pinned, [[g.tenant_id], [g.id], g.shard]).then(
  () => 'got it',
  (e) => `error: ${e.message}`,
);
console.log(`second session, pinned group lock while the first holds it: ${r2} after ${Date.now() - t0} ms`);
await d.query('ROLLBACK');
await d.query('BEGIN');
const r3 = await d.query(SQL.eventGroupLock, [[g.tenant_id], [g.id]]).then(
  () => 'got it',
  (e) => `error: ${e.message}`,
);
console.log(
  `second session, as-is group lock (taken on the coordinator) while the first holds the pinned one (on a worker): ${r3}`,
);
await d.query('ROLLBACK');
await c.query('ROLLBACK');
await c.end();
await d.end();
